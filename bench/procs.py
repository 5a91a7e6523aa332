"""What /proc says about the processes the benchmark started: CPU time, peak and current RSS, descendants.

Linux only. Every function tolerates a process that has just exited (returns zeros / skips it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Stat:
    ppid: int
    cpu_s: float  # utime + stime


def stat(pid: int) -> Stat | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    # fields[0] is state (field 3): ppid is field 4, utime 14, stime 15.
    return Stat(ppid=int(fields[1]), cpu_s=(int(fields[11]) + int(fields[12])) / TICK)


def cpu_s(pid: int) -> float:
    s = stat(pid)
    return s.cpu_s if s else 0.0


def memory_kb(pid: int) -> tuple[int, int]:
    """(VmHWM, VmRSS) in kB: the peak and the current resident set of one process."""
    hwm = rss = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    except OSError:
        pass
    return hwm, rss


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = stat(int(entry))
            if s is not None and s.ppid == pid:
                found.append(int(entry))
    return found


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, grandchildren, ...), from one scan of /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = stat(int(entry))
            if s is not None:
                parents.setdefault(s.ppid, []).append(int(entry))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def find_child(marker: str, limit_s: float = 10.0) -> int:
    """The pid of our own child process whose command line contains `marker` (bounded wait)."""
    deadline = time.monotonic() + limit_s
    while True:
        for pid in children_of(os.getpid()):
            if marker in cmdline(pid):
                return pid
        if time.monotonic() > deadline:
            raise RuntimeError(f"no child process with {marker!r} in its command line")
        time.sleep(0.01)


def tree_memory(pid: int) -> dict[str, float]:
    """Peak RSS of `pid` alone, and of the whole tree (sum of each process's own peak, an upper bound)."""
    procs = [pid, *descendants(pid)]
    mems = [memory_kb(p) for p in procs]
    return {
        "processes": len(procs),
        "self_peak_mb": round(mems[0][0] / 1024, 1),
        "self_rss_mb": round(mems[0][1] / 1024, 1),
        "tree_peak_mb": round(sum(h for h, _ in mems) / 1024, 1),
        "tree_rss_mb": round(sum(r for _, r in mems) / 1024, 1),
    }


def stop(process: subprocess.Popen[bytes], grace_s: float = 5.0) -> None:
    """SIGTERM the process group, wait, then SIGKILL it; bounded."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            process.wait(grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def reap_strays(pids: set[int], marker: str) -> list[int]:
    """Kill, by pid, processes we started that are still alive (checked by `marker` in their command line)."""
    killed = []
    for pid in pids:
        if marker in cmdline(pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
    return killed
