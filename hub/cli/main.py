"""`hub`'s entry point (the `hub` console script and `python -m hub`).

A command's module is imported only when it runs: those that start no hub load neither the hub, the relay nor the
configuration's schema; the others run a hub in this process (hub.cli.start).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Callable, Sequence

from hub.cli.add import split_command
from hub.cli.parser import build_parser

# stdout was closed by its reader (`hub list --json | head`): the status a process killed by SIGPIPE has, so that a
# pipeline under `set -o pipefail` sees what it sees of any other command cut short; nothing is printed.
EXIT_BROKEN_PIPE = 141
# The commands that start no hub in this process: the hub.cli module and the function that runs each.
_NO_HUB = {
    "connect": ("connect", "run_connect"),
    "reload": ("reload", "run_reload"),
    "install": ("install", "run_install_command"),
    "import": ("install", "run_install_command"),
    "init": ("add", "run_init"),
    "add": ("add", "run_add_command"),
    "remove": ("add", "run_add_command"),
    "logs": ("logs", "run_logs_command"),
    "auth": ("auth", "run_auth_command"),
    "token": ("auth", "run_token_command"),
}


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
    if args.command in _NO_HUB:
        module, function = _NO_HUB[args.command]
        run: Callable[..., int] = getattr(importlib.import_module(f"hub.cli.{module}"), function)
        return run(args)
    from hub.cli.start import run_hub_command

    return run_hub_command(args, started)
