"""A watchdog process that ends every child process group when the hub dies, however it dies.

A SIGKILLed hub runs no cleanup, and its stdio children (each in its own process group, with descendants of their
own such as `npx` -> `node`) would live on as orphans. The hub starts one reaper per run and tells it, over a pipe,
which process groups exist (`+PGID` / `-PGID` lines). When the pipe reaches end of file, the hub is gone: the reaper
sends SIGTERM to each group still registered, then SIGKILL after a grace period, and exits.

Run as `python -m hub.reaper`; it imports nothing heavy so that it starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

GRACE = 2.0


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_all(groups: set[int], sig: int) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def main() -> int:
    # Terminal signals are the hub's business; only the end of the pipe ends the reaper.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    groups: set[int] = set()
    for line in sys.stdin:
        sign, _, number = line.strip().partition(" ")
        if number.isdigit() and int(number) > 1:
            (groups.add if sign == "+" else groups.discard)(int(number))
    groups = {g for g in groups if _alive(g)}
    if not groups:
        return 0
    _signal_all(groups, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and any(_alive(g) for g in groups):
        time.sleep(0.05)
    _signal_all(groups, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
