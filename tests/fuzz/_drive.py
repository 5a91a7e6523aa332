"""Driving a real `hub serve` with raw bytes, and watching what it does: every answer on the wire counted by id,
its memory (RSS of its process) and its log.

Over stdio the test writes bytes to the hub's stdin and reads its stdout itself: nothing between the test and the
hub parses, validates or drops anything. Every line the hub writes must be strict JSON (no NaN, no Infinity) and a
JSON-RPC message.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psutil
from anyio.abc import Process

from tests.fuzz._cases import CHILD_MAX_RESULT, HOST_CAPABILITIES, PREFIX, norm
from tests.support.children import python_child, write_config
from tests.support.paths import REPO
from tests.support.processes import serve_http_command, wait_listening
from tests.support.system import free_port

# Log events that mean the hub itself failed on a message: the fuzz suite fails on any of them.
FAULT_EVENTS = ("host_message_failed", "child_message_failed", "relay_task_failed")
# No log line may be longer than this: fields copied from input are bounded (the longest are child stderr lines,
# 2,000 characters, and call-log error messages, 1,000).
LOG_LINE_LIMIT = 16 * 1024
# How often a hub's RSS is sampled while a test runs.
RSS_SAMPLE = 0.05
# How long a batch's answers may take to arrive once it is written.
BATCH_WAIT = 60.0
HOSTILE = python_child("tests.fuzz.hostile_child")


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


STRICT = json.JSONDecoder(parse_constant=_refuse)


def fuzz_config(tmp: Path, hub: dict[str, Any] | None = None, **server: Any) -> Path:
    """The hostile child as `fz`: small max_result_bytes (its oversized lines stay cheap), a short timeout (a call
    whose request to the host is never answered ends with it); `server` overrides these."""
    child = {**HOSTILE, "prefix": PREFIX, "max_result_bytes": CHILD_MAX_RESULT, "timeout": 3, **server}
    return write_config(tmp, {"fz": child}, {"watch": False, **(hub or {})})


def rss(pid: int) -> int:
    return int(psutil.Process(pid).memory_info().rss)


class Peak:
    """The highest RSS of a process, sampled every RSS_SAMPLE seconds while `watch` runs (until cancelled)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.bytes = 0

    async def watch(self) -> None:
        with suppress(psutil.Error):
            while True:
                self.bytes = max(self.bytes, rss(self.pid))
                await anyio.sleep(RSS_SAMPLE)


@dataclass
class Wire:
    """What the hub wrote: answers by id, and everything else."""

    answers: Counter[Any] = field(default_factory=Counter)
    by_id: dict[Any, list[dict[str, Any]]] = field(default_factory=dict)
    other: int = 0  # notifications and requests of the hub's
    asked: list[dict[str, Any]] = field(default_factory=list)  # the hub's requests, for a host that answers them
    asks: int = 0
    bad: list[bytes] = field(default_factory=list)  # lines that are not strict JSON-RPC
    changed: anyio.Event = field(default_factory=anyio.Event)

    def take(self, line: bytes) -> None:
        try:
            message = STRICT.decode(line.decode("utf-8"))
        except RecursionError:  # a child's result nested deeper than this process decodes: its id comes first
            message = _head(line)
        except ValueError:
            message = None
        if message is None:
            self.bad.append(line[:300])
            return
        if type(message) is not dict or message.get("jsonrpc") != "2.0":
            self.bad.append(line[:300])
        elif "method" in message:
            self.other += 1
            if "id" in message:
                self.asks += 1
                self.asked.append(message)
                self.changed.set()
                self.changed = anyio.Event()
        elif "result" in message or "error" in message:
            request_id = message.get("id")
            key = _key(request_id)
            self.answers[key] += 1
            self.by_id.setdefault(key, []).append(message)
            self.changed.set()
            self.changed = anyio.Event()
        else:
            self.bad.append(line[:300])


_ANSWER_HEAD = re.compile(r'\{"jsonrpc":"2\.0","id":')


def _head(line: bytes) -> dict[str, Any] | None:
    """The start of an answer too deep to decode here, as the hub writes it: `{"jsonrpc":"2.0","id":ID,"result":`."""
    text = line.decode("utf-8")
    if _ANSWER_HEAD.match(text) is None:
        return None
    request_id, end = STRICT.raw_decode(text, len('{"jsonrpc":"2.0","id":'))
    for key in ("result", "error"):
        if text.startswith(f',"{key}":', end):
            return {"jsonrpc": "2.0", "id": request_id, key: "(nested too deeply to decode in the test)"}
    return None


def _key(request_id: Any) -> Any:
    """Ids as Counter keys: `1` and `True` hash alike, and no answer may carry a bool; surrogate pairs joined."""
    return ("bool", request_id) if type(request_id) is bool else norm(request_id)


class LogWatch:
    """Reads the hub's log file as it grows: faults, the longest line, bytes written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.longest = 0
        self.longest_event = ""
        self.faults: list[str] = []

    def read(self) -> int:
        """New bytes since the last call; each new line checked."""
        if not self.path.exists():
            return 0
        with self.path.open("rb") as file:
            file.seek(self.offset)
            data = file.read()
        end = data.rfind(b"\n") + 1
        data = data[:end]
        self.offset += end
        for line in data.splitlines():
            event = ""
            with suppress(ValueError):
                event = str(json.loads(line).get("event", ""))
            if len(line) > self.longest:
                self.longest, self.longest_event = len(line), event[:80]
            if event in FAULT_EVENTS or "Traceback" in event or event.startswith("Exception in"):
                self.faults.append(line[:2000].decode("utf-8", "replace"))
        return end


Responder = Callable[[dict[str, Any]], bytes | None]


@dataclass
class StdioHub:
    process: Process
    wire: Wire
    log: LogWatch
    pid: int
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    replies: int = 0

    async def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        async with self.lock:
            await self.process.stdin.send(data)

    async def answer_asks(self, responder: Responder) -> None:
        """Answer the hub's requests to the host with what `responder` says (None: never), until cancelled."""
        wire = self.wire
        while True:
            changed = wire.changed
            while wire.asked:
                reply = responder(wire.asked.pop(0))
                if reply is not None:
                    self.replies += 1
                    await self.write(reply)
            await changed.wait()

    async def request(self, request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A well-formed request; its one answer (bounded wait)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.write(json.dumps(message).encode() + b"\n")
        await self.wait_for(Counter({request_id: 1}), 30.0)
        return self.wire.by_id[request_id][-1]

    async def wait_for(self, expect: Counter[Any], limit: float, relaxed: frozenset[Any] = frozenset()) -> list[Any]:
        """Wait (bounded) until every id of `expect` has its answers; returns the ids still short at the end."""
        wire = self.wire
        short: list[Any] = []
        with anyio.move_on_after(limit):
            while True:
                changed = wire.changed
                short = [i for i, n in expect.items() if wire.answers[_key(i)] < n and i not in relaxed]
                if not short or self.process.returncode is not None:
                    break
                await changed.wait()
        return short

    def alive(self) -> bool:
        return self.process.returncode is None

    def rss(self) -> int:
        return rss(self.pid)


async def _read(process: Process, wire: Wire) -> None:
    assert process.stdout is not None
    pending = b""
    with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        while True:
            pending += await process.stdout.receive(1 << 20)
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    wire.take(line)


@asynccontextmanager
async def stdio_hub(
    config: Path, log_file: Path, *extra: str, responder: Responder | None = None
) -> AsyncIterator[StdioHub]:
    """`hub serve` over stdio, its stdout read into a `Wire`; initialized as a host, its child's tools listed.

    With `responder`, the host declares sampling, elicitation and roots, and answers the hub's requests with it.
    """
    args = [sys.executable, "-m", "hub", "serve", "--config", str(config), "--log-file", str(log_file), *extra]
    with log_file.with_suffix(".err").open("wb") as err:
        process = await anyio.open_process(args, cwd=REPO, stderr=err)
        wire = Wire()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_read, process, wire)
                hub = StdioHub(process, wire, LogWatch(log_file), process.pid)
                params = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": HOST_CAPABILITIES if responder else {},
                    "clientInfo": {"name": "fuzz", "version": "1"},
                }
                if responder is not None:
                    tg.start_soon(hub.answer_asks, responder)
                answer = await hub.request("init", "initialize", params)
                assert "result" in answer, answer
                await hub.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
                await wait_for_tool(hub, f"{PREFIX}_emit")
                yield hub
                tg.cancel_scope.cancel()
        finally:
            await stop(process)


async def wait_for_tool(hub: StdioHub, name: str, limit: float = 30.0) -> None:
    with anyio.fail_after(limit):
        n = 0
        while True:
            n += 1
            answer = await hub.request(f"list-{time.monotonic_ns()}-{n}", "tools/list")
            if name in {t.get("name") for t in answer["result"]["tools"]}:
                return
            await anyio.sleep(0.05)  # the child is still starting; the hub says list_changed, but polling is simpler


async def stop(process: Process) -> None:
    """End the hub (bounded): stdin closed, then SIGTERM, then SIGKILL."""
    if process.stdin is not None:
        with suppress(Exception):
            await process.stdin.aclose()
        with anyio.move_on_after(10, shield=True):
            await process.wait()
    if process.returncode is None:
        with suppress(ProcessLookupError):
            process.terminate()
        with anyio.move_on_after(10, shield=True):
            await process.wait()
    if process.returncode is None:
        with suppress(ProcessLookupError):
            process.kill()
        with anyio.move_on_after(5, shield=True):
            await process.wait()


def hub_command(config: Path, log_file: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "hub", "serve", "--config", str(config), "--log-file", str(log_file), *extra]


# ---- HTTP --------------------------------------------------------------------------------------------------------


@dataclass
class HttpHub:
    url: str
    port: int
    process: Process
    log: LogWatch

    def alive(self) -> bool:
        return self.process.returncode is None

    def rss(self) -> int:
        return rss(self.process.pid)


@asynccontextmanager
async def http_hub(config: Path, log_file: Path) -> AsyncIterator[HttpHub]:
    """`hub serve --http` on 127.0.0.1 (a free port), once it accepts connections (bounded); stopped in the end."""
    port = free_port()
    args = serve_http_command(config, port, log_file)
    with log_file.with_suffix(".err").open("wb") as err:
        process = await anyio.open_process(
            args, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
        )
        try:
            await wait_listening(process, port, 30)
            yield HttpHub(f"http://127.0.0.1:{port}/mcp", port, process, LogWatch(log_file))
        finally:
            await stop(process)


def http_answers(content_type: str, body: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """The JSON-RPC answers in an HTTP response (a JSON object or array, or SSE events), and a problem if the
    body is not what its content type says."""
    messages: list[Any] = []
    try:
        if content_type.startswith("application/json") and body:
            value = _decode_answer(body)
            messages = value if isinstance(value, list) else [value]
        elif content_type.startswith("text/event-stream"):
            messages = [_decode_answer(line[5:].strip()) for line in body.splitlines() if line.startswith(b"data:")]
    except (ValueError, UnicodeDecodeError) as exc:
        return [], f"not strict JSON ({exc}): {body[:200]!r}"
    answers = [m for m in messages if isinstance(m, dict) and "method" not in m and ("result" in m or "error" in m)]
    return answers, None


def _decode_answer(data: bytes) -> Any:
    try:
        return STRICT.decode(data.decode("utf-8"))
    except RecursionError:
        head = _head(data)
        if head is None:
            raise ValueError("too deep, and not an answer") from None
        return head


PROTOCOL = "2025-11-25"


class Session:
    """The fuzz's handshake-era session, opened by hand."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url
        self.headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    async def open(self) -> None:
        info = {"name": "fuzz", "version": "1"}
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": info}
        answer = await self.post({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params})
        assert answer.status_code == 200, answer.text
        self.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = PROTOCOL
        assert (await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
        with anyio.fail_after(30):
            while True:
                listed = await self.post({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
                answers, _ = http_answers(listed.headers.get("content-type", ""), listed.content)
                if f"{PREFIX}_emit" in {t["name"] for t in answers[0]["result"]["tools"]}:
                    return
                await anyio.sleep(0.05)  # the child is still starting

    async def post(self, message: dict[str, Any]) -> httpx2.Response:
        return await self.http.post(self.url, content=json.dumps(message).encode(), headers=self.headers)
