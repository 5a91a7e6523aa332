"""`hub init`: write a first, commented servers.yaml (hub.install.starter), offering what `hub import` finds."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from hub.cli.output import EXIT_FAILED, fail


def add_init_command(commands: Any, common: argparse.ArgumentParser) -> None:
    init = commands.add_parser(
        "init",
        parents=[common],
        help="write a first, commented servers.yaml, naming the servers your hosts have (hub import)",
        description="Writes servers.yaml (as --config names it, else ./servers.yaml) with one server and comments on "
        "how to add more, and lists the hosts' servers that `hub import CLIENT` would bring in. Refuses to "
        "replace an existing file.",
    )
    init.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="CLIENT",
        help="then import CLIENT's servers (its user file) as `hub import CLIENT` does; repeatable",
    )
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
