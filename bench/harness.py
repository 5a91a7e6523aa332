"""What every measurement stands on: the run's directory and processes, the hubs measured, connections, primitives.

A *side* is one way of reaching a child: `direct` (the client spawns the child itself), `hub` (this checkout's hub
in front of it), `baseline` (another checkout's hub, `--baseline DIR`), and a few helpers (`floor`, the relay with
no MCP logic; `direct_same_size`, a child listing as many tools as a hub). Every side is driven by the same client
(the SDK's `mcp.Client`, requests sent with `session.send_request` and results read as plain dicts), so the client
costs the same everywhere and the differences are the paths. Every wait is bounded (LIMIT) and every process
started here is stopped on the way out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import yaml
from mcp import Client, StdioServerParameters
from mcp.client import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

from bench import procs

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
PY = sys.executable  # this checkout's venv: it runs the children on every side, and this checkout's hub
RAW: Any = TypeAdapter(dict[str, Any])
# `sh -c SLEEP_THEN_RUN SECONDS COMMAND ARG...`: what the hub sends meanwhile waits in the pipe.
SLEEP_THEN_RUN = 'sleep "$0" && exec "$@"'
LIMIT = 180.0  # the bound on any single wait (a hub with 20 SDK children starts in ~15 s on 2 cores)
MIB = 1024 * 1024
# Each bench child lists echo, payload and sleep besides its K realistic tools.
FIXED_TOOLS = 3


# ---- the hubs measured --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HubCheckout:
    """A hub to measure: the checkout it runs from (`python -m hub serve`, cwd there) with its own interpreter.

    Its children are always this checkout's bench children, run by this venv's python, so that both hubs relay
    the same processes.
    """

    label: str  # the side's name in the results: "hub" or "baseline"
    root: Path
    python: str
    server_settings: dict[str, Any] = field(default_factory=dict)  # added to each server of its generated configs
    empty_cache: bool = False  # give each start a new, empty HUB_CACHE_DIR (a hub with a warm-start cache)


THIS_HUB = HubCheckout("hub", REPO, PY)
# The baseline's configs raise max_concurrency from its default of 16 to the most calls the bench keeps in flight,
# as its own bench did: at 16 a 10 ms tool is capped at 1,600 calls/s by that limit, and what is compared is the
# cost of its path. The hub of this checkout runs on its defaults.
BASELINE_MAX_CONCURRENCY = 64


def baseline_checkout(root: Path) -> HubCheckout:
    """The hub of another checkout (a git worktree with its own venv at ROOT/.venv)."""
    root = root.resolve()
    python = root / ".venv" / "bin" / "python"
    if not (root / "hub" / "__main__.py").exists() or not python.exists():
        raise SystemExit(
            f"bench: --baseline {root}: expected a checkout of the hub with its own venv ({python}); make one with "
            f"`git worktree add {root} COMMIT && python3 -m venv {root}/.venv && "
            f"{root}/.venv/bin/pip install -e {root}`"
        )
    settings = {"max_concurrency": BASELINE_MAX_CONCURRENCY}
    return HubCheckout("baseline", root, str(python), settings, empty_cache=True)


# ---- the run ------------------------------------------------------------------------------------------------


class Run:
    """Owns the temporary directory, knows the hubs to measure, and remembers every pid started (to reap strays)."""

    def __init__(self, hubs: list[HubCheckout] | None = None) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="hub-bench-"))
        self.marker = self.dir.name  # in the command line of every hub and child started here
        self.hubs = hubs or [THIS_HUB]
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

    def hub_config(
        self, checkout: HubCheckout, kind: str, n: int, tools: int, delays: list[float] | None = None
    ) -> Path:
        """A new servers.yaml of n children c0..c{n-1} for `checkout`'s hub."""
        servers = {}
        for i in range(n):
            command, args = self.child_command(kind, tools, f"c{i}", delays[i] if delays else 0.0)
            servers[f"c{i}"] = {"command": command, "args": args, "cwd": str(REPO), **checkout.server_settings}
        path = self.dir / f"{self.name(f'{checkout.label}-{kind}-{n}-')}.yaml"
        path.write_text(yaml.safe_dump({"servers": servers}, sort_keys=False))
        return path

    def hub_env(self, checkout: HubCheckout) -> dict[str, str] | None:
        """Environment added for one start of `checkout`'s hub: an empty cache directory of its own, if it has one."""
        if not checkout.empty_cache:
            return None
        return {"HUB_CACHE_DIR": tempfile.mkdtemp(prefix="cache-", dir=self.dir)}

    def cleanup(self) -> None:
        strays = procs.reap_strays(self.seen, self.marker)
        if strays:
            print(f"bench: killed {len(strays)} stray process(es): {strays}", file=sys.stderr)
        shutil.rmtree(self.dir, ignore_errors=True)


# ---- connections --------------------------------------------------------------------------------------------


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


@dataclass
class Conn:
    """One connected side: the client, the process it talks to (a hub or a child), and how tools are named."""

    label: str
    client: Client
    pid: int
    prefix: str  # "" direct, "c0_" through a hub
    notes: Notifier

    def tool(self, name: str) -> str:
        return self.prefix + name

    @property
    def through_hub(self) -> bool:
        return bool(self.prefix)


Connecting = AbstractAsyncContextManager[Conn]


async def _sampling(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message="bench: no model here")


async def _roots(context: ClientRequestContext) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[])


def _client(transport: Any, notes: Notifier) -> Client:
    """The bench's host. It declares sampling and roots (its callbacks), as hosts that connect over HTTP do (VS Code);
    over HTTP a hub once gave such hosts' calls a slower path. No bench child asks for either."""
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
    command: str = PY,
    cwd: Path = REPO,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Conn]:
    """Spawn `command argv` over stdio through the SDK's own stdio_client (it closes stdin, then TERM, then KILL).

    `env` is added to the SDK's default environment for a spawned server (HOME, PATH, ...), as a host does."""
    notes = Notifier()
    errlog = (run.dir / f"{run.name('stderr-')}.log").open("w")
    params = StdioServerParameters(command=command, args=argv, cwd=str(cwd), env=env)
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


def write_results(out: str | None, args: argparse.Namespace, results: Any) -> None:
    """`--out F` of a bench script: its arguments and figures as JSON in F (nothing without it)."""
    if out:
        Path(out).write_text(json.dumps({"args": vars(args), "results": results}, indent=2) + "\n")
        print(f"results written to {out}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def http_conn(
    run: Run,
    label: str,
    argv: list[str],
    prefix: str,
    *,
    port_file: Path | None = None,
    port: int = 0,
    python: str = PY,
    cwd: Path = REPO,
    env: dict[str, str] | None = None,
) -> AsyncIterator[Conn]:
    """Start `python argv` serving Streamable HTTP, wait (bounded) until it accepts, connect the client."""
    log = (run.dir / f"{run.name('http-')}.log").open("w")
    process = subprocess.Popen(
        [python, *argv],
        cwd=cwd,
        env={**os.environ, **env} if env else None,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
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


def direct(run: Run, front: str, kind: str, tools: int, delay: float = 0.0, label: str = "direct") -> Connecting:
    """The client spawns the child itself (over stdio, or served over HTTP)."""
    name = run.name("direct")
    if front == "stdio":
        command, args = run.child_command(kind, tools, name, delay)
        return stdio_conn(run, label, args, f"{run.marker}-{name}", "", command=command)
    assert not delay, "only the stdio rows start delayed children"
    port_file = run.dir / f"{name}.port"
    argv = [*run.child_args(kind, tools, name), "--http", "--port-file", str(port_file)]
    return http_conn(run, label, argv, "", port_file=port_file)


def hub(run: Run, checkout: HubCheckout, front: str, config: Path, wrap: list[str] | None = None) -> Connecting:
    """`checkout`'s hub serving `config` (from `run.hub_config`), its call log at info in a file, as deployed."""
    log = run.dir / f"{config.stem}.hub.log"
    argv = [*(wrap or []), "-m", "hub", "serve", "--config", str(config), "--log-file", str(log)]
    env = run.hub_env(checkout)
    if front == "stdio":
        return stdio_conn(
            run, checkout.label, argv, str(config), "c0_", command=checkout.python, cwd=checkout.root, env=env
        )
    port = free_port()
    argv = [*argv, "--http", f"127.0.0.1:{port}"]
    return http_conn(run, checkout.label, argv, "c0_", port=port, python=checkout.python, cwd=checkout.root, env=env)


def floor(run: Run, kind: str, tools: int) -> Connecting:
    """The child behind bench/relay_floor.py: a hop with no MCP logic, over stdio."""
    name = run.name("floor")
    argv = ["-m", "bench.relay_floor", PY, *run.child_args(kind, tools, name)]
    return stdio_conn(run, "floor", argv, f"{run.marker}-{name}", "")


def hub_child_pid(conn: Conn, marker: str) -> int | None:
    """A hub's child c0 (by its command line), for its CPU time."""
    for pid in procs.descendants(conn.pid):
        if procs.cmdline(pid).endswith(f"--name {marker}-c0 "):
            return pid
    return None


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


async def interleaved(conns: list[Conn], reps: int, op: Callable[[Conn], Awaitable[Any]]) -> dict[str, list[float]]:
    """Run `op` reps times on each connection, in order A B C / C B A alternately, timing each."""
    samples: dict[str, list[float]] = {c.label: [] for c in conns}
    for i in range(reps):
        for conn in alternate(conns, i):
            began = time.perf_counter()
            await op(conn)
            samples[conn.label].append(time.perf_counter() - began)
    return samples


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def median_ms(samples: list[float]) -> float:
    return ms(statistics.median(samples))


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


def alternate(items: list[Any], round_: int) -> list[Any]:
    """`items` in order on even rounds and reversed on odd ones, so that no side always goes first."""
    return items if round_ % 2 == 0 else items[::-1]
