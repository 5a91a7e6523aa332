"""The hub against a direct connection to the same child, in one run, interleaved (A B A B).

    python -m bench            # full run (~15 min on 2 cores): bench/results/latest.json + a table
    python -m bench --quick    # smoke mode (~1 min): bench/results/quick.json
    python -m bench --profile  # 2,000 sequential echo calls through a stdio hub, sampled by py-spy

Both sides are driven by the same client (the SDK's `mcp.Client`, `session.send_request` of a
CallToolRequest, raw-dict results), so the client's own cost is the same on both sides; the difference is the
hub. Direct = client -> child; hub = client -> hub -> the same kind of child. Every wait is bounded and every
process started here is stopped in a `finally` (terminate, then kill).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

from bench import procs
from bench.raw_client import RawStdio, listing_until, timed_lists
from bench.report import render_table

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
# The hubs' per-child max_concurrency in the bench: the most calls it keeps in flight.
HUB_MAX_CONCURRENCY = 64
RAW: Any = TypeAdapter(dict[str, Any])
PY = sys.executable
# `sh -c SLEEP_THEN_RUN SECONDS COMMAND ARG...`: what the hub sends meanwhile waits in the pipe.
SLEEP_THEN_RUN = 'sleep "$0" && exec "$@"'
LIMIT = 180.0  # the bound on any single wait (a hub with 20 SDK children starts in ~15 s on 2 cores)
MIB = 1024 * 1024


@dataclass
class Params:
    quick: bool
    tools: int = 10
    seq_calls: int = 1000
    warmup: int = 50
    burst: dict[int, int] = field(default_factory=lambda: {1: 200, 8: 400, 64: 1280})
    burst_rounds: int = 5
    list_reps: int = 200
    list_children: tuple[int, ...] = (1, 5, 20)
    cold_children: tuple[int, ...] = (1, 5, 20)
    cold_reps: int = 3
    # Children that take a while to start without using the CPU (a backend to reach first): parallel or not.
    parallel_children: int = 20
    parallel_slowest_s: float = 2.0
    parallel_reps: int = 3
    payload_reps: int = 30
    idle_s: float = 5.0

    @classmethod
    def make(cls, quick: bool, tools: int) -> Params:
        if not quick:
            return cls(quick=False, tools=tools)
        return cls(
            quick=True,
            tools=tools,
            seq_calls=100,
            warmup=10,
            burst={1: 20, 8: 40, 64: 64},
            burst_rounds=1,
            list_reps=10,
            list_children=(2,),
            cold_children=(2,),
            cold_reps=1,
            parallel_children=2,
            parallel_slowest_s=0.3,
            parallel_reps=1,
            payload_reps=3,
            idle_s=0.5,
        )


# ---- connections --------------------------------------------------------------------------------------------


@dataclass
class Conn:
    """One connected path: the client, the process it talks to (hub or child), and how tools are named."""

    label: str
    client: Client
    pid: int
    prefix: str  # "" direct, "c0_" through the hub
    notes: Notifier

    def tool(self, name: str) -> str:
        return self.prefix + name


class Notifier:
    """Counts tools/list_changed from the server and wakes waiters."""

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.count = 0

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.event.set()
            self.event = anyio.Event()


class Run:
    """Owns the temporary directory and remembers every pid started, to reap strays at the end."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hub-bench-"))
        self.marker = self.dir.name  # in the command line of every hub and child we start
        self.cache = self.dir / "cache"  # the hubs' warm-start caches: never the user's ~/.cache
        self.seen: set[int] = set()
        self._n = 0

    def name(self, what: str) -> str:
        self._n += 1
        return f"{what}{self._n}"

    def remember(self, pid: int) -> None:
        self.seen.add(pid)
        self.seen.update(procs.descendants(pid))

    def child_args(self, kind: str, tools: int, name: str) -> list[str]:
        return ["-m", f"bench.child_{kind}", "--tools", str(tools), "--name", f"{self.marker}-{name}"]

    def child_command(self, kind: str, tools: int, name: str, delay: float = 0.0) -> tuple[str, list[str]]:
        """A child's (command, args); with `delay`, a server that waits on its backend before it loads anything.

        The wait is a shell's `sleep` before the interpreter starts: a Python that sleeps has already spent
        ~40 ms of CPU on its own start (this venv's site), and 20 of them on 2 cores delayed the last one's sleep
        by about half a second, which the parallel-start row then counted against the hub.
        """
        args = self.child_args(kind, tools, name)
        return ("/bin/sh", ["-c", SLEEP_THEN_RUN, str(delay), PY, *args]) if delay else (PY, args)

    def hub_config(self, kind: str, n: int, tools: int, delays: list[float] | None = None) -> Path:
        # max_concurrency (default 16) is raised to the most calls the bench keeps in flight: a direct connection
        # has no such limit, and at 16 a 10 ms tool is capped at 1,600 calls/s by design, not by the hub's cost.
        servers = {}
        for i in range(n):
            command, args = self.child_command(kind, tools, f"c{i}", delays[i] if delays else 0.0)
            servers[f"c{i}"] = {
                "command": command,
                "args": args,
                "cwd": str(REPO),
                "max_concurrency": HUB_MAX_CONCURRENCY,
            }
        path = self.dir / f"{self.name(f'hub-{kind}-{n}-')}.yaml"
        path.write_text(yaml.safe_dump({"servers": servers}, sort_keys=False))
        return path

    def cleanup(self) -> None:
        strays = procs.reap_strays(self.seen, self.marker)
        if strays:
            print(f"bench: killed {len(strays)} stray process(es): {strays}", file=sys.stderr)
        shutil.rmtree(self.dir, ignore_errors=True)


async def _sampling(_context: Any, _params: types.CreateMessageRequestParams) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message="bench: no model here")


async def _roots(_context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


def _client(transport: Any, notes: Notifier) -> Client:
    """The bench's host. It declares sampling and roots (its callbacks), as hosts that connect over HTTP do (VS Code);
    over HTTP the hub once gave such hosts' calls the SDK's slower path. No bench child asks for either."""
    return Client(
        transport,
        mode="legacy",
        cache=None,
        message_handler=notes,
        sampling_callback=_sampling,
        list_roots_callback=_roots,
        read_timeout_seconds=LIMIT,
    )


@asynccontextmanager
async def stdio_conn(
    run: Run,
    label: str,
    argv: list[str],
    marker: str,
    prefix: str,
    *,
    wrap: list[str] | None = None,
    env: dict[str, str] | None = None,
    command: str = PY,
) -> AsyncIterator[Conn]:
    """Spawn `command argv` (python by default) over stdio through the SDK's own stdio_client (it closes stdin,
    then TERM, then KILL)."""
    notes = Notifier()
    errlog = (run.dir / f"{run.name('stderr-')}.log").open("w")
    params = StdioServerParameters(command=command, args=[*(wrap or []), *argv], cwd=str(REPO), env=env)
    try:
        # Bounded: initialize and every request time out after LIMIT (read_timeout_seconds); on exit the SDK
        # closes stdin, waits 2 s, then SIGTERMs and SIGKILLs the process.
        async with _client(stdio_client(params, errlog=errlog), notes) as client:
            pid = procs.find_child(marker)
            run.remember(pid)
            yield Conn(label, client, pid, prefix, notes)
            run.remember(pid)
    finally:
        errlog.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def http_conn(
    run: Run, label: str, argv: list[str], prefix: str, port_file: Path | None, port: int = 0
) -> AsyncIterator[Conn]:
    """Start `python argv` serving Streamable HTTP, wait (bounded) until it accepts, connect the client."""
    log = (run.dir / f"{run.name('http-')}.log").open("w")
    process = subprocess.Popen(
        [PY, *argv], cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
    )
    run.seen.add(process.pid)
    try:
        with anyio.fail_after(LIMIT):
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"{label}: server exited with {process.returncode}; see {log.name}")
                if port_file is not None and port_file.exists():
                    port = int(port_file.read_text())
                if port and _accepts(port):
                    break
                await anyio.sleep(0.02)
        notes = Notifier()
        # The SDK's HTTP client refuses SSE events over 1 MiB by default; a 1 MiB text result is a bit more.
        transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", max_sse_event_size=8 * MIB)
        async with _client(transport, notes) as client:
            run.remember(process.pid)
            yield Conn(label, client, process.pid, prefix, notes)
    finally:
        run.remember(process.pid)
        procs.stop(process)
        log.close()


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def floor(run: Run, kind: str, tools: int) -> Any:
    """The child behind bench/relay_floor.py: a hop with no MCP logic, over stdio."""
    name = run.name("floor")
    argv = ["-m", "bench.relay_floor", PY, *run.child_args(kind, tools, name)]
    return stdio_conn(run, "floor", argv, f"{run.marker}-{name}", "")


def direct(run: Run, front: str, kind: str, tools: int, delay: float = 0.0) -> Any:
    name = run.name("direct")
    if front == "stdio":
        command, args = run.child_command(kind, tools, name, delay)
        return stdio_conn(run, "direct", args, f"{run.marker}-{name}", "", command=command)
    assert not delay, "only the stdio rows start delayed children"
    argv = run.child_args(kind, tools, name)
    port_file = run.dir / f"{name}.port"
    return http_conn(run, "direct", [*argv, "--http", "--port-file", str(port_file)], "", port_file)


def hub(
    run: Run, front: str, kind: str, n: int, tools: int, wrap: list[str] | None = None, config: Path | None = None
) -> Any:
    """A hub on a fresh config, or on `config` again (then a stdio hub starts warm: see hub/warm_start.py)."""
    config = config or run.hub_config(kind, n, tools)
    log = run.dir / f"{config.stem}.hub.log"
    argv = ["-m", "hub", "serve", "--config", str(config), "--log-file", str(log)]
    if front == "stdio":
        return stdio_conn(run, "hub", argv, str(config), "c0_", wrap=wrap, env={"HUB_CACHE_DIR": str(run.cache)})
    port = free_port()
    return http_conn(run, "hub", [*argv, "--http", f"127.0.0.1:{port}"], "c0_", None, port)


# ---- primitives ---------------------------------------------------------------------------------------------


async def call(conn: Conn, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    request = types.CallToolRequest(params=types.CallToolRequestParams(name=conn.tool(name), arguments=arguments))
    result: dict[str, Any] = await conn.client.session.send_request(request, RAW)
    if result.get("isError"):
        raise RuntimeError(f"{conn.label}: {name} failed: {result}")
    return result


async def list_tools(conn: Conn) -> dict[str, Any]:
    result: dict[str, Any] = await conn.client.session.send_request(types.ListToolsRequest(), RAW)
    return result


async def wait_listing(conn: Conn, expected: int, limit: float = LIMIT) -> dict[str, Any]:
    """List until at least `expected` tools are there; re-list on each tools/list_changed (0.5 s poll as backstop)."""
    with anyio.fail_after(limit):
        while True:
            changed = conn.notes.event
            listing = await list_tools(conn)
            if len(listing.get("tools") or ()) >= expected:
                return listing
            with anyio.move_on_after(0.5):
                await changed.wait()


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "median_ms": ms(statistics.median(samples)),
        "p99_ms": ms(pct(samples, 0.99)),
        "mean_ms": ms(statistics.fmean(samples)),
        "n": len(samples),
    }


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


async def interleaved(conns: list[Conn], reps: int, op: Callable[[Conn], Any]) -> dict[str, list[float]]:
    """Run `op` reps times on each connection, alternating A B / B A, timing each."""
    samples: dict[str, list[float]] = {c.label: [] for c in conns}
    for i in range(reps):
        for conn in conns if i % 2 == 0 else conns[::-1]:
            began = time.perf_counter()
            await op(conn)
            samples[conn.label].append(time.perf_counter() - began)
    return samples


def hub_child_pid(conn: Conn, marker: str) -> int | None:
    """The hub's child c0 (by its command line), for its CPU time."""
    for pid in procs.descendants(conn.pid):
        if procs.cmdline(pid).endswith(f"--name {marker}-c0 "):
            return pid
    return None


# ---- measurements -------------------------------------------------------------------------------------------


async def sequential(
    run: Run, conns: list[Conn], p: Params, name: str, arguments: dict[str, Any], n: int
) -> dict[str, Any]:
    """Per-call latency over n sequential calls per side (after warm-up), and CPU per call of each process."""
    await interleaved(conns, p.warmup, lambda c: call(c, name, arguments))
    watched = {c.label: c.pid for c in conns}
    for c in conns:
        if c.label == "hub" and (kid := hub_child_pid(c, run.marker)):
            watched["hub.child"] = kid
    cpu0 = {k: procs.cpu_s(pid) for k, pid in watched.items()}
    samples = await interleaved(conns, n, lambda c: call(c, name, arguments))
    cpu = {k: procs.cpu_s(pid) - cpu0[k] for k, pid in watched.items()}
    out: dict[str, Any] = {c.label: summary(samples[c.label]) for c in conns}
    out["cpu_ms_per_call"] = {k: round(v * 1000 / n, 3) for k, v in cpu.items()}
    out["ratio_median"] = ratio(out["hub"]["median_ms"], out["direct"]["median_ms"])
    out["ratio_p99"] = ratio(out["hub"]["p99_ms"], out["direct"]["p99_ms"])
    return out


async def burst(conn: Conn, name: str, arguments: dict[str, Any], inflight: int, total: int) -> float:
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
    """calls/s with 1, 8 and 64 in flight, echo (0 ms) and sleep 10 ms; rounds alternate A B / B A; medians."""
    out: dict[str, Any] = {}
    for tool, args in (("echo", {"text": "hello"}), ("sleep", {"ms": 10})):
        for inflight, total in p.burst.items():
            if tool == "sleep":  # each burst lasts at least 20 rounds of its in-flight calls (~0.2 s at 64)
                total = max(inflight * 20, min(total, 400))
            rates: dict[str, list[float]] = {c.label: [] for c in conns}
            for r in range(p.burst_rounds):
                for conn in conns if r % 2 == 0 else conns[::-1]:
                    rates[conn.label].append(await burst(conn, tool, args, inflight, total))
            row = {k: round(statistics.median(v), 1) for k, v in rates.items()}
            row["ratio"] = ratio(row["hub"], row["direct"])
            row["calls"] = total
            out[f"{tool}_{'0' if tool == 'echo' else '10'}ms_x{inflight}"] = row
    return out


async def listing(conns: list[Conn], reps: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for conn in conns:
        body = json.dumps(await list_tools(conn), separators=(",", ":"))
        out[conn.label] = {"tools": len(json.loads(body)["tools"]), "bytes": len(body), "tokens": len(body) // 4}
    samples = await interleaved(conns, reps, list_tools)
    for conn in conns:
        out[conn.label].update(summary(samples[conn.label]))
        out[conn.label]["cpu_ms"] = await list_cpu_ms(conn, reps * 5)
    return out


def raw_listing(run: Run, kind: str, n: int, p: Params) -> dict[str, Any]:
    """tools/list as a host without the SDK sees it (bench/raw_client.py): a direct child against a hub of n.

    Blocking reads, run in a worker thread by the caller; both processes are stopped in the `finally`.
    """
    config = run.hub_config(kind, n, p.tools)
    errlog = (run.dir / f"{run.name('raw-')}.log").open("w")
    clients: list[RawStdio] = []
    try:
        child = [PY, *run.child_args(kind, p.tools, run.name("rawdirect"))]
        clients.append(RawStdio(child, REPO, None, errlog, LIMIT))
        log = run.dir / f"{config.stem}.raw.log"
        argv = [PY, "-m", "hub", "serve", "--config", str(config), "--log-file", str(log)]
        clients.append(RawStdio(argv, REPO, {**os.environ, "HUB_CACHE_DIR": str(run.cache)}, errlog, LIMIT))
        for client in clients:
            run.seen.add(client.pid)
            client.initialize()
        listing_until(clients[1], n * (p.tools + 3), LIMIT)
        # A call waits for the hub's own start. A first start lists before the SDK is loaded, from a thread that
        # shares the interpreter with the import: listings timed then took 5-11 ms, in steps of the GIL's switch
        # interval, and measured the import rather than the hub.
        clients[1].request("tools/call", {"name": "c0_echo", "arguments": {"text": "up"}})
        timed_lists(clients, 10)  # warm-up
        samples = timed_lists(clients, p.list_reps)
    finally:
        for client in clients:
            client.close()
        errlog.close()
    d, h = summary(samples[0]), summary(samples[1])
    return {"direct": d, "hub": h, "ratio": ratio(h["median_ms"], d["median_ms"])}


async def list_cpu_ms(conn: Conn, reps: int) -> float:
    """Server-side CPU per tools/list: the hub's own (the child is not asked), or the direct child's.

    Measured in a block of its own, since /proc counts CPU in clock ticks (10 ms): many calls per reading.
    """
    before = procs.cpu_s(conn.pid)
    for _ in range(reps):
        await list_tools(conn)
    return round((procs.cpu_s(conn.pid) - before) / reps * 1000, 3)


async def idle_cpu(conn: Conn, seconds: float) -> float:
    """CPU the hub burns with nothing to do, as % of one core."""
    before = procs.cpu_s(conn.pid)
    await anyio.sleep(seconds)
    return round((procs.cpu_s(conn.pid) - before) / seconds * 100, 2)


async def cold_start(run: Run, front: str, kind: str, n: int, p: Params) -> dict[str, Any]:
    """Process start -> first answered tools/list, and -> the full listing (every child's tools), alternating.

    Each round starts the hub on a new config (no cache: the first start ever), and over stdio then starts it
    again on the same config: a warm start, answered from what the first one kept (hub/warm_start.py).
    """
    expected = n * (p.tools + 3)
    hub_first, hub_full, direct_first, notified, warm_first, warm_listed, warm_call = [], [], [], [], [], [], []
    first_listed: list[int] = []
    for r in range(p.cold_reps):
        config = run.hub_config(kind, n, p.tools)
        for side in ("hub", "direct") if r % 2 == 0 else ("direct", "hub"):
            began = time.perf_counter()
            if side == "direct":
                async with direct(run, front, kind, p.tools) as conn:
                    await list_tools(conn)
                    direct_first.append(time.perf_counter() - began)
            else:
                async with hub(run, front, kind, n, p.tools, config=config) as conn:
                    listed = await list_tools(conn)
                    hub_first.append(time.perf_counter() - began)
                    first_listed.append(len(listed["tools"]))
                    await wait_listing(conn, expected)
                    hub_full.append(time.perf_counter() - began)
                    notified.append(conn.notes.count)
                if front == "stdio":
                    began = time.perf_counter()
                    async with hub(run, front, kind, n, p.tools, config=config) as conn:
                        listed = await list_tools(conn)
                        warm_first.append(time.perf_counter() - began)
                        warm_listed.append(len(listed["tools"]))
                        await call(conn, "echo", {"text": "first"})  # waits for its server to be up
                        warm_call.append(time.perf_counter() - began)
    d, f, full = (ms(statistics.median(x)) for x in (direct_first, hub_first, hub_full))
    res = {
        "direct_first_ms": d,
        "hub_first_ms": f,
        "hub_full_ms": full,
        "ratio_first": ratio(f, d),
        "ratio_full": ratio(full, d),
        "list_changed_seen": notified,
        # The first listing waits for the children while hub.startup_listing_wait lasts (default 5 s).
        "first_tools": first_listed,
        "expected_tools": expected,
    }
    if warm_first:
        warm = ms(statistics.median(warm_first))
        # The warm answer is the complete listing when every count reaches `expected`.
        res.update(hub_warm_first_ms=warm, ratio_warm_first=ratio(warm, d))
        warm_call_ms = ms(statistics.median(warm_call))
        res.update(hub_warm_call_ms=warm_call_ms, ratio_warm_call=ratio(warm_call_ms, d))
        res.update(warm_first_tools=warm_listed)
    return res


async def parallel_start(run: Run, p: Params) -> dict[str, Any]:
    """N raw children that sleep 1/N .. 1 x `parallel_slowest_s` before serving: is the hub's start their slowest or
    their sum? Against a direct connection to the slowest child alone, alternating, start -> its tools listed.

    The children's start costs no CPU here, unlike the cold rows (N interpreters starting on 2 cores), so what is
    left is how the hub starts them. First start: until the live listing has every child's tools. Warm start (the
    cached listing is complete at once): until every child has answered a call, each call waiting for its server.
    """
    n = p.parallel_children
    delays = [round(p.parallel_slowest_s * (i + 1) / n, 3) for i in range(n)]
    expected = n * (p.tools + 3)
    direct_s: list[float] = []
    first_s: list[float] = []
    warm_s: list[float] = []
    for r in range(p.parallel_reps):
        config = run.hub_config("raw", n, p.tools, delays)
        for side in ("hub", "direct") if r % 2 == 0 else ("direct", "hub"):
            began = time.perf_counter()
            if side == "direct":
                async with direct(run, "stdio", "raw", p.tools, delays[-1]) as conn:
                    await list_tools(conn)
                    direct_s.append(time.perf_counter() - began)
                continue
            async with hub(run, "stdio", "raw", n, p.tools, config=config) as conn:
                await wait_listing(conn, expected)
                first_s.append(time.perf_counter() - began)
            began = time.perf_counter()
            async with hub(run, "stdio", "raw", n, p.tools, config=config) as conn:
                with anyio.fail_after(LIMIT):
                    async with anyio.create_task_group() as tg:
                        for i in range(n):
                            tg.start_soon(call, replace(conn, prefix=f"c{i}_"), "echo", {"text": "up"})
                warm_s.append(time.perf_counter() - began)
    d, first, warm = (ms(statistics.median(x)) for x in (direct_s, first_s, warm_s))
    return {
        "children": n,
        "slowest_s": delays[-1],
        "sum_s": round(sum(delays), 3),
        "direct_slowest_ms": d,
        "hub_first_full_ms": first,
        "hub_warm_all_ms": warm,
        "ratio_first": ratio(first, d),
        "ratio_warm": ratio(warm, d),
    }


async def bench_front(run: Run, front: str, kind: str, p: Params, log: Callable[[str], None]) -> dict[str, Any]:
    """Every figure for one front (stdio / http) and one kind of child (sdk / raw)."""
    res: dict[str, Any] = {}
    log(f"[{front}/{kind}] sequential, throughput, 1 MiB (hub with 1 child vs direct)")
    async with direct(run, front, kind, p.tools) as d, hub(run, front, kind, 1, p.tools) as h:
        await wait_listing(h, p.tools + 3)
        conns = [d, h]
        if front == "stdio":  # the same calls through a relay with no MCP logic: what any extra hop costs
            async with floor(run, kind, p.tools) as f:
                res["seq_echo"] = await sequential(run, [*conns, f], p, "echo", {"text": "hello"}, p.seq_calls)
            res["seq_echo"]["ratio_floor_median"] = ratio(
                res["seq_echo"]["floor"]["median_ms"], res["seq_echo"]["direct"]["median_ms"]
            )
        else:
            res["seq_echo"] = await sequential(run, conns, p, "echo", {"text": "hello"}, p.seq_calls)
        log(f"  echo median {res['seq_echo']['direct']['median_ms']} vs {res['seq_echo']['hub']['median_ms']} ms")
        res["throughput"] = await throughput(conns, p)
        res["payload_bytes"] = size = MIB
        res["payload_1mib"] = await sequential(run, conns, p, "payload", {"bytes": size}, p.payload_reps)
        res["hub_idle_cpu_pct_1"] = await idle_cpu(h, p.idle_s)
        res["memory_1"] = {"hub": procs.tree_memory(h.pid), "direct": procs.tree_memory(d.pid)}
    res["list"], res["memory"], res["idle_cpu_pct"] = {}, {}, {}
    for n in p.list_children:
        log(f"[{front}/{kind}] tools/list with {n} children")
        same = n * (p.tools + 3) - 3  # a direct child listing as many tools as the hub (minus hub_health)
        async with (
            direct(run, front, kind, p.tools) as d,
            hub(run, front, kind, n, p.tools) as h,
            direct(run, front, kind, same) as big,
        ):
            big.label = "direct_same_size"
            await wait_listing(h, n * (p.tools + 3))
            row = await listing([d, h, big], p.list_reps)
            row["ratio"] = ratio(row["hub"]["median_ms"], row["direct"]["median_ms"])
            row["ratio_same_size"] = ratio(row["hub"]["median_ms"], row["direct_same_size"]["median_ms"])
            res["list"][str(n)] = row
            res["idle_cpu_pct"][str(n)] = await idle_cpu(h, p.idle_s)
            # Exercise the hub before reading its peak: a 1 MiB result through it.
            await call(h, "payload", {"bytes": res["payload_bytes"]})
            res["memory"][str(n)] = procs.tree_memory(h.pid)
        if front == "stdio":  # the same listing, read by a host without the SDK (its own processes)
            row["raw_client"] = await anyio.to_thread.run_sync(raw_listing, run, kind, n, p)
    res["cold"] = {}
    for n in p.cold_children if front == "stdio" or p.quick else (5,):
        log(f"[{front}/{kind}] cold start with {n} children")
        res["cold"][str(n)] = await cold_start(run, front, kind, n, p)
    if front == "stdio" and kind == "raw":
        log(f"[{front}/{kind}] parallel start, {p.parallel_children} children that sleep before serving")
        res["parallel_start"] = await parallel_start(run, p)
    return res


# ---- profile ------------------------------------------------------------------------------------------------


async def profile(run: Run, args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    """Sequential echo calls through a stdio hub (1 child), profiled with py-spy (sampling) or cProfile."""
    calls, tool = args.calls or 2000, args.profiler
    out = Path(args.profile_out or RESULTS / ("hub-pyspy.txt" if tool == "py-spy" else "hub.prof")).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    wrap = ["-m", "cProfile", "-o", str(out)] if tool == "cprofile" else None
    spy: subprocess.Popen[bytes] | None = None
    async with hub(run, "stdio", args.child, 1, 10, wrap=wrap) as h:
        await wait_listing(h, 13)
        for _ in range(50):
            await call(h, "echo", {"text": "hello"})
        if tool == "py-spy":
            spy_bin = shutil.which("py-spy") or str(Path(PY).with_name("py-spy"))
            spy = subprocess.Popen(
                [
                    spy_bin,
                    "record",
                    "--pid",
                    str(h.pid),
                    "--rate",
                    "500",
                    "--gil",
                    "--nonblocking",
                    "--format",
                    "raw",
                    "--duration",
                    "600",
                    "-o",
                    str(out),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
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


# ---- entry --------------------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    def sh(cmd: str) -> str:
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": sh("nproc"),
        "lscpu": sh("lscpu | head -15"),
        "python": platform.python_version(),
        "mcp": importlib.metadata.version("mcp"),
        "platform": platform.platform(),
        "loadavg_start": os.getloadavg(),
        # What was measured: other work may change hub/ between runs (and even during one).
        "git_commit": sh(f"git -C {REPO} rev-parse --short HEAD"),
        "git_dirty": sh(f"git -C {REPO} status --short hub").splitlines(),
    }


async def amain(args: argparse.Namespace) -> int:
    run = Run()

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    try:
        if args.profile:
            info = await profile(run, args, log)
            print(json.dumps(info))
            from bench.profile_report import report_cprofile, report_pyspy

            target = Path(info["output"])
            if target.exists():
                print(report_cprofile(target) if args.profiler == "cprofile" else report_pyspy(target))
            return 0
        p = Params.make(args.quick, args.tools)
        if args.calls:
            p.seq_calls = args.calls
        report: dict[str, Any] = {"machine": machine(), "params": p.__dict__, "results": {}}
        began = time.monotonic()
        plan = [("stdio", "sdk"), ("stdio", "raw"), ("http", "sdk")]
        for front, kind in plan:
            if args.only and f"{front}/{kind}" not in args.only:
                continue
            report["results"][f"{front}/{kind}"] = await bench_front(run, front, kind, p, log)
        report["machine"]["loadavg_end"] = os.getloadavg()
        report["machine"]["duration_s"] = round(time.monotonic() - began, 1)
        out = Path(args.out) if args.out else RESULTS / ("quick.json" if args.quick else "latest.json")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(render_table(report))
        log(f"results written to {out}")
        return 0
    finally:
        run.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke mode: a few seconds per section")
    parser.add_argument("--tools", type=int, default=10, help="realistic tools per child besides echo/payload/sleep")
    parser.add_argument("--calls", type=int, default=0, help="sequential calls (default 1000, quick 100, profile 2000)")
    parser.add_argument("--only", action="append", help="run only stdio/sdk, stdio/raw or http/sdk (repeatable)")
    parser.add_argument("--out", help="JSON output (default bench/results/latest.json, quick: quick.json)")
    parser.add_argument("--profile", action="store_true", help="profile the hub over sequential echo calls (stdio)")
    parser.add_argument("--profiler", choices=["py-spy", "cprofile"], default="py-spy", help="for --profile")
    parser.add_argument("--child", choices=["sdk", "raw"], default="raw", help="child for --profile (default raw)")
    parser.add_argument("--profile-out", help="default bench/results/hub-pyspy.txt or hub.prof")
    args = parser.parse_args(argv)
    return anyio.run(amain, args)
