"""A watchdog process that ends every child process, and their descendants, when the hub dies however it dies.

A SIGKILLed hub runs no cleanup, and its stdio children (each in its own process group, with descendants of their
own such as `npx` -> `node`) would live on as orphans. The hub starts one reaper per run and tells it, over a pipe,
which process groups exist (`+ PGID` / `- PGID` lines; `?` asks for a scan now). Every second (every 0.1 s just
after a registration) the reaper also notes the descendants of those groups' leaders, so that one that left the
group (`setsid`) is still known. When the pipe reaches end of file, the
hub is gone: the reaper sends SIGTERM to every group and known descendant still alive, then SIGKILL after a grace
period, and exits.

Run as `python -m hub.reaper`; it imports nothing heavy so that it starts in milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

GRACE = 2.0
SCAN_INTERVAL = 1.0
# Children fork their helpers as they start: look closely for a while after each registration.
EARLY_SCAN_INTERVAL = 0.1
EARLY_PERIOD = 30.0


def _processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, start time) of every process, from /proc."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                stat = file.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), int(fields[19]))
    return table


def _descendants(leaders: set[int], table: dict[int, tuple[int, int]]) -> dict[int, int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found: dict[int, int] = {}
    stack = list(leaders)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found[child] = table[child][1]
                stack.append(child)
    return found


def _alive(pid: int, start: int | None = None) -> bool:
    """Alive and, if a start time is given, still the same process (pids are reused)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            stat = file.read()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0] != "Z" and (start is None or int(fields[19]) == start)


def _signal(groups: set[int], known: dict[int, int], sig: int) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    for pid, start in known.items():
        if _alive(pid, start):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def main() -> int:
    # Terminal signals are the hub's business; only the end of the pipe ends the reaper.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    groups: set[int] = set()
    known: dict[int, int] = {}
    stdin = sys.stdin.fileno()
    pending = b""
    next_scan = time.monotonic() + SCAN_INTERVAL
    early_until = 0.0
    while True:
        ready, _, _ = select.select([stdin], [], [], max(0.0, next_scan - time.monotonic()))
        if ready:
            chunk = os.read(stdin, 4096)
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                sign, _, number = line.decode().strip().partition(" ")
                if sign == "?":
                    next_scan = time.monotonic()
                elif number.isdigit() and int(number) > 1:
                    (groups.add if sign == "+" else groups.discard)(int(number))
                    early_until = time.monotonic() + EARLY_PERIOD
        if time.monotonic() >= next_scan:
            early = time.monotonic() < early_until
            next_scan = time.monotonic() + (EARLY_SCAN_INTERVAL if early else SCAN_INTERVAL)
            if groups:
                known = {p: s for p, s in known.items() if _alive(p, s)}
                known.update(_descendants(groups, _processes()))
    groups = {g for g in groups if _alive(g)}
    known = {p: s for p, s in known.items() if _alive(p, s)}
    if not groups and not known:
        return 0
    _signal(groups, known, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and (
        any(_alive(g) for g in groups) or any(_alive(p, s) for p, s in known.items())
    ):
        time.sleep(0.05)
    _signal(groups, known, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
