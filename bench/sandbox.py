"""Spawn to first call, with and without the sandbox, as a ratio in one run.

    python -m bench.sandbox [--rounds N] [--quick] [--out F]

Each round starts a hub (`hub serve` over stdio) on a config of one child (bench/child_raw.py), initializes, and
times from the spawn to the first `tools/call` answer; the sides alternate (none, strict, strict, none, ...) so that
a warming cache favours neither. Prints one JSON object: the medians per side, strict / none, and the machine (date,
commit, cores, load); `--out F` also writes it to F (bench/results/sandbox.json is the figure docs/sandbox.md
quotes). `--quick` is one round each (the tests' smoke); the figure wants 10 or more.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.run import checkout_info

REPO = Path(__file__).resolve().parent.parent
SIDES = ("none", "strict")
LIMIT = 60.0


async def first_call(directory: Path, sandbox: str) -> float:
    """Seconds from spawning a hub with one child under `sandbox` to the first tool result."""
    child = {
        "command": sys.executable,
        "args": ["-m", "bench.child_raw"],
        "cwd": str(REPO),
        "prefix": "",
        "sandbox": sandbox,
    }
    config = directory / f"{sandbox}.yaml"
    config.write_text(yaml.safe_dump({"hub": {"health_tool": False}, "servers": {"bench": child}}))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hub", "serve", "--config", str(config), "--log-file", str(directory / f"{sandbox}.log")],
        cwd=str(REPO),
    )
    began = time.perf_counter()
    with anyio.fail_after(LIMIT):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("echo", {"text": "first"})
            assert not result.is_error, result
            return time.perf_counter() - began


async def measure(rounds: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    machine: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_start": os.getloadavg(),
        "hub": checkout_info(REPO),
    }
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="hub-bench-sandbox-") as tmp:
        for index in range(rounds):
            for side in SIDES if index % 2 == 0 else reversed(SIDES):
                times[side].append(await first_call(Path(tmp), side))
    machine["loadavg_end"], machine["duration_s"] = os.getloadavg(), round(time.monotonic() - began, 1)
    medians = {side: round(statistics.median(values) * 1000, 1) for side, values in times.items()}
    return {
        "rounds": rounds,
        "first_call_ms": medians,
        "ratio_strict_to_none": round(medians["strict"] / medians["none"], 2),
        "all_ms": {side: [round(value * 1000, 1) for value in values] for side, values in times.items()},
        "machine": machine,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="one round each: a smoke test, not a figure")
    parser.add_argument("--out", help="also write the JSON to this file")
    args = parser.parse_args()
    text = json.dumps(anyio.run(measure, 1 if args.quick else args.rounds), indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
