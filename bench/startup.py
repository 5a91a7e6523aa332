"""Start-up: from spawning a process to its first answers, a hub of n children against the same child spawned directly.

Direct: the client spawns the child, initializes, and sends its first request. Hub: the client spawns the hub on
a new config (its first start ever), initializes, and sends its first request; the hub spawns its children. Two
first requests, each on a start of its own: `tools/list` (the answer says how many tools it had; a hub's first
listing waits for its children while they start, `startup_listing_wait`), and `tools/call` of `echo`, which
through a hub waits for that child's start. Every side starts in each round, in an order that alternates.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from bench.harness import (
    FIXED_TOOLS,
    LIMIT,
    HubCheckout,
    Run,
    alternate,
    call,
    direct,
    hub,
    list_tools,
    median_ms,
    wait_listing,
)
from bench.params import Params

Request = Literal["list", "call"]


async def first_answer(
    run: Run, side: HubCheckout | None, front: str, kind: str, n: int, p: Params, request: Request
) -> tuple[float, int | None]:
    """Seconds from the spawn to the first answer to `request` (and for a listing, how many tools it had).

    `side` None: the child spawned directly. The config is written before the clock starts.
    """
    if side is None:
        began = time.perf_counter()
        connecting = direct(run, front, kind, p.tools)
    else:
        config = run.hub_config(side, kind, n, p.tools)
        began = time.perf_counter()
        connecting = hub(run, side, front, config)
    async with connecting as conn:
        if request == "list":
            listed = await list_tools(conn)
            return time.perf_counter() - began, len(listed.get("tools") or ())
        await call(conn, "echo", {"text": "first"})
        return time.perf_counter() - began, None


async def start(run: Run, front: str, kind: str, n: int, p: Params) -> dict[str, Any]:
    """Spawn -> first tools/list answered, and spawn -> first tools/call result: medians per side.

    {"first_list_ms": {side: ms}, "first_list_tools": {side: [count per round]}, "first_call_ms": {side: ms},
    "expected_tools": what a complete listing has}. Direct is one child, whatever n.
    """
    sides: list[HubCheckout | None] = [None, *run.hubs]
    labels = ["direct", *(h.label for h in run.hubs)]
    seconds: dict[Request, dict[str, list[float]]] = {"list": {}, "call": {}}
    tools: dict[str, list[int]] = {label: [] for label in labels}
    for r in range(p.start_reps):
        for request in ("list", "call"):
            for side, label in alternate(list(zip(sides, labels, strict=True)), r):
                took, count = await first_answer(run, side, front, kind, n, p, request)
                seconds[request].setdefault(label, []).append(took)
                if count is not None:
                    tools[label].append(count)
    per_child = p.tools + FIXED_TOOLS
    return {
        "first_list_ms": {label: median_ms(s) for label, s in seconds["list"].items()},
        "first_list_tools": tools,
        "first_call_ms": {label: median_ms(s) for label, s in seconds["call"].items()},
        # The children's tools: a listing with fewer was answered before every child was up (a hub adds hub_health).
        "expected_tools": {label: per_child if label == "direct" else n * per_child for label in labels},
    }


async def parallel_start(run: Run, p: Params) -> dict[str, Any]:
    """N raw children that sleep 1/N .. 1 x `parallel_slowest_s` before serving: is a hub's start their slowest or
    their sum? Against a direct connection to the slowest child alone (spawn -> its tools listed), each hub from
    its spawn until its live listing has every child's tools (re-listed on each tools/list_changed).

    The children's start costs no CPU here, unlike the start rows (N interpreters starting on 2 cores), so what is
    left is how the hub starts them.
    """
    n = p.parallel_children
    delays = [round(p.parallel_slowest_s * (i + 1) / n, 3) for i in range(n)]
    expected = n * (p.tools + FIXED_TOOLS)
    sides: list[HubCheckout | None] = [None, *run.hubs]
    seconds: dict[str, list[float]] = {}
    for r in range(p.parallel_reps):
        for side in alternate(sides, r):
            if side is None:
                began = time.perf_counter()
                async with direct(run, "stdio", "raw", p.tools, delays[-1]) as conn:
                    await list_tools(conn)
                    seconds.setdefault("direct", []).append(time.perf_counter() - began)
                continue
            config = run.hub_config(side, "raw", n, p.tools, delays)
            began = time.perf_counter()
            async with hub(run, side, "stdio", config) as conn:
                await wait_listing(conn, expected, LIMIT)
                seconds.setdefault(side.label, []).append(time.perf_counter() - began)
    return {
        "children": n,
        "slowest_s": delays[-1],
        "sum_s": round(sum(delays), 3),
        "full_listing_ms": {label: median_ms(s) for label, s in seconds.items()},
    }
