"""No child outlives the hub, even a SIGKILLed one: a small watchdog process ends them when the hub is gone
(docs/operations.md, decision 007).

The hub tells it, over a pipe on its stdin, about each child it starts (`+ PID`) and stops (`- PID`); it notes the
children's descendants as they appear (closely for a while after a child starts). When the pipe ends it terminates
the children, their known descendants and every process marked with this hub's `HUB_INSTANCE`, kills what is left
after a grace period, and exits. It runs as `python -m hub.platform.watchdog MARK` and imports nothing heavy, so that
it is up in milliseconds.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress

from hub.platform import LINUX, WINDOWS, WINDOWS_CREATION_FLAGS, linux, portable

# What marks the children of one hub (its value is the hub's mark), in their environment.
INSTANCE_VAR = "HUB_INSTANCE"
GRACE = 2.0
SCAN_INTERVAL = 1.0
# Children start their helpers as they start: look closely for a while after each registration.
EARLY_SCAN_INTERVAL = 0.1
EARLY_PERIOD = 30.0


class Watchdog:
    """The hub's side: starts the watchdog process and keeps it told."""

    def __init__(self) -> None:
        self.mark = f"{os.getpid()}-{os.urandom(6).hex()}"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the watchdog (before the first child: from then on no child can be left behind)."""
        # Its own group: a Ctrl-C to the hub's terminal must not end it first.
        self._process = subprocess.Popen(
            [sys.executable, "-m", "hub.platform.watchdog", self.mark],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=not WINDOWS,
            creationflags=WINDOWS_CREATION_FLAGS if WINDOWS else 0,
        )

    def _tell(self, line: str) -> None:
        process = self._process
        if process is not None and process.stdin is not None:
            with suppress(OSError, ValueError):
                process.stdin.write(line.encode() + b"\n")
                process.stdin.flush()

    def add(self, pid: int) -> None:
        self._tell(f"+ {pid}")

    def discard(self, pid: int) -> None:
        self._tell(f"- {pid}")

    def close(self) -> None:
        """The hub stops normally: the watchdog finds nothing left to end, and exits."""
        process, self._process = self._process, None
        if process is not None and process.stdin is not None:
            with suppress(OSError):
                process.stdin.close()
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)


# ---- the watchdog process ---------------------------------------------------------------------------------------

Known = dict[int, float]  # pid -> start time (to tell a process from a later one with its pid)


class ProcessTable:
    """The process table (also the hub's, to stop a child): /proc on Linux; psutil elsewhere and with HUB_PORTABLE=1.
    Signals go to each process whose start time is still the one noted (a pid reused meanwhile is left alone) and,
    where there are process groups, to the group it leads (a child's helpers that stayed in it)."""

    def __init__(self) -> None:
        self._proc = LINUX and not portable()
        self.groups = not WINDOWS and not portable()

    def descendants(self, roots: set[int]) -> Known:
        if self._proc:
            return linux.descendants(roots)
        import psutil

        found: Known = {}
        for root in roots:
            with suppress(psutil.Error):
                for child in psutil.Process(root).children(recursive=True):
                    with suppress(psutil.Error):
                        found[child.pid] = child.create_time()
        return found

    def start(self, pid: int) -> float | None:
        """The start time of a running process (in the unit `descendants` notes), None if it is not running."""
        if self._proc:
            return linux.start_time(pid)
        import psutil

        try:
            return psutil.Process(pid).create_time()
        except psutil.Error:
            return None

    def alive(self, pid: int, start: float | None = None) -> bool:
        """Running (not a zombie) and, if `start` is given, still the process noted with it."""
        if self._proc:
            return linux.alive(pid, start)
        import psutil

        try:
            process = psutil.Process(pid)
            return process.status() != psutil.STATUS_ZOMBIE and (start is None or process.create_time() == start)
        except psutil.Error:
            return False

    def marked(self, mark: str) -> Known:
        """The processes whose environment carries this hub's mark, with their start times."""
        if self._proc:
            return linux.marked(f"{INSTANCE_VAR}={mark}".encode())
        import psutil

        found: Known = {}
        for process in psutil.process_iter():
            with suppress(psutil.Error):
                if process.environ().get(INSTANCE_VAR) == mark:
                    found[process.pid] = process.create_time()
        return found

    def living(self, noted: Known) -> Known:
        return {pid: start for pid, start in noted.items() if self.alive(pid, start)}

    def signal(self, targets: Known, kill: bool) -> None:
        sig = getattr(signal, "SIGKILL", signal.SIGTERM) if kill else signal.SIGTERM  # Windows: both terminate
        for pid, start in targets.items():
            if self.groups:
                with suppress(OSError):
                    os.killpg(pid, sig)  # a child leads a group of its own: its helpers that stayed in it
            if self.alive(pid, start):
                with suppress(OSError):
                    os.kill(pid, sig)


def _read_lines(lines: queue.Queue[bytes | None]) -> None:
    """The hub's pipe, read in a thread (a pipe cannot be polled on every system); None at its end."""
    with suppress(OSError):
        for line in sys.stdin.buffer:
            lines.put(line)
    lines.put(None)


def _watch(table: ProcessTable) -> tuple[set[int], Known]:
    """Follow the hub's registrations and note the children's descendants, until the hub's pipe ends."""
    children: set[int] = set()
    known: Known = {}
    lines: queue.Queue[bytes | None] = queue.Queue()
    threading.Thread(target=_read_lines, args=(lines,), daemon=True).start()
    next_scan = time.monotonic() + SCAN_INTERVAL
    early_until = 0.0
    while True:
        try:
            line = lines.get(timeout=max(0.0, next_scan - time.monotonic()))
        except queue.Empty:
            line = b""
        if line is None:
            return children, known
        sign, _, number = line.decode(errors="replace").strip().partition(" ")
        if number.isdigit() and int(number) > 1:
            (children.add if sign == "+" else children.discard)(int(number))
            next_scan = time.monotonic()
            early_until = next_scan + EARLY_PERIOD
        if time.monotonic() >= next_scan:
            next_scan = time.monotonic() + (EARLY_SCAN_INTERVAL if time.monotonic() < early_until else SCAN_INTERVAL)
            if children:
                known = table.living(known)
                known.update(table.descendants(children))


def main(mark: str) -> int:
    for name in ("SIGINT", "SIGHUP"):  # terminal signals are the hub's business; only the pipe's end counts
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    table = ProcessTable()
    children, known = _watch(table)
    targets: Known = {p: s for p in children if (s := table.start(p)) is not None}
    targets |= table.living(known)
    targets |= table.marked(mark)
    targets.pop(os.getpid(), None)
    if not targets:
        return 0
    table.signal(targets, kill=False)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and any(table.alive(p, s) for p, s in targets.items()):
        time.sleep(0.05)
    left = table.living(targets) | table.marked(mark)
    left.pop(os.getpid(), None)
    table.signal(left, kill=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
