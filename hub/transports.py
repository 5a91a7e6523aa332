"""Connections to children: a `ServerConfig` becomes an MCP transport (an async context manager of streams).

The stdio transport is the hub's own rather than the SDK's `stdio_client` because a supervisor needs what
that one hides: the process's exit code or signal, its pid, a bounded tail of its stderr for error messages,
and tolerance of a child that prints non-JSON on stdout (logged and skipped, not fatal).

A stdio child's process is started by hub/spawn.py (which also says what its environment is), now or, for a
child's first connection, before the hub imported the SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, Protocol

import anyio
import mcp_types as types
import structlog
from anyio.abc import Process
from mcp.client._transport import TransportStreams
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage

from hub.config import ServerConfig
from hub.first_start import INIT_ID, LIST_ID, Handshake
from hub.identity import CLIENT_PARAMS
from hub.spawn import Spawned, end_unadopted, launch_for, spawn, stop
from hub.wire import decode_answer, message_from, read_now

# Lines of a child's stderr kept for error messages.
STDERR_TAIL_LINES = 20
# After the process exits, how long its last output may take to be read before the connection is closed.
DRAIN_AFTER_EXIT = 0.5
# Bytes kept from each end of an oversized line, to find its request id.
_EDGE = 512
READ_CHUNK = 1 << 20
_ID_AT_START = re.compile(rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_ID_AT_END = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$')


class ProcessGroups(Protocol):
    """Where child process groups are registered so that they can be ended even if the hub is killed."""

    def add(self, pgid: int) -> None: ...

    def discard(self, pgid: int) -> None: ...

    def scan(self) -> None: ...


class Tap(Protocol):
    """Takes the child messages that answer requests sent around the SDK session (hub/passthrough.py)."""

    def wants(self, data: dict[str, Any]) -> bool: ...

    async def take(
        self, process: StdioProcess, data: dict[str, Any], raw: bytes | bytearray, exact: bytes | None = None
    ) -> None:
        """`data` decoded from `raw`; `exact`: the bytes of its result, when `decode_answer` could cut them out."""

    def take_nowait(
        self, process: StdioProcess, data: dict[str, Any], raw: bytes | bytearray, exact: bytes | None
    ) -> bool:
        """`take` done at once, from the pipe's callback, if it needs no waiting; False leaves it to `take`."""
        ...

    def closed(self, process: StdioProcess) -> None: ...

    def resume(self, child: Any) -> None:
        """A max_concurrency slot of `child` (a `hub.child.Child`) was freed: send what waits for one."""

    async def request(self, process: StdioProcess, request: Any, on_progress: Any) -> dict[str, Any]:
        """Send one request to the child as a line of its own, and return the child's raw result."""
        ...


class Reaper:
    """The hub's side of `hub.reaper`: a watchdog process that outlives a SIGKILLed hub just long enough."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "hub.reaper"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
            start_new_session=True,  # a Ctrl-C to the hub's terminal must not end the reaper first
        )

    def _tell(self, line: str) -> None:
        process = self._process
        if process is not None and process.stdin is not None:
            with suppress(OSError, ValueError):
                process.stdin.write(line + "\n")

    def add(self, pgid: int) -> None:
        self._tell(f"+ {pgid}")

    def discard(self, pgid: int) -> None:
        self._tell(f"- {pgid}")

    def scan(self) -> None:
        """Ask the reaper to note every descendant now (a child just finished starting its helpers)."""
        self._tell("?")

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.stdin is not None:
            with suppress(OSError):
                process.stdin.close()
            with suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)


class NoProcessGroups:
    def add(self, pgid: int) -> None:
        pass

    def discard(self, pgid: int) -> None:
        pass

    def scan(self) -> None:
        pass


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "still running"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with code {returncode}"


class StdioProcess:
    """One run of a stdio child process; `connect()` yields the MCP streams."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        groups: ProcessGroups | None = None,
        tap: Tap | None = None,
        spawned: Spawned | None = None,
    ) -> None:
        assert config.command is not None
        self._spawned = spawned  # started already (hub/spawn.py's EarlySpawns): adopted instead of started
        self.name = name
        self.config = config
        self.groups: ProcessGroups = groups or NoProcessGroups()
        self.tap = tap
        self._stdin: asyncio.StreamWriter | None = None
        # The handshake a first start's probe began with this process (hub/first_start.py), until it is adopted.
        self._handshake: Handshake | None = None
        self._sdk_initialize_id: Any = None
        self._sdk_behind = False  # a message went to the SDK session since the last answer taken around it
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.pid: int | None = None
        self.returncode: int | None = None
        self.exited = anyio.Event()
        self._log = structlog.get_logger("hub.child").bind(child=name)

    async def release(self) -> None:
        """End the early-started process handed to this run if `connect` never took it (stopped before it ran)."""
        spawned, self._spawned = self._spawned, None
        if spawned is not None:
            await end_unadopted(spawned)

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[TransportStreams]:
        # stdout is a pipe of our own, read by an event-loop callback (_PipeReader), not anyio's stream.
        spawned, self._spawned = self._spawned or await spawn(launch_for(self.config)), None
        process = spawned.process
        handshake = spawned.handshake
        self._handshake = handshake if handshake is not None and handshake.initialize_sent else None
        leftover = handshake.leftover if handshake is not None else b""
        stdout = _PipeReader(spawned.stdout_fd, self._take_now if self.tap is not None else None, leftover)
        self.pid = process.pid
        self.groups.add(process.pid)
        # The event loop's writer under anyio's stream, for `send_nowait`; without it (another backend) the
        # pass-through is off for this child and every call takes the SDK session.
        writer = getattr(process.stdin, "_stream", None)
        self._stdin = writer if isinstance(writer, asyncio.StreamWriter) else None
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)
        async with anyio.create_task_group() as tg:
            reader = anyio.CancelScope()
            tg.start_soon(self._read_stdout, stdout, read_send, reader)
            tg.start_soon(self._write_stdin, process, write_recv, read_send)
            tg.start_soon(self._read_stderr, process)
            tg.start_soon(self._wait_exit, process, reader)
            try:
                yield read_recv, write_send
            finally:
                self._stdin = None
                with anyio.CancelScope(shield=True):
                    await write_send.aclose()
                    await self._stop(process)
                    await read_recv.aclose()
                tg.cancel_scope.cancel()

    async def _read_stdout(self, stdout: _PipeReader, sink: Any, scope: anyio.CancelScope) -> None:
        async with sink:
            try:
                with scope, suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    await self._read_lines(stdout, sink)
            finally:
                stdout.close()
                self._stdin = None  # no answer can come any more: nothing more is sent around the SDK session
                if self.tap is not None:
                    self.tap.closed(self)

    async def _read_lines(self, stdout: _PipeReader, sink: Any) -> None:
        """Newline-delimited JSON-RPC from the child; a line over max_result_bytes is never held in memory."""
        limit = self.config.max_result_bytes
        pending = bytearray()
        skipping: tuple[bytes, bytearray, int] | None = None  # (head, tail, size) of an oversized line
        while True:
            chunk = await stdout.receive(at_line_start=not pending and skipping is None)
            if skipping is not None:
                head, tail, size = skipping
                end = chunk.find(b"\n")
                piece = chunk if end < 0 else chunk[:end]
                tail = (tail + piece)[-_EDGE:]
                skipping = (head, tail, size + len(piece))
                if end < 0:
                    continue
                await self._refuse(sink, head, bytes(tail), size + len(piece))
                skipping, chunk = None, chunk[end + 1 :]
            pending += chunk
            if b"\n" in chunk:
                *lines, rest = pending.split(b"\n")
                pending = bytearray(rest)
                for line in lines:
                    if len(line) > limit:
                        await self._refuse(sink, bytes(line[:_EDGE]), bytes(line[-_EDGE:]), len(line))
                    else:
                        await self._deliver(sink, line)
            if len(pending) > limit:
                skipping = (bytes(pending[:_EDGE]), bytearray(pending[-_EDGE:]), len(pending))
                pending = bytearray()

    async def _refuse(self, sink: Any, head: bytes, tail: bytes, size: int) -> None:
        """Answer the request an oversized result belonged to with an error, instead of the result."""
        found = _ID_AT_START.match(head) or _ID_AT_END.search(tail)
        limit = self.config.max_result_bytes
        self._log.warning("child_result_too_large", bytes=size, limit=limit, answered=found is not None)
        if found is None:
            return
        message = (
            f"server '{self.name}' sent a result of {size} bytes, more than its max_result_bytes ({limit}); "
            "raise max_result_bytes in servers.yaml or ask for less"
        )
        error = {
            "jsonrpc": "2.0",
            "id": json.loads(found.group(1)),
            "error": {
                "code": types.INTERNAL_ERROR,
                "message": message,
                "data": {"reason": "result_too_large", "bytes": size},
            },
        }
        if self.tap is not None and self.tap.wants(error):
            await self.tap.take(self, error, b"")
        else:
            await sink.send(SessionMessage(types.JSONRPCError.model_validate(error)))

    async def _deliver(self, sink: Any, line: bytes | bytearray) -> None:
        if not line.strip():
            return
        data, exact = decode_answer(line)
        if self._handshake is not None and await self._probe_answer(sink, data):
            return
        tap = self.tap
        if tap is not None and type(data) is dict and tap.wants(data):
            if self._sdk_behind and "method" not in data:
                # A log message read before this answer went to the SDK session, whose handler runs in a task of
                # its own: let it run first, so the log reaches the host (and the right one) before the answer,
                # as it did when both went through the session.
                self._sdk_behind = False
                await anyio.lowlevel.checkpoint()
                await anyio.lowlevel.checkpoint()
            await tap.take(self, data, line, exact)
            return
        try:
            message = SessionMessage(message_from(data, line))
        except ValueError:
            # A child that prints banners or debug output on stdout: keep serving, say so once per line.
            self._log.warning("child_stdout_not_jsonrpc", line=line[:200].decode("utf-8", "replace"))
            return
        await sink.send(message)
        self._sdk_behind = True

    def _take_now(self, chunk: bytes) -> bytes:
        """The pipe callback's fast path: hand answers the tap can take at once to it; returns the rest, whole lines.

        `chunk` holds whole lines. Anything else (a message for the SDK session, a notification, a line over
        max_result_bytes, an answer after a message the session still has to handle) stops it, and that line and
        all after it go to `_read_lines`, in order.
        """
        tap, limit = self.tap, self.config.max_result_bytes
        assert tap is not None
        lines = chunk.split(b"\n")
        lines.pop()  # after the last newline: nothing
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            if len(line) <= limit and not self._sdk_behind:
                data, exact = decode_answer(line)
                try:
                    answer = type(data) is dict and "method" not in data and tap.wants(data)
                    if answer and tap.take_nowait(self, data, line, exact):
                        continue
                except Exception:  # never in a loop callback: _read_lines takes the line and reports what fails
                    pass
            return b"\n".join(lines[index:]) + b"\n"
        return b""

    def send_nowait(self, line: bytes) -> bool:
        """Queue one encoded message for the child's stdin, around the SDK session; False if the child is gone.

        It never waits: the event loop's transport buffers what the pipe cannot take yet, so a child that reads
        slowly can never stall the host's reader (the bytes queued are bounded by max_concurrency calls), and
        each message goes out whole, never interleaved with the session's own.
        """
        writer = self._stdin
        if writer is None or writer.is_closing():
            return False
        writer.write(line)
        return True

    async def _write_stdin(self, process: Process, source: Any, sink: Any) -> None:
        assert process.stdin is not None
        async with source:
            try:
                async for message in source:
                    if self._handshake is not None and await self._adopt(message, sink):
                        continue
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass  # the child is gone; the reader's end of stream tells the session

    async def _adopt(self, message: SessionMessage, sink: Any) -> bool:
        """The SDK's handshake with a child the probe already shook hands with: answered here, not sent again."""
        handshake, inner = self._handshake, message.message
        assert handshake is not None
        method = getattr(inner, "method", None)
        if method == "initialize" and self._sdk_initialize_id is None:
            params = json.loads(inner.model_dump_json(by_alias=True, exclude_unset=True)).get("params")
            if params != CLIENT_PARAMS:  # tests/integration/test_first_start.py holds them equal
                differs = sorted(k for k in {*params, *CLIENT_PARAMS} if params.get(k) != CLIENT_PARAMS.get(k))
                self._log.warning("child_handshake_differs", differs=differs)
            self._sdk_initialize_id = getattr(inner, "id", None)
            if handshake.result is not None or handshake.error is not None:
                await self._answer_initialize(sink)
            return True
        return method == "notifications/initialized" and handshake.initialized_sent

    async def _probe_answer(self, sink: Any, data: Any) -> bool:
        """An answer to the probe that came after the connection took over: the initialize goes to the SDK."""
        handshake = self._handshake
        assert handshake is not None
        request_id = data.get("id") if type(data) is dict and "method" not in data else None
        if type(request_id) is not str:
            return False
        if request_id == INIT_ID:
            result, error = data.get("result"), data.get("error")
            handshake.result = result if type(result) is dict else None
            handshake.error = error if type(error) is dict else None
            if self._sdk_initialize_id is not None:
                await self._answer_initialize(sink)
            return True
        return bool(request_id.startswith(LIST_ID))  # the probe's listing: the SDK lists for itself

    async def _answer_initialize(self, sink: Any) -> None:
        handshake = self._handshake
        assert handshake is not None
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": self._sdk_initialize_id}
        if handshake.result is not None:
            answer["result"] = handshake.result
        else:
            malformed = {"code": types.INTERNAL_ERROR, "message": f"server '{self.name}' answered initialize wrongly"}
            answer["error"] = handshake.error or malformed
        line = json.dumps(answer).encode()
        await sink.send(SessionMessage(message_from(answer, line)))

    async def _read_stderr(self, process: Process) -> None:
        assert process.stderr is not None
        pending = b""
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in process.stderr:
                *lines, pending = (pending + chunk).split(b"\n")
                for raw in lines:
                    line = raw.decode("utf-8", "replace").rstrip()
                    if line:
                        self.stderr_tail.append(line)
                        self._log.info("child_stderr", line=line)
                if len(pending) > 65536:
                    pending = pending[-65536:]

    async def _wait_exit(self, process: Process, reader: anyio.CancelScope) -> None:
        # Not process.wait(): that also waits for pipe EOF, which a grandchild can hold open. A pidfd becomes
        # readable when the process exits, so an idle hub does not wake up for it; where there is none (not
        # Linux >= 5.3), returncode is polled.
        poll = 0.05
        with suppress(AttributeError, OSError):
            pidfd = os.pidfd_open(process.pid)
            try:
                await anyio.wait_readable(pidfd)
            finally:
                os.close(pidfd)
            poll = 0.002  # exited: the event loop's child watcher sets returncode in a moment
        while process.returncode is None:  # noqa: ASYNC110 - no event exists for this
            await anyio.sleep(poll)
        self.returncode = process.returncode
        self.exited.set()
        # A descendant holding stdout open must not keep the session waiting: in-flight requests fail now.
        await anyio.sleep(DRAIN_AFTER_EXIT)
        reader.cancel()

    async def _stop(self, process: Process) -> None:
        await stop(process)
        self.groups.discard(process.pid)
        self.returncode = process.returncode


class _PipeReader:
    """A child's stdout, read by an event-loop callback; `receive` gives what the callback did not handle itself.

    With `fast`, a chunk of whole lines that arrives while the reader task waits at a line start goes to it first,
    inside the callback: an answer the pass-through can hand on at once then costs no task wake-up.
    """

    def __init__(self, fd: int, fast: Callable[[bytes], bytes] | None, leftover: bytes = b"") -> None:
        self._fd = fd
        self._fast = fast
        self._chunks: deque[bytes] = deque([leftover] if leftover else ())
        self._eof = False
        self._at_line_start = False  # the reader task waits in `receive` with no partial line of its own
        self._waiter: asyncio.Future[None] | None = None
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self._readable)
        self._open = True

    def _readable(self) -> None:
        chunk = read_now(self._fd, READ_CHUNK)
        if chunk is None:
            return
        if not chunk:
            self._eof = True
            self._loop.remove_reader(self._fd)
        else:
            if self._at_line_start and self._fast is not None and not self._chunks and chunk.endswith(b"\n"):
                chunk = self._fast(chunk)
                if not chunk:
                    return  # all of it handed on: the reader task sleeps on
            self._chunks.append(chunk)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def receive(self, *, at_line_start: bool) -> bytes:
        """The next chunk the callback left; raises EndOfStream once the child closed its stdout."""
        while not self._chunks:
            if self._eof:
                raise anyio.EndOfStream
            self._waiter = self._loop.create_future()
            self._at_line_start = at_line_start
            try:
                await self._waiter
            finally:
                self._waiter = None
                self._at_line_start = False
        return self._chunks.popleft()

    def close(self) -> None:
        if self._open:
            self._open = False
            if not self._eof:
                self._loop.remove_reader(self._fd)
            os.close(self._fd)


def url_transport(config: ServerConfig) -> Any:
    """An SDK transport for a URL child; its headers may carry secrets and are never logged."""
    assert config.url is not None
    if config.kind == "sse":
        return sse_client(config.url, headers=dict(config.headers) or None, timeout=config.connect_timeout)
    http = create_mcp_http_client(headers=dict(config.headers) or None)
    # The SDK caps one SSE event at 1 MiB by default; the hub's own limit is max_result_bytes.
    return _owned_http(config.url, http, config.max_result_bytes + _EDGE)


@asynccontextmanager
async def _owned_http(url: str, http: Any, max_event: int) -> AsyncIterator[TransportStreams]:
    async with http, streamable_http_client(url, http_client=http, max_sse_event_size=max_event) as streams:
        yield streams
