"""The whole command line of `hub`: every command, its options and their help (argparse), and nothing else.

It imports none of the heavy modules (the hub, the relay, OAuth, pydantic), so that `hub --help`, a usage error and
the commands that start no hub answer without loading them. docs/cli.md shows the same synopsis.
"""

from __future__ import annotations

import argparse
import os
from typing import Any, TypeAlias

from hub import __version__
from hub.cli.add import add_commands
from hub.cli.install import CLIENT_NAMES
from hub.cli.logs import OUTCOMES, since_argument
from hub.connect.token import DEFAULT_ENV, DEFAULT_KEYRING_USER

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
_POLICY_IDENTITY = "the identity policies decide on for stdio and this command"


def build_parser() -> argparse.ArgumentParser:
    """`hub`'s parser; `args.command` names the command, `args.action` the sub-command of `token` and `auth`."""
    parser = argparse.ArgumentParser(prog="hub", description="One MCP entry for your host, many MCP servers behind it.")
    parser.add_argument("--version", action="version", version=f"hub {__version__}")
    _shared(parser, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _shared(common)
    commands = parser.add_subparsers(dest="command", required=True)
    _serve(commands, common)
    _catalog(commands, common)
    _pin(commands, common)
    _token(commands, common)
    _reload(commands)
    _logs(commands)
    _connect(commands)
    _auth(commands, common)
    _install(commands, common)
    add_commands(commands, common)
    return parser


def _shared(parser: argparse.ArgumentParser, suppress: bool = True) -> None:
    """--config and the logs' options, which every command that reads servers.yaml takes, after the command or
    before it (`hub -c servers.yaml list`): after it they have no default of their own (`suppress`), so that they
    replace those before it only when given."""
    help = (
        "path of servers.yaml (default: $HUB_CONFIG, else ./servers.yaml if it exists, else servers.yaml in the user's "
        "config directory, e.g. ~/.config/hub on Linux)"
    )
    _config(parser, help, suppress)
    _log_options(parser, "json (default for serve and connect) or console (default for the other commands)", suppress)


def _config(sub: argparse.ArgumentParser, help: str, suppress: bool = True) -> None:
    default = argparse.SUPPRESS if suppress else os.environ.get("HUB_CONFIG")
    sub.add_argument("-c", "--config", default=default, help=help)


def _log_options(sub: argparse.ArgumentParser, format_help: str, suppress: bool = True) -> None:
    """--log-format, --log-level and --log-file (the command decides their defaults)."""
    default = argparse.SUPPRESS if suppress else None
    sub.add_argument("--log-format", choices=["json", "console"], default=default, help=format_help)
    sub.add_argument("--log-level", default=default, help="debug, info, warning, error")
    sub.add_argument("--log-file", default=default, help="append logs to this file instead of stderr")


def _identity(sub: argparse.ArgumentParser, help: str, group: bool = True) -> None:
    """--as NAME (`help` says what it is for), and --group G if `group`."""
    sub.add_argument("--as", dest="identity", metavar="NAME", help=f"{help} (default: the local user)")
    if group:
        sub.add_argument("--group", action="append", default=[], help="a group of that identity; repeatable")


def _wait(sub: argparse.ArgumentParser) -> None:
    help = "how long to wait for servers to start (default: the longest connect_timeout)"
    sub.add_argument("--wait", type=float, metavar="SECONDS", help=help)


def _serve(commands: Commands, common: argparse.ArgumentParser) -> None:
    serve = commands.add_parser("serve", parents=[common], help="serve MCP to a host (stdio by default)")
    serve.add_argument("--http", metavar="[HOST:]PORT", help="serve Streamable HTTP at /mcp instead of stdio")
    help = "extra Host/Origin allowed over HTTP (DNS-rebinding protection); repeatable"
    serve.add_argument("--allow-host", action="append", default=[], metavar="HOST[:PORT]", help=help)
    help = (
        "with --http: answer every request on its own, with no session to keep, so that any replica serves any "
        "request behind plain round robin (what that gives up: docs/deploy.md)"
    )
    serve.add_argument("--stateless", action="store_true", help=help)
    help = (
        "this replica's name among several behind one load balancer: it leads every session id, so a balancer "
        "can route by it (default: $HUB_REPLICA_ID, else the host name)"
    )
    serve.add_argument("--replica-id", metavar="ID", help=help)
    help = "serve HTTP on a non-loopback address without auth: (anyone who can reach it uses every tool)"
    serve.add_argument("--insecure-no-auth", action="store_true", help=help)
    _identity(serve, _POLICY_IDENTITY)


def _catalog(commands: Commands, common: argparse.ArgumentParser) -> None:
    """check, list, cost, call: a hub started in this process, looked at or called as a host would."""
    check = commands.add_parser("check", parents=[common], help="start every server and report its state")
    _wait(check)
    listing = commands.add_parser("list", parents=[common], help="print the merged catalog as the host sees it")
    cost = commands.add_parser(
        "cost", parents=[common], help="what the tool listing costs the model's context, per tool and server"
    )
    call = commands.add_parser("call", parents=[common], help="call one tool and print the result")
    call.add_argument("name", help="exposed tool name, e.g. time_get_current_time")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    for sub in (check, listing, cost, call):
        sub.add_argument("--json", action="store_true", help="machine-readable output (schema: docs/cli.md)")
    for sub in (listing, cost, call):
        _identity(sub, _POLICY_IDENTITY)
        _wait(sub)


def _pin(commands: Commands, common: argparse.ArgumentParser) -> None:
    pin = commands.add_parser(
        "pin",
        parents=[common],
        usage="hub pin [-c CONFIG] [--wait SECONDS] [--diff [CHILD] | --approve CHILD [TOOL]]",
        help="pin the servers' tools, prompts and instructions in servers.lock; review and approve changes",
        description="Without options: pin every ready server that servers.lock does not have yet (writing the file "
        "next to servers.yaml), and check the others against their pins. Exit status: 0 when every server is "
        "ready and matches its pins; 1 when one is not ready, or differs from its pins (then review with --diff and "
        "accept with --approve); 2 on a usage error or an unreadable lock.",
    )
    pin_action = pin.add_mutually_exclusive_group()
    help = (
        "show, field by field, how every server (or CHILD) differs from its pins; like `git diff --exit-code`: exit 0 "
        "when nothing differs, 1 when something does, 2 on an error (a server not ready cannot be compared)"
    )
    pin_action.add_argument("--diff", nargs="?", const="", metavar="CHILD", help=help)
    help = (
        "accept CHILD as it is now (tools, prompts, instructions; tools no longer listed lose their pins), or only its "
        "TOOL (its own name or the exposed one); writes servers.lock"
    )
    pin_action.add_argument("--approve", nargs="+", action=_AtMostTwo, metavar=("CHILD", "TOOL"), help=help)
    _wait(pin)


class _AtMostTwo(argparse.Action):
    """`--approve CHILD [TOOL]`: one or two values."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if len(values) > 2:
            parser.error(f"{option_string} takes a server and at most one tool: {option_string} CHILD [TOOL]")
        setattr(namespace, self.dest, values)


def _token(commands: Commands, common: argparse.ArgumentParser) -> None:
    token = commands.add_parser("token", help="manage the static bearer tokens of auth.tokens")
    actions = token.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", parents=[common], help="add a token; prints it once (its last line)")
    create.add_argument("name", help="the identity the token stands for (the call log and policies name it)")
    create.add_argument("--group", action="append", default=[], help="a group of the identity; repeatable")
    create.add_argument("--expires", type=float, metavar="DAYS", help="days until the token expires (default: never)")
    actions.add_parser("list", parents=[common], help="the tokens: name, groups, created, expires (never secrets)")
    revoke = actions.add_parser("revoke", parents=[common], help="remove a token; a running hub refuses it at once")
    revoke.add_argument("name")


def _reload(commands: Commands) -> None:
    reload = commands.add_parser("reload", help="make a running hub re-read its servers.yaml")
    target = reload.add_mutually_exclusive_group(required=True)
    target.add_argument("--pid", type=int, help="process id of a hub (sends it SIGHUP)")
    target.add_argument("--url", help="base URL of a hub serving HTTP, e.g. http://127.0.0.1:8000 (POST /reload)")
    _token_source(reload, "an admin's bearer token, sent with --url")


def _token_source(sub: argparse.ArgumentParser, what: str) -> None:
    """--token-env VAR | --keyring SERVICE [--keyring-user USER]: where `what` is (never on the command line)."""
    source = sub.add_mutually_exclusive_group()
    help = f"the environment variable holding {what} (default: {DEFAULT_ENV}; unset there: no token)"
    source.add_argument("--token-env", metavar="VAR", help=help)
    help = "read the token from the OS keyring's entry for SERVICE (needs the 'keyring' package)"
    source.add_argument("--keyring", metavar="SERVICE", help=help)
    help = f"the user name of the keyring entry (default: {DEFAULT_KEYRING_USER})"
    sub.add_argument("--keyring-user", metavar="USER", default=DEFAULT_KEYRING_USER, help=help)


def _logs(commands: Commands) -> None:
    logs = commands.add_parser(
        "logs",
        help="read the call log: the calls as a table (or JSON lines), filtered, and a summary per server and tool",
        description="Reads the call log of `hub serve` (docs/call-log.md) with its rotated files, oldest first; "
        "prints the matching calls and a summary per server and tool: calls, errors (outcomes other than ok), "
        "p50 and p95 duration. Starts no hub.",
    )
    help = "the log file (default: --log-file, else hub.log_file of servers.yaml); FILE.1, FILE.2, ... are read too"
    logs.add_argument("file", nargs="?", metavar="FILE", help=help)
    _config(logs, "servers.yaml whose hub.log_file is read by default (found as for the other commands)")
    help = "the file `hub serve --log-file PATH` writes (same as FILE)"
    logs.add_argument("--log-file", metavar="PATH", default=argparse.SUPPRESS, help=help)
    help = (
        "print calls as they are logged, across rotation, until Ctrl-C (then the summary); starts at the end of the "
        "file, or at --since"
    )
    logs.add_argument("-f", "--follow", action="store_true", help=help)
    logs.add_argument("--child", action="append", default=[], metavar="C", help="calls to this server; repeatable")
    logs.add_argument("--tool", metavar="GLOB", help="calls whose exposed name matches GLOB, e.g. 'git_*'")
    help = "calls with this outcome; repeatable"
    logs.add_argument("--outcome", action="append", default=[], choices=OUTCOMES, metavar="O", help=help)
    logs.add_argument("--slower-than", type=float, metavar="MS", help="calls that took longer than MS milliseconds")
    help = (
        "calls at T or later: an ISO time (UTC unless it has an offset, like the table) or a time ago: 30s, 10m, 2h, "
        "1d, 1w"
    )
    logs.add_argument("--since", type=since_argument, metavar="T", help=help)
    help = "print the matching lines as they are (JSON lines); the summary to stderr"
    logs.add_argument("--json", action="store_true", help=help)


def _connect(commands: Commands) -> None:
    connect = commands.add_parser(
        "connect",
        help="bridge a host that starts local processes (stdio) to a hub served over HTTP",
        description="Speaks MCP on stdin/stdout to the host that started it, and relays every message both ways "
        "to the hub at URL (Streamable HTTP, `hub serve --http`): requests and answers, notifications, the hub's "
        "requests to the host, cancellations. A hub that restarts is connected to again without the host noticing "
        "(it is sent list_changed). Starts no hub and reads no servers.yaml.",
    )
    connect.add_argument("url", metavar="URL", help="the hub's MCP endpoint, e.g. https://hub.example.com/mcp")
    _token_source(connect, "the bearer token")
    _log_options(connect, "format of log lines (default: json; level: info)")


def _auth(commands: Commands, common: argparse.ArgumentParser) -> None:
    auth = commands.add_parser("auth", help="sign identities in to OAuth-protected servers (servers with oauth:)")
    actions = auth.add_subparsers(dest="action", required=True)
    login = actions.add_parser("login", parents=[common], help="sign in to a server in a browser; keeps the tokens")
    login.add_argument("server", help="a server of servers.yaml with oauth:")
    login.add_argument("--no-browser", action="store_true", help="print the address to open; do not open a browser")
    help = (
        "loopback port for the redirect (default: the one the hub registered at that server before, if free, else "
        "any free one; a client_id registered by hand needs the one its redirect URI names)"
    )
    login.add_argument("--port", type=int, default=0, help=help)
    logout = actions.add_parser("logout", parents=[common], help="forget an identity's sign-in to a server")
    logout.add_argument("server")
    status = actions.add_parser("status", parents=[common], help="who is signed in to which server (never tokens)")
    status.add_argument("--json", action="store_true", help="one JSON document")
    _identity(login, "the identity")
    _identity(logout, "the identity", group=False)


def _install(commands: Commands, common: argparse.ArgumentParser) -> None:
    """`hub install` and `hub import`."""
    install = commands.add_parser(
        "install",
        parents=[common],
        usage="hub install CLIENT [-c CONFIG] [--name NAME] [--scope user|project] [--dry-run] "
        "[--uninstall | --restore] | hub install CLIENT --url URL [--token-env VAR | --keyring SERVICE "
        "[--keyring-user USER]] | hub install --status",
        help="add the hub to a host's config (Claude Desktop, Claude Code, Cursor, VS Code, ...)",
        description=f"CLIENT: {', '.join(CLIENT_NAMES)}. The entry runs this hub by its absolute path with "
        "`serve --config <absolute servers.yaml>`. The file is backed up (<file>.bak-<time>) and replaced in one "
        "step; its comments and other entries stay. Running it again changes nothing.",
    )
    install.add_argument("client", nargs="?", metavar="CLIENT", help=", ".join(CLIENT_NAMES))
    _entry(install)
    action = install.add_mutually_exclusive_group()
    action.add_argument("--uninstall", action="store_true", help="remove the entry NAME, and nothing else")
    action.add_argument("--restore", action="store_true", help="put back the latest backup of CLIENT's file")
    help = "where the hub is installed, and whether the entry drifted"
    action.add_argument("--status", action="store_true", help=help)
    install.add_argument(
        "--url",
        help="a team hub's URL (hub serve --http) instead of a local hub: a native HTTP entry where the host takes "
        "one, else (and always with --keyring) a `hub connect URL` entry",
    )
    _token_source(install, "the token, with --url, in the environment the host starts with")
    imports = commands.add_parser(
        "import",
        parents=[common],
        help="add the servers a host already has to servers.yaml (their secrets to servers.env)",
        description="SOURCE: a client's name (as for hub install), or the path of a JSON file with mcpServers, "
        "servers or context_servers, or of a Codex TOML file. Secrets in env, headers, arguments and URLs become "
        "${VAR} in servers.yaml; their values go to the env file beside it (mode 0600, listed in .gitignore).",
    )
    imports.add_argument("source", metavar="CLIENT|PATH")
    imports.add_argument("--into", metavar="PATH", help="the servers.yaml to add to (default: as --config)")
    _entry(imports)
    help = "then replace the imported entries in the host's file with the hub's entry NAME (backup first)"
    imports.add_argument("--consolidate", action="store_true", help=help)


def _entry(parser: argparse.ArgumentParser) -> None:
    """The options of the hub's entry in a host's file, for install and import."""
    parser.add_argument("--name", default="hub", help="the hub's entry name in the host's config (default: hub)")
    parser.add_argument("--scope", choices=["user", "project"], default="user", help="the host's user or project file")
    parser.add_argument("--dry-run", action="store_true", help="print what would change (a diff); write nothing")
