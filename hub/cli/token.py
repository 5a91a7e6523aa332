"""`hub token create | list | revoke`: the token file named by `auth.tokens` in servers.yaml.

`create` prints the new token once, alone on the last line of its output, so that a script can take it with
`tail -n 1`; only its hash is stored.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hub.access.tokens import TokenFile, TokenFileError
from hub.cli.output import EXIT_USAGE, fail, print_table
from hub.cli.start import load


def run_token_command(args: argparse.Namespace) -> int:
    loaded = load(args.config)
    if isinstance(loaded, int):
        return loaded
    if loaded.token_path is None:
        return fail(f"{loaded.path} has no token file; add it first:\n\nauth:\n  tokens: tokens.json\n", EXIT_USAGE)
    try:
        return _act(args, TokenFile(loaded.token_path))
    except TokenFileError as exc:
        return fail(str(exc))


def _act(args: argparse.Namespace, tokens: TokenFile) -> int:
    out = sys.stdout
    if args.action == "create":
        secret = tokens.create(args.name, tuple(args.group), args.expires)
        groups = ", ".join(args.group) or "no groups"
        out.write(f"created token {args.name!r} ({groups}) in {tokens.path}; it is shown once, keep it now:\n")
        out.write(secret + "\n")
        return 0
    if args.action == "revoke":
        tokens.revoke(args.name)
        out.write(f"revoked token {args.name!r}; a running hub refuses it from its next request\n")
        return 0
    entries = tokens.entries()
    now = time.time()
    rows = [["NAME", "GROUPS", "CREATED", "EXPIRES", "STATE"]]
    rows += [
        [
            e.name,
            ",".join(e.groups) or "-",
            _day(e.created),
            "never" if e.expires is None else _day(e.expires),
            "expired" if e.expired(now) else "valid",
        ]
        for e in entries
    ]
    print_table(rows, out)
    out.write(f"{len(entries)} token(s) in {Path(tokens.path)}\n")
    return 0


def _day(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(seconds))
