"""Shared plumbing for the fault-injection tests: a hub whose wire is counted, its health, its log, the process table.

`running_hub()` spawns `hub serve` (stdio) exactly like tests.support.mcp_client.connect_hub, but through a
transport that counts every request the host sends and every response it receives, by JSON-RPC id: "every request
gets exactly one response" is checked on the wire (`Hubbed.assert_each_request_answered_once()`), not inferred
from the SDK, which would drop a duplicate response silently.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.message import SessionMessage
from pydantic import TypeAdapter

from tests.support.children import python_child, write_config
from tests.support.mcp_client import Host, connect_hub, hub_params
from tests.support.paths import REPO
from tests.support.waits import WAIT

RAW: Any = TypeAdapter(dict[str, Any])
KITCHEN = python_child("tests.children.kitchen")
# "Within a few seconds": the hub's own shutdown steps are 2 s (stdin) + 2 s (SIGTERM) + 2 s (SIGKILL) per child.
GONE_WAIT = 10.0
# A bounded shutdown: the same steps, children stopped concurrently, plus the interpreter's exit.
SHUTDOWN_WAIT = 15.0
# "At once": far below any timeout in play (the default request timeout is 120 s).
AT_ONCE = 10.0


def fault_child(module: str, *args: str, **extra: Any) -> dict[str, Any]:
    """A child from tests/faults/children, run with this interpreter from the repo root."""
    return python_child(f"tests.faults.children.{module}", *args, **extra)


# ---- the wire ------------------------------------------------------------------------------------------------


@dataclass
class Wire:
    """Requests sent by the host and responses it received, by id."""

    sent: Counter[Any] = field(default_factory=Counter)
    answered: Counter[Any] = field(default_factory=Counter)

    def pending(self) -> set[Any]:
        return {i for i in self.sent if self.answered[i] == 0}

    def problems(self) -> list[str]:
        out = [f"request {i} sent {n} times" for i, n in self.sent.items() if n != 1]
        out += [f"request {i} answered {self.answered[i]} times" for i in self.sent if self.answered[i] != 1]
        out += [f"response {i} for a request never sent" for i in self.answered if i not in self.sent]
        return out


@asynccontextmanager
async def counted_stdio(params: StdioServerParameters, wire: Wire) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport with both directions counted."""
    async with stdio_client(params) as (read, write), anyio.create_task_group() as tg:
        in_send, in_recv = anyio.create_memory_object_stream[SessionMessage | Exception](1000)
        out_send, out_recv = anyio.create_memory_object_stream[SessionMessage](1000)

        async def inbound() -> None:
            async with in_send:
                async for item in read:
                    if isinstance(item, SessionMessage) and isinstance(
                        item.message, types.JSONRPCResponse | types.JSONRPCError
                    ):
                        wire.answered[item.message.id] += 1
                    await in_send.send(item)

        async def outbound() -> None:
            async with out_recv:
                async for item in out_recv:
                    if isinstance(item.message, types.JSONRPCRequest):
                        wire.sent[item.message.id] += 1
                    await write.send(item)

        tg.start_soon(inbound)
        tg.start_soon(outbound)
        try:
            yield in_recv, out_send
        finally:
            tg.cancel_scope.cancel()


# ---- a running hub -----------------------------------------------------------------------------------------


@dataclass
class Hubbed:
    client: Client
    host: Host
    wire: Wire
    config: Path
    log_file: Path
    tmp: Path

    async def call(
        self, name: str, arguments: dict[str, Any] | None = None, progress: ProgressFnT | None = None
    ) -> dict[str, Any]:
        """One tools/call; the raw result as the hub sent it."""
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments or {}))
        result: dict[str, Any] = await self.client.session.send_request(request, RAW, progress_callback=progress)
        return result

    async def health(self) -> dict[str, Any]:
        result = await self.call("hub_health")
        assert not result.get("isError"), result
        report: dict[str, Any] = result["structuredContent"]
        return report

    async def server(self, name: str) -> dict[str, Any]:
        report = await self.health()
        entry: list[dict[str, Any]] = [s for s in report["servers"] if s["name"] == name]
        assert entry, f"hub_health does not list server {name!r}: {report['servers']}"
        return entry[0]

    async def wait_server(
        self, name: str, predicate: Callable[[dict[str, Any]], bool], what: str, limit: float = WAIT
    ) -> dict[str, Any]:
        """Poll hub_health (bounded) until the server's entry satisfies `predicate`."""
        seen: dict[str, Any] = {}
        try:
            with anyio.fail_after(limit):
                while True:
                    seen = await self.server(name)
                    if predicate(seen):
                        return seen
                    await anyio.sleep(0.1)
        except TimeoutError:
            raise AssertionError(f"server {name!r} never {what} within {limit}s; last seen: {seen}") from None

    async def tool_names(self) -> set[str]:
        return {t.name for t in (await self.client.list_tools()).tools}

    async def wait_listing(self, present: Iterable[str] = (), absent: Iterable[str] = (), limit: float = WAIT) -> None:
        """List tools until `present` are listed and `absent` are not; re-listed on every notification."""
        want, gone = set(present), set(absent)
        names: set[str] = set()
        try:
            with anyio.fail_after(limit):
                while True:
                    changed = self.host.changed
                    names = await self.tool_names()
                    if want <= names and not (gone & names):
                        return
                    await changed.wait()
        except TimeoutError:
            raise AssertionError(
                f"listing never had {sorted(want - names)} / dropped {sorted(gone & names)} within {limit}s"
            ) from None

    def tools_changed(self) -> int:
        """How many notifications/tools/list_changed the host got so far."""
        return sum(isinstance(n, types.ToolListChangedNotification) for n in self.host.notifications)

    def log_lines(self) -> list[dict[str, Any]]:
        if not self.log_file.exists():
            return []
        out = []
        for line in self.log_file.read_text().splitlines():
            with suppress(ValueError):
                if line.startswith("{"):
                    out.append(json.loads(line))
        return out

    def events(self, event: str, **match: Any) -> list[dict[str, Any]]:
        return [e for e in self.log_lines() if e.get("event") == event and all(e.get(k) == v for k, v in match.items())]

    async def wait_event(self, event: str, limit: float = WAIT, **match: Any) -> dict[str, Any]:
        return await wait_log_event(self.log_file, event, limit, **match)

    async def assert_kitchen_fine(self, prefix: str = "kitchen") -> None:
        """The hub survives and an undisturbed child still answers."""
        with anyio.fail_after(WAIT):
            echoed = await self.call(f"{prefix}_echo", {"text": "still here"})
            assert not echoed.get("isError") and echoed["content"][0]["text"] == "still here", echoed
            state = await self.server(prefix)
            assert state["state"] == "ready" and state["restarts"] == 0, state

    def assert_each_request_answered_once(self) -> None:
        assert self.wire.sent, "the wire counter saw no request at all"
        problems = self.wire.problems()
        assert not problems, "; ".join(problems[:20])


@asynccontextmanager
async def running_hub(
    tmp: Path,
    servers: dict[str, Any],
    hub: dict[str, Any] | None = None,
    *extra: str,
    ready: Iterable[str] = (),
) -> AsyncIterator[Hubbed]:
    """`hub serve` over stdio with `servers`; waits (bounded) until the tools in `ready` are listed."""
    config = write_config(tmp, servers, hub)
    log_file = tmp / "hub.log"
    host = Host()
    wire = Wire()
    params = hub_params(config, log_file, "--log-level", "debug", *extra)
    # counted_stdio is a Transport: an async context manager of the two streams, counting every message.
    async with connect_hub(counted_stdio(params, wire), host) as client:
        session = Hubbed(client, host, wire, config, log_file, tmp)
        if ready:
            await session.wait_listing(present=ready)
        yield session


def first_text(result: dict[str, Any]) -> str:
    content = result.get("content") or [{}]
    return str(content[0].get("text", ""))


def error_text(result: dict[str, Any]) -> str:
    """The text of an isError result (asserting that it is one)."""
    assert result.get("isError") is True, f"expected an isError result, got {str(result)[:500]}"
    return first_text(result)


def names_seconds(text: str, seconds: float) -> bool:
    """Does `text` state a duration of `seconds` ("2s", "2.0 s", "2 seconds")?"""
    number = re.escape(f"{seconds:g}")
    return re.search(rf"(?<![\d.]){number}(?:\.0+)?\s*(?:s\b|sec|second)", text) is not None


async def wait_log_event(log_file: Path, event: str, limit: float = WAIT, **match: Any) -> dict[str, Any]:
    """Bounded wait for a log line of `event` (another process writes the file: polled)."""
    try:
        with anyio.fail_after(limit):
            while True:
                path = anyio.Path(log_file)
                if await path.exists():
                    for line in (await path.read_text()).splitlines():
                        with suppress(ValueError):
                            entry = json.loads(line)
                            if entry.get("event") == event and all(entry.get(k) == v for k, v in match.items()):
                                return dict(entry)
                await anyio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(f"no {event!r} {match or ''} in {log_file} within {limit}s") from None


# ---- the process table -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proc:
    pid: int
    start: int  # clock ticks since boot: tells a process from a later one that reused its pid
    cmdline: str


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, starttime) of a process, None if there is none."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    rest = raw[raw.rindex(")") + 2 :].split()
    return rest[0], int(rest[1]), int(rest[19])


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def proc(pid: int) -> Proc | None:
    stat = _stat(pid)
    return Proc(pid, stat[2], _cmdline(pid)) if stat else None


def descendants(root: int) -> dict[int, Proc]:
    """Every live process below `root` in the process tree, right now."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat and stat[0] not in "ZX":
                parent[int(entry.name)] = stat[1]
    found: dict[int, Proc] = {}
    frontier = [root]
    while frontier:
        current = frontier.pop()
        for pid, ppid in parent.items():
            if ppid == current and pid not in found:
                p = proc(pid)
                if p is not None:
                    found[pid] = p
                    frontier.append(pid)
    return found


def alive(p: Proc) -> bool:
    """The same process (not a reuse of its pid) exists and is not a zombie."""
    stat = _stat(p.pid)
    return stat is not None and stat[2] == p.start and stat[0] not in "ZX"


async def wait_all_gone(procs: Iterable[Proc], limit: float = GONE_WAIT) -> list[Proc]:
    """Poll the process table (bounded); returns the processes still alive after `limit` (empty: all gone)."""
    left = list(procs)
    deadline = time.monotonic() + limit
    while left and time.monotonic() < deadline:
        await anyio.sleep(0.1)
        left = [p for p in left if alive(p)]
    return left


def kill_leftovers(procs: Iterable[Proc]) -> None:
    """Cleanup after a failed no-orphans check: never leave processes behind on the test machine."""
    for p in procs:
        if alive(p):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(p.pid, signal.SIGKILL)


def hub_pid(config: Path) -> int:
    """The pid of the `hub serve --config CONFIG` that this test process spawned (the SDK hides it)."""
    me = os.getpid()
    for pid, p in descendants(me).items():
        if "hub" in p.cmdline and "serve" in p.cmdline and str(config) in p.cmdline and _stat(pid):
            stat = _stat(pid)
            if stat and stat[1] == me:
                return pid
    raise AssertionError(f"no `hub serve --config {config}` child of this test process")


def hub_command(config: Path, log_file: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "hub",
        "serve",
        "--config",
        str(config),
        "--log-file",
        str(log_file),
        "--log-level",
        "debug",
        *extra,
    ]


__all__ = ["REPO", "WAIT"]
