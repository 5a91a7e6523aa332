"""The hub against a direct connection to the same child, in one run, interleaved (A B C / C B A).

    python -m bench                          # full run (~15 min on 2 cores): bench/results/latest.json + a table
    python -m bench --quick                  # smoke mode (~1 min): bench/results/quick.json
    python -m bench --baseline DIR           # also the hub of another checkout, side by side (bench/README.md)
    python -m bench --profile                # 2,000 sequential echo calls through a stdio hub, sampled by py-spy

The plan: for each front and kind of child (stdio/sdk, stdio/raw, http/sdk), the calls (latency, calls/s, 1 MiB),
the listing with 1, 5 and 20 children (with idle CPU and peak RSS), and the start-up rows (bench/README.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from bench.footprint import idle_cpu, memory
from bench.harness import (
    FIXED_TOOLS,
    MIB,
    RESULTS,
    THIS_HUB,
    Conn,
    Run,
    baseline_checkout,
    call,
    direct,
    floor,
    hub,
    wait_listing,
)
from bench.latency import sequential
from bench.listing import listing, raw_listing
from bench.params import Params
from bench.report import render_table
from bench.startup import parallel_start, start
from bench.throughput import throughput

PLAN = [("stdio", "sdk"), ("stdio", "raw"), ("http", "sdk")]
Log = Callable[[str], None]


async def open_hubs(stack: AsyncExitStack, run: Run, front: str, kind: str, n: int, tools: int) -> list[Conn]:
    """Every hub measured, each serving n children on a config of its own, up with every child listed."""
    hubs = []
    for checkout in run.hubs:
        config = run.hub_config(checkout, kind, n, tools)
        hubs.append(await stack.enter_async_context(hub(run, checkout, front, config)))
    for conn in hubs:
        await wait_listing(conn, n * (tools + FIXED_TOOLS))
    return hubs


async def calls_section(run: Run, front: str, kind: str, p: Params, log: Log) -> dict[str, Any]:
    """Per-call latency (and the relay floor over stdio), calls/s and the 1 MiB result: hubs of 1 child vs direct."""
    res: dict[str, Any] = {}
    log(f"[{front}/{kind}] sequential, throughput, 1 MiB (hubs with 1 child vs direct)")
    async with AsyncExitStack() as stack:
        conns = [await stack.enter_async_context(direct(run, front, kind, p.tools))]
        conns += await open_hubs(stack, run, front, kind, 1, p.tools)
        echo = {"text": "hello"}
        large = {"bytes": MIB}
        res["payload_bytes"] = MIB
        if front == "stdio":  # the same calls through a relay with no MCP logic: what any extra hop costs
            async with floor(run, kind, p.tools) as f:
                res["seq_echo"] = await sequential(run, [*conns, f], p, "echo", echo, p.seq_calls)
                res["payload_1mib"] = await sequential(run, [*conns, f], p, "payload", large, p.payload_reps)
        else:
            res["seq_echo"] = await sequential(run, conns, p, "echo", echo, p.seq_calls)
            res["payload_1mib"] = await sequential(run, conns, p, "payload", large, p.payload_reps)
        log("  echo median " + ", ".join(f"{c.label} {res['seq_echo'][c.label]['median_ms']} ms" for c in conns))
        res["throughput"] = await throughput(conns, p)
        res["memory_1"] = memory(conns)
    return res


async def listing_section(run: Run, front: str, kind: str, p: Params, log: Log) -> dict[str, Any]:
    """tools/list with n children per hub, against one direct child and one of the same size; idle CPU, peak RSS."""
    res: dict[str, Any] = {"list": {}, "memory": {}, "idle_cpu_pct": {}}
    for n in p.list_children:
        log(f"[{front}/{kind}] tools/list with {n} children")
        same = n * (p.tools + FIXED_TOOLS) - FIXED_TOOLS  # a direct child listing as many tools as a hub's children
        async with AsyncExitStack() as stack:
            d = await stack.enter_async_context(direct(run, front, kind, p.tools))
            hubs = await open_hubs(stack, run, front, kind, n, p.tools)
            big = await stack.enter_async_context(direct(run, front, kind, same, label="direct_same_size"))
            row = await listing([d, *hubs, big], p.list_reps)
            res["list"][str(n)] = row
            res["idle_cpu_pct"][str(n)] = await idle_cpu(hubs, p.idle_s)
            for h in hubs:  # exercise each hub before reading its peak: a 1 MiB result through it
                await call(h, "payload", {"bytes": MIB})
            res["memory"][str(n)] = memory(hubs)
        if front == "stdio":  # the same listing, read by a host without the SDK (its own processes)
            row["raw_client"] = await anyio.to_thread.run_sync(raw_listing, run, kind, n, p)
    return res


async def start_section(run: Run, front: str, kind: str, p: Params, log: Log) -> dict[str, Any]:
    res: dict[str, Any] = {"start": {}}
    for n in p.start_children:
        log(f"[{front}/{kind}] start with {n} children")
        res["start"][str(n)] = await start(run, front, kind, n, p)
    if front == "stdio" and kind == "raw":
        log(f"[{front}/{kind}] parallel start, {p.parallel_children} children that sleep before serving")
        res["parallel_start"] = await parallel_start(run, p)
    return res


async def bench_front(run: Run, front: str, kind: str, p: Params, log: Log) -> dict[str, Any]:
    """Every figure for one front (stdio / http) and one kind of child (sdk / raw)."""
    return {
        **await calls_section(run, front, kind, p, log),
        **await listing_section(run, front, kind, p, log),
        **await start_section(run, front, kind, p, log),
    }


def _sh(cmd: list[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def checkout_info(root: Path) -> dict[str, Any]:
    """Which hub was measured: other work may change hub/ between runs (and even during one)."""
    return {
        "root": str(root),
        "git_commit": _sh(["git", "-C", str(root), "rev-parse", "--short", "HEAD"]),
        "git_dirty": _sh(["git", "-C", str(root), "status", "--short", "hub"]).splitlines(),
    }


def machine(run: Run) -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": _sh(["nproc"]),
        "lscpu": "\n".join(_sh(["lscpu"]).splitlines()[:15]),
        "python": platform.python_version(),
        "mcp": importlib.metadata.version("mcp"),
        "platform": platform.platform(),
        "loadavg_start": os.getloadavg(),
        "hubs": {checkout.label: checkout_info(checkout.root) for checkout in run.hubs},
    }


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def measure(run: Run, args: argparse.Namespace) -> dict[str, Any]:
    p = Params.make(args.quick, args.tools)
    if args.calls:
        p.seq_calls = args.calls
    sides = ["direct", *(checkout.label for checkout in run.hubs)]
    report: dict[str, Any] = {"machine": machine(run), "params": p.__dict__, "sides": sides, "results": {}}
    began = time.monotonic()
    for front, kind in PLAN:
        if args.only and f"{front}/{kind}" not in args.only:
            continue
        report["results"][f"{front}/{kind}"] = await bench_front(run, front, kind, p, log)
    report["machine"]["loadavg_end"] = os.getloadavg()
    report["machine"]["duration_s"] = round(time.monotonic() - began, 1)
    return report


async def amain(args: argparse.Namespace) -> int:
    hubs = [THIS_HUB] if args.baseline is None else [THIS_HUB, baseline_checkout(Path(args.baseline))]
    run = Run(hubs)
    try:
        if args.profile:
            from bench.profile_report import report_cprofile, report_pyspy
            from bench.profiling import profile

            info = await profile(run, args, log)
            print(json.dumps(info))
            target = Path(info["output"])
            if target.exists():
                print(report_cprofile(target) if args.profiler == "cprofile" else report_pyspy(target))
            return 0
        report = await measure(run, args)
        out = Path(args.out) if args.out else RESULTS / ("quick.json" if args.quick else "latest.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(render_table(report))
        log(f"results written to {out}")
        return 0
    finally:
        run.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke mode: a few seconds per section")
    parser.add_argument("--baseline", metavar="DIR", help="also measure the hub of this checkout (with DIR/.venv)")
    parser.add_argument("--tools", type=int, default=10, help="realistic tools per child besides echo/payload/sleep")
    parser.add_argument("--calls", type=int, default=0, help="sequential calls (default 1000, quick 100, profile 2000)")
    parser.add_argument("--only", action="append", help="run only stdio/sdk, stdio/raw or http/sdk (repeatable)")
    parser.add_argument("--out", help="JSON output (default bench/results/latest.json, quick: quick.json)")
    parser.add_argument("--profile", action="store_true", help="profile the hub over sequential echo calls (stdio)")
    parser.add_argument("--profiler", choices=["py-spy", "cprofile"], default="py-spy", help="for --profile")
    parser.add_argument("--child", choices=["sdk", "raw"], default="raw", help="child for --profile (default raw)")
    parser.add_argument("--profile-out", help="default bench/results/hub-pyspy.txt or hub.prof")
    args = parser.parse_args(argv)
    if args.only and (unknown := set(args.only) - {f"{front}/{kind}" for front, kind in PLAN}):
        parser.error(f"--only: unknown section {', '.join(sorted(unknown))}")
    result: int = anyio.run(amain, args)
    return result
