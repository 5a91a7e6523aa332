"""`hub add` and `hub remove`: one server into or out of servers.yaml (hub.install.adder), from a command line, a
URL, or the official MCP Registry's server.json (hub.install.registry); `hub init`: a first, commented servers.yaml
(hub.install.starter), offering what `hub import` finds.

Nothing heavy is imported at module level: hub.cli.parser takes `add_commands` from here.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from hub.cli.output import EXIT_FAILED, EXIT_USAGE, fail

DEFAULT_REGISTRY = "https://registry.modelcontextprotocol.io"
REGISTRY_ENV = "HUB_REGISTRY_URL"


def add_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """`hub add`, `hub remove` and `hub init` on the parser's sub-commands."""
    add = commands.add_parser(
        "add",
        parents=[common],
        usage="hub add NAME [--env K=V]... -- COMMAND [ARGS...] | hub add NAME --url URL [--header K=V]... | "
        "hub add [NAME] --registry NAME[@VERSION] | hub add [NAME] --registry-file PATH",
        help="add a server to servers.yaml (a command, a URL, or from the MCP Registry); secrets to servers.env",
        description="Edits servers.yaml in place (comments stay), validated before it is written; a running hub "
        "picks the change up. Secret values (tokens, passwords, Authorization headers) become ${VAR} in "
        "servers.yaml, their values go to servers.env beside it (mode 0600, listed in .gitignore).",
    )
    add.add_argument("name", nargs="?", metavar="NAME", help="the server's name (its tools' prefix)")
    add.add_argument("argv", nargs="*", metavar="COMMAND", help="after --: the command and its arguments")
    add.add_argument("--url", help="a remote server's URL (Streamable HTTP unless --transport sse)")
    add.add_argument("--transport", choices=["sse", "streamable-http"], help="with --url: the transport")
    help = "with --url: an HTTP header; repeatable"
    add.add_argument("--header", action="append", default=[], metavar="K=V", help=help)
    add.add_argument("--env", action="append", default=[], metavar="K=V", help="an environment variable; repeatable")
    add.add_argument("--registry", metavar="NAME[@VERSION]", help="a server of the MCP Registry, by its name")
    help = f"the registry (default: ${REGISTRY_ENV}, else {DEFAULT_REGISTRY})"
    registry = os.environ.get(REGISTRY_ENV, DEFAULT_REGISTRY)
    add.add_argument("--registry-url", default=registry, metavar="URL", help=help)
    add.add_argument("--registry-file", metavar="PATH", help="a server.json on disk instead of the registry")
    help = (
        "with --registry: which of the server's packages or remotes to use (default: the first stdio package "
        "whose runner, npx, uvx or docker, is installed; else the first remote)"
    )
    add.add_argument("--use", choices=["npm", "pypi", "oci", "remote"], help=help)
    add.add_argument("--dry-run", action="store_true", help="print what would be written; write nothing")
    help = "remove a server from servers.yaml (comments stay; its secrets stay in servers.env)"
    remove = commands.add_parser("remove", parents=[common], help=help)
    remove.add_argument("name", metavar="NAME")
    remove.add_argument("--dry-run", action="store_true", help="print what would be written; write nothing")
    _init_command(commands, common)


def split_command(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`hub add NAME [OPTIONS] -- COMMAND ARGS...` split at its `--`: what argparse parses, and the server's command
    line (None when there is no `--` or the command is not `add`). argparse alone would give the command line to
    NAME's neighbour only when no option stands between them."""
    if "--" not in argv or "add" not in argv[: argv.index("--")]:
        return argv, None
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def run_add_command(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """`hub add` or `hub remove`; the exit status."""
    from hub.cli.install import servers_yaml
    from hub.install.clients import Paths
    from hub.install.edit import EditError

    out = out or sys.stdout
    into = servers_yaml(args.config, Paths.current())[0]
    try:
        if args.command == "remove":
            from hub.install.adder import plan_remove

            return _finish(plan_remove(into, args.name), args.dry_run, f"removed {args.name!r} from {into}", out)
        return _add(args, into, out)
    except EditError as exc:
        return fail(str(exc))


def _add(args: argparse.Namespace, into: Path, out: TextIO) -> int:
    from hub.install.adder import plan_add

    placeholders: dict[str, str] = {}
    notes: list[str] = []
    if args.registry or args.registry_file:
        from hub.install.registry import RegistryError, entry_from_registry

        if args.registry and args.registry_file:
            return fail("give --registry or --registry-file, not both", EXIT_USAGE)
        if args.argv or args.url or args.header or args.transport:
            return fail("--registry and --registry-file take no command, --url, --header or --transport", EXIT_USAGE)

        try:
            found = entry_from_registry(args.registry, args.registry_file, args.registry_url, args.use, args.name)
        except RegistryError as exc:
            return fail(str(exc))
        name, child, comment = found.name, found.child, found.comment
        placeholders, notes = found.placeholders, found.notes
        if args.env:
            child.setdefault("env", {}).update(_pairs(args.env, "--env"))
    else:
        if not args.name:
            return fail("name the server: hub add NAME -- COMMAND ... or hub add NAME --url URL", EXIT_USAGE)
        built = _child(args)
        if isinstance(built, str):
            return fail(built, EXIT_USAGE)
        name, child, comment = args.name, built, "added by hub add"
    edit = plan_add(into, name, child, os.environ, comment, placeholders)
    edit.notes[:0] = notes
    return _finish(edit, args.dry_run, f"added {name!r} to {into}", out)


def _child(args: argparse.Namespace) -> dict[str, Any] | str:
    """The child the command line describes, or why it describes none."""
    if not args.url and not args.argv:
        return (
            "say what the server is: hub add NAME -- COMMAND [ARGS...], hub add NAME --url URL, "
            "or hub add --registry NAME"
        )
    if args.url and args.argv:
        return "give either `-- COMMAND [ARGS...]` or `--url URL`, not both"
    if args.url:
        child: dict[str, Any] = {"url": args.url}
        if args.transport:
            child["transport"] = args.transport
        if args.header:
            child["headers"] = _pairs(args.header, "--header")
    else:
        if args.header or args.transport:
            return "--header and --transport go with --url"
        child = {"command": args.argv[0]}
        if args.argv[1:]:
            child["args"] = list(args.argv[1:])
    if args.env:
        child["env"] = _pairs(args.env, "--env")
    return child


def _pairs(values: list[str], option: str) -> dict[str, str]:
    pairs = {}
    for value in values:
        colon, equals = value.find(":"), value.find("=")
        # `--header "Authorization: Bearer x="` as curl takes it, when its `:` comes before any `=`
        separator = ":" if option == "--header" and colon > 0 and (equals < 0 or colon < equals) else "="
        key, found, item = value.partition(separator)
        if not found or not key.strip():
            raise SystemExit(fail(f"{option} takes K=V, not {value!r}", EXIT_USAGE))
        pairs[key.strip()] = item.strip()
    return pairs


def _finish(edit: Any, dry_run: bool, done: str, out: TextIO) -> int:
    from hub.install.adder import write_edit

    if dry_run:
        out.write(edit.servers.after)
        return 0
    if not write_edit(edit):
        return fail("nothing to change", EXIT_FAILED)
    out.write(f"{done}\n")
    env_name = edit.env.path.name if edit.env else "servers.env"
    if edit.secrets:
        out.write(f"secrets to {env_name}: {', '.join(edit.secrets)}\n")
    for var, what in edit.placeholders.items():
        out.write(f"fill in {var} in {env_name}: {what}\n")
    for note in edit.notes:
        if not note.startswith("fill in "):
            out.write(f"note: {note}\n")
    out.write("a running hub picks the change up (it watches servers.yaml)\n")
    return 0


def _init_command(commands: Any, common: argparse.ArgumentParser) -> None:
    init = commands.add_parser(
        "init",
        parents=[common],
        help="write a first, commented servers.yaml, naming the servers your hosts have (hub import)",
        description="Writes servers.yaml (as --config names it, else ./servers.yaml) with one server and comments on "
        "how to add more, and lists the hosts' servers that `hub import CLIENT` would bring in. Refuses to "
        "replace an existing file.",
    )
    help = "then import CLIENT's servers (its user file) as `hub import CLIENT` does; repeatable"
    init.add_argument("--import", dest="imports", action="append", default=[], metavar="CLIENT", help=help)
    init.add_argument("--dry-run", action="store_true", help="print the file; write nothing")


def run_init(args: argparse.Namespace, out: TextIO | None = None) -> int:
    from hub.install.clients import Paths
    from hub.install.edit import EditError, write_atomic
    from hub.install.importer import open_source, plan_import, write_import
    from hub.install.starter import find_imports, init_text

    out = out or sys.stdout
    paths = Paths.current()
    into = Path(os.path.abspath(args.config or "servers.yaml"))
    if into.exists():
        return fail(f"{into} exists: add servers with `hub add` or `hub import`, or remove the file first")
    try:
        found = [f for f in find_imports(paths) if f.client not in args.imports or f.scope != "user"]
        text = init_text(found, into)
        if args.dry_run:
            out.write(text)
            return 0
        write_atomic(into, text)
        out.write(f"wrote {into}\n")
        for client in args.imports:
            imported = plan_import(open_source(client, paths, "user"), into, paths)
            written = write_import(imported)
            added = [i.prefix for i in imported.items if i.state == "added"]
            out.write(f"imported from {client}: {', '.join(added) or 'nothing new'}\n")
            if imported.new_secrets:
                out.write(f"secrets to {imported.env.path.name}: {', '.join(imported.new_secrets)}\n")
            notes = {n for i in imported.items for n in i.converted.notes if n.startswith("fill in ")}
            out.writelines(f"{note}\n" for note in sorted(notes))
            for path in written[:-1]:
                out.write(f"wrote {path}\n")
    except (EditError, ValueError) as exc:
        return fail(str(exc), EXIT_FAILED)
    for item in found:
        out.write(f"{item.client} ({item.file}) has {', '.join(item.names)}: {item.command}\n")
    return 0
