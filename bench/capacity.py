"""How much one replica holds: sessions open at once, and calls/s while a call's p99 stays below 50 ms.

    python -m bench.capacity                  # 1,000 sessions, then 8 s at each level of calls in flight
    python -m bench.capacity --quick          # smoke: 50 sessions, 1 s per level
    python -m bench.capacity --out F          # the figures also written to F (JSON)

One `hub serve --http` (one replica, no auth) in front of the raw stdio child, whose `echo` answers at once: a
call's time is the hub's, plus the host's and loopback's (a bound on the hub's part, not an estimate of it). The
host is the bench's light raw HTTP host (bench/raw_http.py), in this process, on the same cores as the hub.

1. Sessions: `--sessions` handshake-era sessions are opened (initialize, initialized), and the hub's resident memory
   is read before and after. The hub's own bounds on sessions (`hub.http.max_sessions`, 1,000, and 100 per client
   without auth, since every session here comes from one address) are raised to let them all in.
2. Calls: at each level C of calls in flight, C workers call `echo` in a closed loop for `--seconds`, each on its own
   keep-alive connection and spread over the open sessions. Each level gives calls/s and the median and p99 of a
   call's time.

The figure: the level with the most calls/s whose p99 is below 50 ms. Beyond it, calls only queue: calls/s stays
flat while each call waits longer. Every wait is bounded (LIMIT); the hub is stopped in a `finally`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from bench import procs
from bench.harness import LIMIT, THIS_HUB, Run, pct, write_results
from bench.raw_http import RawHttpHost, _ready, serve_hub

TOOL = "c0_echo"
LEVELS = (1, 4, 16, 32, 64, 128, 256)
P99_LIMIT_MS = 50.0


def _config(run: Run, tools: int, sessions: int) -> Path:
    path = run.hub_config(THIS_HUB, "raw", 1, tools)
    document = yaml.safe_load(path.read_text())
    document["hub"] = {"http": {"max_sessions": sessions + 10, "max_sessions_per_client": sessions + 10}}
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


async def _level(hosts: list[RawHttpHost], inflight: int, seconds: float) -> dict[str, Any]:
    """`inflight` workers calling in a closed loop for `seconds`: calls/s, and each call's time."""
    times: list[float] = []
    stop = time.perf_counter() + seconds

    async def worker(index: int) -> None:
        host = hosts[index % len(hosts)]
        conn = await host.connect()
        try:
            while time.perf_counter() < stop:
                began = time.perf_counter()
                await host.call(conn, TOOL)
                times.append(time.perf_counter() - began)
        finally:
            conn[1].close()

    began = time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(worker(i) for i in range(inflight))), seconds + LIMIT)
    elapsed = time.perf_counter() - began
    return {
        "inflight": inflight,
        "calls_per_s": round(len(times) / elapsed, 1),
        "median_ms": round(statistics.median(times) * 1000, 2),
        "p99_ms": round(pct(times, 0.99) * 1000, 2),
        "calls": len(times),
    }


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    run = Run()
    process: subprocess.Popen[bytes] | None = None
    try:
        config = _config(run, args.tools, args.sessions)
        with (run.dir / "hub.err").open("w") as err:
            process, port = await serve_hub(run, config, run.dir / "hub.log", err)
        first = RawHttpHost(port)
        await first.open()
        await _ready(first, TOOL)
        before_kb = procs.memory_kb(process.pid)[1]
        hosts = [first]
        for _ in range(args.sessions - 1):
            host = RawHttpHost(port)
            await asyncio.wait_for(host.open(), LIMIT)
            hosts.append(host)
        after_kb = procs.memory_kb(process.pid)[1]
        await _level(hosts, 16, min(args.seconds, 1.0))  # warm-up
        levels = [await _level(hosts, inflight, args.seconds) for inflight in LEVELS]
        within = [row for row in levels if row["p99_ms"] < P99_LIMIT_MS]
        best = max(within, key=lambda row: row["calls_per_s"]) if within else None
        return {
            "sessions": args.sessions,
            "rss_mb_before_sessions": round(before_kb / 1024, 1),
            "rss_mb_with_sessions": round(after_kb / 1024, 1),
            "kb_per_session": round((after_kb - before_kb) / max(1, args.sessions - 1), 1),
            "levels": levels,
            "best_within_p99_limit": best,
            "p99_limit_ms": P99_LIMIT_MS,
        }
    finally:
        if process is not None:
            procs.stop(process)
        run.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds at each level of calls in flight")
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="smoke: 50 sessions, 1 s per level")
    parser.add_argument("--out", help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.seconds = 50, 1.0
    results = asyncio.run(measure(args))
    print(
        f"{results['sessions']} sessions open: hub RSS {results['rss_mb_before_sessions']} MB before, "
        f"{results['rss_mb_with_sessions']} MB with them ({results['kb_per_session']} kB each)"
    )
    for row in results["levels"]:
        print(
            f"{row['inflight']:4d} in flight  {row['calls_per_s']:8.1f} calls/s  "
            f"median {row['median_ms']:7.2f} ms  p99 {row['p99_ms']:7.2f} ms"
        )
    best = results["best_within_p99_limit"]
    if best is None:
        print(f"no level kept the p99 below {P99_LIMIT_MS:g} ms")
    else:
        print(f"most calls/s with p99 below {P99_LIMIT_MS:g} ms: {best['calls_per_s']} at {best['inflight']} in flight")
    write_results(args.out, args, results)


if __name__ == "__main__":
    main()
