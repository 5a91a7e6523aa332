"""`hub`'s entry point (the `hub` console script and `python -m hub`).

Commands that start no hub (`connect`, `reload`, `install`, `import`, `logs`) run without loading the hub, the
relay or the configuration's schema; `auth` and `token` load servers.yaml and start no hub; the others run a hub in
this process (hub.cli.start).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

from hub.cli.add import split_command
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
    if args.command == "connect":
        from hub.cli.connect import run_connect

        return run_connect(args)
    if args.command == "reload":
        from hub.cli.reload import run_reload

        return run_reload(args)
    if args.command in ("install", "import"):
        from hub.cli.install import run_install_command

        return run_install_command(args)
    if args.command == "init":
        from hub.cli.init import run_init

        return run_init(args)
    if args.command in ("add", "remove"):
        from hub.cli.add import run_add_command

        return run_add_command(args)
    if args.command == "logs":
        from hub.cli.logs import run_logs
        from hub.config.paths import config_path

        path, missing = config_path(args.config)
        return run_logs(args, None if missing else path)
    from hub.cli.start import load, run_hub_command

    if args.command == "auth":
        from hub.cli.auth import run_auth_command

        loaded = load(args.config)
        return loaded if isinstance(loaded, int) else run_auth_command(args, loaded)
    if args.command == "token":
        from hub.cli.token import run_token_command

        loaded = load(args.config)
        return loaded if isinstance(loaded, int) else run_token_command(args, loaded)
    return run_hub_command(args, started)
