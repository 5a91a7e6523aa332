"""What a hub costs while it does nothing measured: its CPU while idle, and peak memory."""

from __future__ import annotations

from typing import Any

import anyio

from bench import procs
from bench.harness import Conn


async def idle_cpu(conns: list[Conn], seconds: float) -> dict[str, float]:
    """CPU each process burns over the same `seconds` with nothing to do, as % of one core."""
    before = {c.label: procs.cpu_s(c.pid) for c in conns}
    await anyio.sleep(seconds)
    return {c.label: round((procs.cpu_s(c.pid) - before[c.label]) / seconds * 100, 2) for c in conns}


def memory(conns: list[Conn]) -> dict[str, Any]:
    """Per side: peak and current RSS of the process alone and of its whole tree (bench/procs.py)."""
    return {c.label: procs.tree_memory(c.pid) for c in conns}
