"""Per-call latency: sequential calls on every side, interleaved, and the CPU each server process spent per call."""

from __future__ import annotations

from typing import Any

from bench import procs
from bench.harness import Conn, Run, call, hub_child_pid, interleaved, summary
from bench.params import Params


async def sequential(
    run: Run, conns: list[Conn], p: Params, name: str, arguments: dict[str, Any], n: int
) -> dict[str, Any]:
    """n sequential calls per side after the warm-up: a summary per side, and CPU per call of each process.

    CPU per call is read from /proc for the process each side talks to and, behind a hub, for the hub's child
    c0 too (`<side>.child`).
    """
    await interleaved(conns, p.warmup, lambda c: call(c, name, arguments))
    watched = {c.label: c.pid for c in conns}
    for c in conns:
        if c.through_hub and (child := hub_child_pid(c, run.marker)):
            watched[f"{c.label}.child"] = child
    cpu0 = {k: procs.cpu_s(pid) for k, pid in watched.items()}
    samples = await interleaved(conns, n, lambda c: call(c, name, arguments))
    cpu = {k: procs.cpu_s(pid) - cpu0[k] for k, pid in watched.items()}
    out: dict[str, Any] = {c.label: summary(samples[c.label]) for c in conns}
    out["cpu_ms_per_call"] = {k: round(v * 1000 / n, 3) for k, v in cpu.items()}
    return out
