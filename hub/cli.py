"""Command line: `hub serve`, `hub check`, `hub list`, `hub tokens`, `hub call`, `hub pin`, `hub reload`,
`hub token`, `hub logs`, `hub install`, `hub import`, `hub connect`.

`serve` speaks MCP to the host on stdio (or Streamable HTTP with --http). The other commands start the hub in this
process, wait (bounded) for the children, and talk to it as a host would (`hub.host.inprocess`); `pin` reads the
children's own definitions into `servers.lock` (`hub.cli_pin`); `logs` reads a call log (`hub.cli_logs`).

Start-up order: the configuration is loaded and the children are started before anything heavy is imported, so
that they boot on the other cores while the hub loads the rest (a desktop host times the hub's start).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from hub import __version__
from hub.cli_connect import add_connect_parser, run_connect
from hub.cli_install import add_parsers as add_install_parsers
from hub.cli_install import run_install_command
from hub.cli_logs import add_logs_parser, run_logs
from hub.cli_table import print_table

if TYPE_CHECKING:
    from hub.app import Hub
    from hub.config.schema import LoadedConfig
    from hub.host.inprocess import InProcessHost

DEFAULT_CONFIG = "servers.yaml"
EXIT_CONFIG = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hub", description="One MCP entry for your host, many MCP servers behind it.")
    parser.add_argument("--version", action="version", version=f"hub {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-c",
        "--config",
        default=os.environ.get("HUB_CONFIG"),
        help="path of servers.yaml (default: $HUB_CONFIG, else ./servers.yaml if it exists, else servers.yaml in "
        "the user's config directory, e.g. ~/.config/hub on Linux)",
    )
    common.add_argument(
        "--log-format",
        choices=["json", "console"],
        default=None,
        help="json (default for serve) or console (default for the other commands)",
    )
    common.add_argument("--log-level", default=None, help="debug, info, warning, error")
    common.add_argument("--log-file", default=None, help="append logs to this file instead of stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", parents=[common], help="serve MCP to a host (stdio by default)")
    serve.add_argument("--http", metavar="[HOST:]PORT", help="serve Streamable HTTP at /mcp instead of stdio")
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="extra Host/Origin allowed over HTTP (DNS-rebinding protection); repeatable",
    )
    serve.add_argument(
        "--stateless",
        action="store_true",
        help="with --http: answer every request on its own, with no session to keep, so that any replica serves any "
        "request behind plain round robin (what that gives up: docs/deploy.md)",
    )
    serve.add_argument(
        "--replica-id",
        metavar="ID",
        help="this replica's name among several behind one load balancer: it leads every session id, so a balancer "
        "can route by it (default: $HUB_REPLICA_ID, else the host name)",
    )
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve HTTP on a non-loopback address without auth: (anyone who can reach it uses every tool)",
    )

    commands.add_parser("check", parents=[common], help="start every server and report its state")
    listing = commands.add_parser("list", parents=[common], help="print the merged catalog as the host sees it")
    tokens = commands.add_parser(
        "tokens", parents=[common], help="what the tool listing costs the model's context, per tool and server"
    )
    tokens.add_argument("--json", action="store_true", help="machine-readable output")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    call = commands.add_parser("call", parents=[common], help="call one tool and print the result")
    call.add_argument("name", help="exposed tool name, e.g. time_get_current_time")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
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
    pin_action.add_argument(
        "--diff",
        nargs="?",
        const="",
        metavar="CHILD",
        help="show, field by field, how every server (or CHILD) differs from its pins; like `git diff --exit-code`: "
        "exit 0 when nothing differs, 1 when something does, 2 on an error (a server not ready cannot be "
        "compared)",
    )
    pin_action.add_argument(
        "--approve",
        nargs="+",
        action=_AtMostTwo,
        metavar=("CHILD", "TOOL"),
        help="accept CHILD as it is now (tools, prompts, instructions; tools no longer listed lose their pins), or "
        "only its TOOL (its own name or the exposed <prefix>_<name>); writes servers.lock",
    )
    for sub in (serve, listing, tokens, call):
        sub.add_argument(
            "--as",
            dest="identity",
            metavar="NAME",
            help="the identity policies decide on for stdio and this command (default: the local user)",
        )
        sub.add_argument("--group", action="append", default=[], help="a group of that identity; repeatable")
    token = commands.add_parser("token", help="manage the static bearer tokens of auth.tokens")
    actions = token.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", parents=[common], help="add a token; prints it once (its last line)")
    create.add_argument("name", help="the identity the token stands for (the call log and policies name it)")
    create.add_argument("--group", action="append", default=[], help="a group of the identity; repeatable")
    create.add_argument("--expires", type=float, metavar="DAYS", help="days until the token expires (default: never)")
    actions.add_parser("list", parents=[common], help="the tokens: name, groups, created, expires (never secrets)")
    revoke = actions.add_parser("revoke", parents=[common], help="remove a token; a running hub refuses it at once")
    revoke.add_argument("name")
    reload = commands.add_parser("reload", help="make a running hub re-read its servers.yaml")
    target = reload.add_mutually_exclusive_group(required=True)
    target.add_argument("--pid", type=int, help="process id of a hub (sends it SIGHUP)")
    target.add_argument("--url", help="base URL of a hub serving HTTP, e.g. http://127.0.0.1:8000 (POST /reload)")
    add_logs_parser(commands)
    add_connect_parser(commands)
    _add_auth_parser(commands, common)
    add_install_parsers(commands, common)
    for sub in (commands.choices["check"], listing, tokens, call, pin):
        sub.add_argument(
            "--wait",
            type=float,
            default=None,
            metavar="SECONDS",
            help="how long to wait for servers to start (default: the longest connect_timeout)",
        )
    return parser


def _add_auth_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """`hub auth ...`; its module (hub.cli_auth) is imported only when it runs: it brings the OAuth machinery."""
    auth = commands.add_parser("auth", help="sign identities in to OAuth-protected servers (servers with oauth:)")
    actions = auth.add_subparsers(dest="action", required=True)
    login = actions.add_parser("login", parents=[common], help="sign in to a server in a browser; keeps the tokens")
    login.add_argument("server", help="a server of servers.yaml with oauth:")
    login.add_argument("--no-browser", action="store_true", help="print the address to open; do not open a browser")
    login.add_argument(
        "--port",
        type=int,
        default=0,
        help="loopback port for the redirect (default: the one the hub registered at that server before, if "
        "free, else any free one; a client_id registered by hand needs the one its redirect URI names)",
    )
    logout = actions.add_parser("logout", parents=[common], help="forget an identity's sign-in to a server")
    logout.add_argument("server")
    status = actions.add_parser("status", parents=[common], help="who is signed in to which server (never tokens)")
    status.add_argument("--json", action="store_true", help="one JSON document")
    for sub in (login, logout):
        sub.add_argument("--as", dest="identity", metavar="NAME", help="the identity (default: the local user)")
    login.add_argument("--group", action="append", default=[], help="a group of that identity; repeatable")


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


def config_path(given: str | None) -> tuple[str, str | None]:
    """The config file to read; and, when none was named and none is found, the error that says where it was looked for.

    Named (--config, $HUB_CONFIG): that one. Else `./servers.yaml` if it exists, else `servers.yaml` in the user's
    config directory as the system has it (platformdirs: ~/.config/hub on Linux, ~/Library/Application
    Support/hub on macOS, %LOCALAPPDATA%\\hub on Windows).
    """
    if given is not None:
        return given, None
    if os.path.exists(DEFAULT_CONFIG):
        return DEFAULT_CONFIG, None
    import platformdirs

    user = os.path.join(platformdirs.user_config_dir("hub", appauthor=False), DEFAULT_CONFIG)
    if os.path.exists(user):
        return user, None
    here = os.path.join(".", DEFAULT_CONFIG)
    return user, (
        f"no such file: neither {here} nor {user} exists; create one of them, or pass --config PATH "
        "(or set HUB_CONFIG) (see docs/configuration.md)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    started = time.monotonic()  # a host's first listing is timed from here (Hub.startup_wait_left)
    args = _parser().parse_args(argv)
    if args.command == "connect":  # a bridge to a hub at a URL: no servers.yaml, no children
        return run_connect(args)
    if args.command == "reload":
        return _reload(args.pid, args.url)
    if args.command in ("install", "import"):  # edits files: no hub, no children
        return run_install_command(args)
    if args.command == "logs":  # reads a file: no hub, no children
        path, missing = config_path(args.config)
        return run_logs(args, None if missing else path)
    if args.command == "auth":  # sign-ins to OAuth children: no hub, no children
        from hub.cli_auth import run_auth_command

        loaded = _load(args.config)
        return loaded if isinstance(loaded, int) else run_auth_command(args, loaded)
    if args.command == "token":
        from hub.cli_token import run_token_command

        loaded = _load(args.config)
        return loaded if isinstance(loaded, int) else run_token_command(args, loaded)
    import anyio

    try:
        return anyio.run(_run, args, started)
    except KeyboardInterrupt:
        return 130


def _reload(pid: int | None, url: str | None) -> int:
    if pid is not None:
        if not hasattr(signal, "SIGHUP"):
            print("hub: this system has no SIGHUP; use --url with a hub serving HTTP", file=sys.stderr)
            return 1
        try:
            os.kill(pid, signal.SIGHUP)
        except ProcessLookupError:
            print(f"hub: no process {pid}", file=sys.stderr)
            return 1
        sys.stdout.write(f"sent SIGHUP to {pid}; the hub logs config_reloaded or config_rejected\n")
        return 0
    assert url is not None
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url.rstrip("/") + "/reload", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            sys.stdout.write(response.read().decode() + "\n")  # a one-shot command: stdout is the user's
            return 0
    except urllib.error.HTTPError as exc:
        print(f"hub: {exc.code}: {exc.read().decode()}", file=sys.stderr)
    except OSError as exc:
        print(f"hub: cannot reach {url}: {exc}", file=sys.stderr)
    return 1


async def _run(args: argparse.Namespace, started: float) -> int:
    from hub.logs import configure_logging

    serving = args.command == "serve"
    loaded = _load(args.config)  # first: the log file's place and rotation are settings (nothing logs before)
    if isinstance(loaded, int):
        return loaded
    rotate = loaded.config.hub.log_rotate
    call_log = configure_logging(
        args.log_format or ("json" if serving else "console"),
        args.log_level or ("info" if serving else "warning"),
        args.log_file or (str(loaded.log_path) if serving and loaded.log_path else None),
        rotate.max_bytes,
        rotate.backups,
    )
    from hub.access.identity import local_user
    from hub.app import Hub

    if args.command == "pin":  # pinning reads the servers' own definitions: nothing is held back by the old lock
        import dataclasses

        loaded = dataclasses.replace(loaded, lock=None)
    identity = local_user(getattr(args, "identity", None), tuple(getattr(args, "group", ())))
    if not serving:
        return await _one_shot(Hub(loaded, call_log, started, identity), args)
    if args.http is not None:
        refusal = _unprotected(args.http, loaded.config.auth is not None, args.insecure_no_auth)
        if refusal:
            print(f"hub: {refusal}", file=sys.stderr)
            return EXIT_CONFIG
    from hub.app import Observing, replica_id
    from hub.observe.tracing import Tracing  # the OpenTelemetry SDK is imported only if OTEL_* ask for traces

    http = args.http is not None
    hub = Hub(
        loaded,
        call_log,
        started,
        identity,
        replica=replica_id(getattr(args, "replica_id", None)),
        observing=Observing(metrics=http, recent=http, tracing=Tracing.from_environment()),
        stateless=bool(getattr(args, "stateless", False)),
        auth_required=http and loaded.config.auth is not None and not _loopback(args.http),
    )
    from hub.host.serve import serve

    await serve(hub, args.http, args.allow_host)
    return 0


def _load(given: str | None) -> LoadedConfig | int:
    """The configuration, or the exit status after saying on stderr why it cannot be loaded."""
    from hub.config import ConfigError, load_config

    path, missing = config_path(given)
    if missing is not None:
        print(f"hub: {missing}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        return load_config(path)
    except ConfigError as exc:
        print(f"hub: {exc}", file=sys.stderr)
        return EXIT_CONFIG


def _loopback(bind: str) -> bool:
    import ipaddress

    from hub.host.http_server import parse_bind

    host = parse_bind(bind)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _unprotected(bind: str, has_auth: bool, insecure: bool) -> str | None:
    """Why `hub serve --http BIND` must not start: a team hub on a reachable address without authentication."""
    if has_auth or insecure or _loopback(bind):
        return None
    return (
        f"--http {bind} is reachable from other machines, and servers.yaml has no 'auth:': anyone who can reach "
        "it would call every tool with the hub's credentials. Add 'auth:' (docs/team.md), bind to 127.0.0.1, or "
        "pass --insecure-no-auth if another layer authenticates every request"
    )


async def _one_shot(hub: Hub, args: argparse.Namespace) -> int:
    from hub.host.inprocess import InProcessHost

    if args.command == "pin":
        from hub.cli_pin import run_pin

        return await run_pin(hub, args, sys.stdout)
    async with hub.running():
        await hub.wait_settled(args.wait if args.wait is not None else hub.settle_limit())
        hub.end_start_wait()  # --wait said how long to wait: the listing below does not wait again
        if args.command == "check":
            return _print_check(hub, sys.stdout)
        # A person at a terminal is asked to confirm a call held by `confirm:`; a script is not (it gets the error).
        asks = args.command == "call" and sys.stdin.isatty() and sys.stderr.isatty()
        host = InProcessHost(hub, _ask_on_terminal if asks else None)
        await host.start()
        if args.command == "tokens":
            from hub.cli_tokens import run_tokens

            return await run_tokens(hub, host, args.json, sys.stdout)
        if args.command == "list":
            return await _print_list(hub, host, args.json, sys.stdout)
        return await _print_call(host, args.name, args.arguments, sys.stdout)


def _print_check(hub: Hub, out: TextIO) -> int:
    report = hub.health()
    rows = [["SERVER", "STATE", "TOOLS", "RESOURCES", "PROMPTS", "START_MS", "RESTARTS", "ERROR"]]
    for s in report["servers"]:
        rows.append(
            [
                s["name"],
                s["state"],
                str(s["tools"]),
                str(s["resources"]),
                str(s["prompts"]),
                "" if s["start_ms"] is None else f"{s['start_ms']:.0f}",
                str(s["restarts"]),
                s["last_error"] or "",
            ]
        )
    print_table(rows, out)
    for c in report["collisions"]:
        out.write(f"collision: {c['kind']} {c['exposed']!r} kept from '{c['kept']}', dropped from '{c['dropped']}'\n")
    for s in report["servers"]:
        if s["quarantined"]:
            held = ", ".join(s["quarantined"])
            out.write(f"quarantined: {s['name']}: {held} (changed since servers.lock: hub pin --diff {s['name']})\n")
    if len(hub.loaded.files) > 1:  # includes: where each server, and each key another file replaced, came from
        for name, (file, overridden) in hub.loaded.origins.items():
            line = f"from: {name}: {_relative(file, hub.loaded.path)}"
            if overridden:
                keys = ", ".join(f"{key} ({_relative(where, hub.loaded.path)})" for key, where in overridden.items())
                line += f"; overridden: {keys}"
            out.write(line + "\n")
    failed = [s["name"] for s in report["servers"] if s["state"] != "ready"]
    out.write(f"{len(report['servers']) - len(failed)}/{len(report['servers'])} servers ready ({hub.loaded.path})\n")
    return 1 if failed else 0


def _origin(hub: Hub, name: str) -> dict[str, Any]:
    """`source` (the file a server came from) and `overridden` (key -> file), for `hub list --json`."""
    if name not in hub.loaded.origins:
        return {}
    file, overridden = hub.loaded.origins[name]
    return {"source": str(file), "overridden": {key: str(where) for key, where in overridden.items()}}


def _relative(file: Any, config: Any) -> str:
    """A file of the configuration as the user wrote it: relative to servers.yaml's directory when inside it."""
    try:
        return str(file.relative_to(config.parent))
    except ValueError:
        return str(file)


def _tokens(value: Any, count: Callable[[str], int]) -> tuple[int, int]:
    """Size of a listing in bytes (compact UTF-8 JSON) and in tokens (`count`: as `hub tokens` and the status page
    count them, hub.observe.tokens)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return len(text.encode()), count(text)


async def _print_list(hub: Hub, host: InProcessHost, as_json: bool, out: TextIO) -> int:
    from hub.observe.tokens import counter

    count = counter()[0]
    tools = (await host.request("tools/list", {}))["tools"]
    resources = (await host.request("resources/list", {}))["resources"]
    templates = (await host.request("resources/templates/list", {}))["resourceTemplates"]
    prompts = (await host.request("prompts/list", {}))["prompts"]
    namespace = hub.catalog.namespace
    owner = {name: route.child for name, route in namespace.tool_routes.items()}
    per_child: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        per_child.setdefault(owner.get(tool["name"], "hub"), []).append(tool)
    servers: list[dict[str, Any]] = []
    for name, child in [("hub", None), *hub.children.items()]:
        size, tokens = _tokens(per_child.get(name, []), count)
        servers.append(
            {
                "name": name,
                "state": str(child.state) if child else "ready",
                "tools": len(per_child.get(name, [])),
                "bytes": size,
                "approx_tokens": tokens,
                **_origin(hub, name),
            }
        )
    total_bytes, total_tokens = _tokens(tools, count)
    if as_json:
        json.dump(
            {
                "tools": tools,
                "resources": resources,
                "resourceTemplates": templates,
                "prompts": prompts,
                "servers": servers,
                "total": {"tools": len(tools), "bytes": total_bytes, "approx_tokens": total_tokens},
                "collisions": [c.__dict__ for c in namespace.collisions],
            },
            out,
            indent=2,
        )
        out.write("\n")
        return 0
    rows = [["TOOL", "SERVER", "DESCRIPTION"]]
    for tool in tools:
        description = (tool.get("description") or "").strip().splitlines()
        first = description[0] if description else ""
        rows.append([tool["name"], owner.get(tool["name"], "hub"), first[:70] + ("..." if len(first) > 70 else "")])
    print_table(rows, out)
    for kind, items, key in (
        ("resource", resources, "uri"),
        ("template", templates, "uriTemplate"),
        ("prompt", prompts, "name"),
    ):
        for item in items:
            out.write(f"{kind}: {item[key]}\n")
    out.write("\n")
    rows = [["SERVER", "STATE", "TOOLS", "LISTING_BYTES", "~TOKENS"]]
    rows += [[s["name"], s["state"], str(s["tools"]), str(s["bytes"]), str(s["approx_tokens"])] for s in servers]
    rows.append(["total", "", str(len(tools)), str(total_bytes), str(total_tokens)])
    print_table(rows, out)
    for c in namespace.collisions:
        out.write(f"collision: {c.kind} {c.exposed!r} kept from '{c.kept}', dropped from '{c.dropped}'\n")
    return 0


async def _ask_on_terminal(question: str) -> bool:
    """The hub's confirmation question on the terminal (stderr; stdout is the result's): yes only on 'y' or 'yes'."""
    import contextlib
    import threading

    import anyio
    import anyio.from_thread
    import anyio.lowlevel

    answered = anyio.Event()
    answer: list[str] = []
    token = anyio.lowlevel.current_token()

    def ask() -> None:
        # A daemon thread: if the call's deadline passes while the person has not answered, `hub call` exits
        # without waiting for a line that may never come (a worker thread would hold the process until Enter).
        print(f"{question}\nRun it? [y/N] ", end="", file=sys.stderr, flush=True)
        answer.append(sys.stdin.readline())
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits for the answer any more
            anyio.from_thread.run_sync(answered.set, token=token)

    threading.Thread(target=ask, name="hub-confirm", daemon=True).start()
    await answered.wait()
    return answer[0].strip().lower() in ("y", "yes")


async def _print_call(host: InProcessHost, name: str, arguments: str, out: TextIO) -> int:
    from hub.host.inprocess import HostError

    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        print(f"hub: arguments must be a JSON object: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if not isinstance(parsed, dict):
        print('hub: arguments must be a JSON object, e.g. \'{"timezone": "UTC"}\'', file=sys.stderr)
        return EXIT_CONFIG
    try:
        result = await host.request("tools/call", {"name": name, "arguments": parsed})
    except HostError as exc:
        print(f"hub: {exc}", file=sys.stderr)
        return 1
    for block in result.get("content", []):
        if block.get("type") == "text":
            out.write(str(block.get("text", "")).rstrip("\n") + "\n")
        else:
            out.write(json.dumps(block) + "\n")
    if "structuredContent" in result:
        out.write("structuredContent: " + json.dumps(result["structuredContent"]) + "\n")
    return 1 if result.get("isError") else 0
