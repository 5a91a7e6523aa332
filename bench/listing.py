"""tools/list: its latency and size on every side, the server's CPU per listing, and a host without the SDK."""

from __future__ import annotations

import json
import os
from typing import Any

from bench import procs
from bench.harness import FIXED_TOOLS, LIMIT, PY, REPO, Conn, Run, interleaved, list_tools, summary
from bench.params import Params
from bench.raw_client import RawStdio, listing_until, timed_lists


async def listing(conns: list[Conn], reps: int) -> dict[str, Any]:
    """Per side: the listing's tools, bytes (compact JSON) and tokens (≈ bytes/4), its latency, server CPU."""
    out: dict[str, Any] = {}
    for conn in conns:
        body = json.dumps(await list_tools(conn), separators=(",", ":"))
        out[conn.label] = {"tools": len(json.loads(body)["tools"]), "bytes": len(body), "tokens": len(body) // 4}
    samples = await interleaved(conns, reps, list_tools)
    for conn in conns:
        out[conn.label].update(summary(samples[conn.label]))
        out[conn.label]["cpu_ms"] = await list_cpu_ms(conn, reps * 5)
    return out


async def list_cpu_ms(conn: Conn, reps: int) -> float:
    """Server-side CPU per tools/list: the hub's own (a hub answers from its catalog), or the direct child's.

    Measured in a block of its own, since /proc counts CPU in clock ticks (10 ms): many calls per reading.
    """
    before = procs.cpu_s(conn.pid)
    for _ in range(reps):
        await list_tools(conn)
    return round((procs.cpu_s(conn.pid) - before) / reps * 1000, 3)


def raw_listing(run: Run, kind: str, n: int, p: Params) -> dict[str, Any]:
    """tools/list as a host without the SDK sees it (bench/raw_client.py): a direct child, and each hub of n children.

    Blocking reads, run in a worker thread by the caller; every process is stopped in the `finally`.
    """
    errlog = (run.dir / f"{run.name('raw-')}.log").open("w")
    clients: dict[str, RawStdio] = {}
    try:
        child = [PY, *run.child_args(kind, p.tools, run.name("rawdirect"))]
        clients["direct"] = RawStdio(child, REPO, None, errlog, LIMIT)
        for checkout in run.hubs:
            config = run.hub_config(checkout, kind, n, p.tools)
            log = run.dir / f"{config.stem}.hub.log"
            argv = [checkout.python, "-m", "hub", "serve", "--config", str(config), "--log-file", str(log)]
            env = run.hub_env(checkout)
            clients[checkout.label] = RawStdio(
                argv, checkout.root, {**os.environ, **env} if env else None, errlog, LIMIT
            )
        for client in clients.values():
            run.seen.add(client.pid)
            client.initialize()
        for label, client in clients.items():
            if label == "direct":
                continue
            listing_until(client, n * (p.tools + FIXED_TOOLS), LIMIT)
            # A call waits for the hub's own start: listings timed while a hub still loads measure its import.
            client.request("tools/call", {"name": "c0_echo", "arguments": {"text": "up"}})
        timed_lists(list(clients.values()), 10)  # warm-up
        samples = timed_lists(list(clients.values()), p.list_reps)
    finally:
        for client in clients.values():
            client.close()
        errlog.close()
    return {label: summary(s) for label, s in zip(clients, samples, strict=True)}
