"""Linux's fast paths: the process table from /proc, and pipe sizes. Used only on Linux, and only when the
portable path is not forced; importing it touches nothing Linux-only (fcntl is imported where it is used). A start
time is in clock ticks since boot: what tells a process from a later one with its pid."""

from __future__ import annotations

import os
from contextlib import suppress

# A 64 KiB pipe takes a large listing or result in many writes, each after an event-loop wait; at 1 MiB in one.
PIPE_SIZE = 1 << 20


def widen_pipe(fd: int) -> None:
    """Ask for a 1 MiB pipe buffer; left as it is when over the system's limit (/proc/sys/fs/pipe-max-size)."""
    with suppress(OSError, AttributeError, ImportError):
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


def processes() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, start time) of every process."""
    table: dict[int, tuple[int, float]] = {}
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None:
            table[pid] = (int(stat[1]), float(stat[19]))
    return table


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (the state first)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read().decode("ascii", "replace")
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def descendants(roots: set[int]) -> dict[int, float]:
    """Every descendant of `roots` now, whatever its process group: pid -> start time."""
    table = processes()
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found: dict[int, float] = {}
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            found[child] = table[child][1]
            stack.append(child)
    return found


def alive(pid: int, start: float | None = None) -> bool:
    """Alive (not a zombie) and, if a start time is given, still the same process (pids are reused)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z" and (start is None or float(stat[19]) == start)


def start_time(pid: int) -> float | None:
    stat = _stat(pid)
    return float(stat[19]) if stat is not None else None


def marked(marker: bytes) -> dict[int, float]:
    """The processes whose environment holds `marker` (those of this user; others' cannot be read), with their
    start times."""
    found: dict[int, float] = {}
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/environ", "rb") as file:
                environ = file.read().split(b"\0")
        except OSError:
            continue
        if marker in environ and (start := start_time(pid)) is not None:
            found[pid] = start
    return found
