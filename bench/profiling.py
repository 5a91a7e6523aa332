"""`python -m bench --profile`: sequential echo calls through this checkout's stdio hub, sampled (py-spy, cProfile)."""

from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from bench import procs
from bench.harness import FIXED_TOOLS, PY, RESULTS, THIS_HUB, Run, call, hub, ms, wait_listing

TOOLS = 10


def _py_spy(pid: int, out: Path) -> subprocess.Popen[bytes]:
    spy_bin = shutil.which("py-spy") or str(Path(PY).with_name("py-spy"))
    argv = [spy_bin, "record", "--pid", str(pid), "--rate", "500", "--gil", "--nonblocking", "--format", "raw"]
    return subprocess.Popen(
        [*argv, "--duration", "600", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


async def profile(run: Run, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    """Sequential echo calls through a stdio hub (1 child), profiled with py-spy (sampling) or cProfile."""
    calls, tool = args.calls or 2000, args.profiler
    out = Path(args.profile_out or RESULTS / ("hub-pyspy.txt" if tool == "py-spy" else "hub.prof")).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    wrap = ["-m", "cProfile", "-o", str(out)] if tool == "cprofile" else None
    spy: subprocess.Popen[bytes] | None = None
    config = run.hub_config(THIS_HUB, args.child, 1, TOOLS)
    async with hub(run, THIS_HUB, "stdio", config, wrap=wrap) as h:
        await wait_listing(h, TOOLS + FIXED_TOOLS)
        for _ in range(50):
            await call(h, "echo", {"text": "hello"})
        if tool == "py-spy":
            spy = _py_spy(h.pid, out)
            await anyio.sleep(1.0)  # py-spy attaches
        try:
            cpu0 = procs.cpu_s(h.pid)
            began = time.perf_counter()
            for _ in range(calls):
                await call(h, "echo", {"text": "hello"})
            wall = time.perf_counter() - began
            cpu = procs.cpu_s(h.pid) - cpu0
        finally:
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
                try:
                    spy.wait(30)
                except subprocess.TimeoutExpired:
                    procs.stop(spy)
    info = {
        "profiler": tool,
        "child": args.child,
        "calls": calls,
        "wall_ms_per_call": ms(wall / calls),
        "hub_cpu_ms_per_call": ms(cpu / calls),
        "output": str(out),
    }
    log(f"{calls} calls: {info['wall_ms_per_call']} ms/call wall, {info['hub_cpu_ms_per_call']} ms CPU/call in the hub")
    return info
