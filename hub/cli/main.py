"""`hub`'s entry point (the `hub` console script and `python -m hub`).

A command's module is imported only when it runs: those that start no hub load neither the hub, the relay nor the
configuration's schema; the others run a hub in this process (hub.cli.start).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

from hub.cli.add import run_add_command, run_init, split_command
from hub.cli.install import run_install_command
from hub.cli.logs import run_logs_command
from hub.cli.parser import build_parser

# stdout was closed by its reader (`hub list --json | head`): the status a process killed by SIGPIPE has, so that a
# pipeline under `set -o pipefail` sees what it sees of any other command cut short; nothing is printed.
EXIT_BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    """The exit status of the command `argv` (default: this process's arguments) names; a closed stdout ends any
    command quietly, with EXIT_BROKEN_PIPE."""
    try:
        return _main(argv)
    except BaseException as exc:
        if not _broken_pipe(exc):
            raise
    # Nothing more reaches the reader, not even the interpreter's last flush at exit (which would complain again).
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def _broken_pipe(exc: BaseException) -> bool:
    """Whether `exc` is a BrokenPipeError, or a group of exceptions (a task group's) that are all."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_broken_pipe(inner) for inner in exc.exceptions)
    return isinstance(exc, BrokenPipeError)


def _main(argv: Sequence[str] | None) -> int:
    started = time.monotonic()  # a host's first listing is timed from here (hub.upstream.startup)
    words, command_line = split_command(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(words)
    if command_line is not None:
        args.argv = command_line  # `hub add NAME ... -- COMMAND ARGS...`
    # The commands that start no hub in this process: a module the parser has not imported already is imported
    # only when its command runs.
    if args.command in ("install", "import"):
        return run_install_command(args)
    if args.command in ("add", "remove"):
        return run_add_command(args)
    if args.command == "init":
        return run_init(args)
    if args.command == "logs":
        return run_logs_command(args)
    if args.command == "connect":
        from hub.cli.connect import run_connect

        return run_connect(args)
    if args.command == "reload":
        from hub.cli.reload import run_reload

        return run_reload(args)
    if args.command == "auth":
        from hub.cli.auth import run_auth_command

        return run_auth_command(args)
    if args.command == "token":
        from hub.cli.auth import run_token_command

        return run_token_command(args)
    from hub.cli.start import run_hub_command

    return run_hub_command(args, started)
