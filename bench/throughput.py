"""calls/s with 1, 8 and 64 calls in flight, for a 0 ms tool (echo) and a 10 ms one (sleep), on every side."""

from __future__ import annotations

import statistics
import time
from typing import Any

import anyio

from bench.harness import LIMIT, Conn, alternate, call
from bench.params import Params

TOOLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("echo", "echo_0ms", {"text": "hello"}),
    ("sleep", "sleep_10ms", {"ms": 10}),
)


async def burst(conn: Conn, name: str, arguments: dict[str, Any], inflight: int, total: int) -> float:
    """`total` calls with `inflight` of them in flight at any time: calls per second."""
    started = 0

    async def worker() -> None:
        nonlocal started
        while started < total:
            started += 1
            await call(conn, name, arguments)

    began = time.perf_counter()
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            for _ in range(inflight):
                tg.start_soon(worker)
    return total / (time.perf_counter() - began)


async def throughput(conns: list[Conn], p: Params) -> dict[str, Any]:
    """Each figure is the median of `burst_rounds` rounds, the sides' order alternating from round to round.

    Rows are keyed `<tool>_<ms>ms_x<in flight>`: {side: calls/s, "calls": calls per burst}.
    """
    out: dict[str, Any] = {}
    for tool, row_name, args in TOOLS:
        for inflight, total in p.burst.items():
            calls = total
            if tool == "sleep":  # each burst lasts at least 20 rounds of its in-flight calls (~0.2 s at 64)
                calls = max(inflight * 20, min(total, 400))
            rates: dict[str, list[float]] = {c.label: [] for c in conns}
            for r in range(p.burst_rounds):
                for conn in alternate(conns, r):
                    rates[conn.label].append(await burst(conn, tool, args, inflight, calls))
            row: dict[str, Any] = {k: round(statistics.median(v), 1) for k, v in rates.items()}
            row["calls"] = calls
            out[f"{row_name}_x{inflight}"] = row
    return out
