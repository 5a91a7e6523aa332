"""What authentication and policy cost per call: one hub without `auth:` against the same hub with a token file and
policies, in one run, interleaved, over HTTP with the bench's light raw host (bench/raw_http.py).

    python -m bench.auth                       # 5 alternating rounds of 1,000 sequential echo calls + 64 in flight
    python -m bench.auth --rounds 3 --out F    # the figures also written to F (JSON)

Both hubs serve the same kind of child (the raw stdio child) on their own copy of the config; the second adds
`auth: {tokens: ...}` and four policy rules, so every call is authenticated (a SHA-256 and a constant-time compare
per token in the file) and decided (the rules that match, their globs). Target: at most 10% over the hub without.
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
from bench.harness import THIS_HUB, Run, write_results
from bench.raw_http import RawHttpHost, _ready, serve_hub

TOOL = "c0_echo"


def _configs(run: Run, tools: int) -> tuple[Path, Path, str]:
    """(plain config, config with auth and policies, a token of the second)."""
    from hub.access.tokens import TokenFile

    plain = run.hub_config(THIS_HUB, "raw", 1, tools)
    document = yaml.safe_load(plain.read_text())
    tokens = TokenFile(run.dir / "tokens.json")
    for i in range(20):  # a team's worth of tokens: each is compared with every entry
        tokens.create(f"user{i}", ("oncall",))
    token = tokens.create("bench", ("ops",))
    document["auth"] = {"tokens": str(run.dir / "tokens.json")}
    document["policies"] = [
        {"name": "no-writes", "subjects": ["*"], "deny": ["*_write", "*_delete"]},
        {"name": "oncall", "groups": ["oncall"], "allow": ["c0_get_*", "c0_list_*"]},
        {"name": "ops", "groups": ["ops"], "allow": ["c0_*"]},
        {"name": "admins", "groups": ["admin"], "allow": ["*"]},
    ]
    document["default_policy"] = "deny"
    guarded = run.dir / "guarded.yaml"
    guarded.write_text(yaml.safe_dump(document, sort_keys=False))
    return plain, guarded, token


async def _sequential(host: RawHttpHost, calls: int) -> list[float]:
    conn = await host.connect()
    try:
        times = []
        for _ in range(calls):
            began = time.perf_counter()
            await host.call(conn, TOOL)
            times.append(time.perf_counter() - began)
        return times
    finally:
        conn[1].close()


def _p99(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.99) - 1]


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    run = Run()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        plain, guarded, token = _configs(run, args.tools)
        hosts: dict[str, RawHttpHost] = {}
        with (run.dir / "hubs.log").open("w") as log:
            for label, config, key in (("no_auth", plain, None), ("auth_policy", guarded, token)):
                process, port = await serve_hub(run, config, run.dir / f"{label}.log", log)
                processes.append(process)
                hosts[label] = RawHttpHost(port, key)
                await hosts[label].open()
                await _ready(hosts[label], TOOL)
                await _sequential(hosts[label], 200)  # warm-up
        latencies: dict[str, list[float]] = {label: [] for label in hosts}
        rates: dict[str, list[float]] = {label: [] for label in hosts}
        order = list(hosts)
        for r in range(args.rounds):
            for label in order if r % 2 == 0 else order[::-1]:
                latencies[label] += await _sequential(hosts[label], args.calls)
                rates[label].append(await hosts[label].burst(TOOL, args.inflight, args.calls))
        rows = {
            label: {
                "median_ms": round(statistics.median(latencies[label]) * 1000, 3),
                "p99_ms": round(_p99(latencies[label]) * 1000, 3),
                "calls_per_s": round(statistics.median(rates[label]), 1),
            }
            for label in hosts
        }
        base, guarded_row = rows["no_auth"], rows["auth_policy"]
        rows["ratio"] = {
            "median": round(guarded_row["median_ms"] / base["median_ms"], 3),
            "p99": round(guarded_row["p99_ms"] / base["p99_ms"], 3),
            "calls_per_s": round(guarded_row["calls_per_s"] / base["calls_per_s"], 3),
        }
        return rows
    finally:
        for process in processes:
            procs.stop(process)
        run.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=1000, help="sequential calls per round, and calls per burst")
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--out", help="also write the figures to this JSON file")
    args = parser.parse_args()
    rows = asyncio.run(measure(args))
    for label in ("no_auth", "auth_policy"):
        row = rows[label]
        print(f"{label:12s} median {row['median_ms']:.3f} ms  p99 {row['p99_ms']:.3f} ms  {row['calls_per_s']} calls/s")
    ratio = rows["ratio"]
    print(f"auth+policy / none: median {ratio['median']}x  p99 {ratio['p99']}x  calls/s {ratio['calls_per_s']}x")
    write_results(args.out, args, rows)


if __name__ == "__main__":
    main()
