"""The host-facing stdio transport: newline-delimited JSON-RPC on the process's stdin and stdout.

The SDK's `stdio_server` reads and writes through `anyio.wrap_file`, a worker-thread round trip for every line,
and its blocked reader thread cannot be cancelled, so a hub told to stop (SIGTERM) would wait for the host's next
line. This transport reads and writes non-blocking descriptors on the event loop instead.

Like the SDK's, it keeps the wire on private duplicates of fd 0 and 1 while serving and points fd 0 at the null
device and fd 1 at stderr, so that stray output from the hub or a child process can never corrupt the protocol.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import stat
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCResponse

from hub.wire import decode, message_from, read_now

if TYPE_CHECKING:
    from hub.passthrough import PassThrough
    from hub.warm_start import Handoff, WarmStart

READ_CHUNK = 1 << 16
HOST_PIPE_SIZE = 1 << 20
# How long a message that did not fit in the pipe may take to finish writing before the host is deemed gone.
PARTIAL_WRITE_LIMIT = 30.0


def stdio_front(
    passthrough: PassThrough | None = None, warm: WarmStart | None = None, handoff: Handoff | None = None
) -> AbstractAsyncContextManager[tuple[Any, Any]]:
    """The (read, write) streams for `Server.run` over this process's stdin and stdout.

    Pipes and sockets are read and written without blocking; a regular file, a terminal or /dev/null never
    raises BlockingIOError, so the same code serves them too. With `passthrough`, the tools/call requests it can
    carry (and their cancellations) go to it instead of the SDK session. With `warm`, the host's initialize and
    its answer are shown to it (see hub/warm_start.py); `handoff` holds what the host sent before we were here.
    """
    return _nonblocking_stdio(passthrough, warm, handoff)


@asynccontextmanager
async def _nonblocking_stdio(
    passthrough: PassThrough | None, warm: WarmStart | None, handoff: Handoff | None
) -> AsyncIterator[tuple[Any, Any]]:
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    blocking = (os.get_blocking(wire_in), os.get_blocking(wire_out))
    os.set_blocking(wire_in, False)
    os.set_blocking(wire_out, False)
    # A 64 KiB pipe takes a 142 KB listing or a 1 MiB result in many writes, each after an event-loop wait for
    # the host to read; at 1 MiB it is one write (tools/list with 20 children: hub CPU 0.63 -> 0.37 ms). Left as
    # it is when not a pipe, or over the system's limit (/proc/sys/fs/pipe-max-size, the user's pipe quota).
    with suppress(OSError, AttributeError):
        fcntl.fcntl(wire_out, fcntl.F_SETPIPE_SZ, HOST_PIPE_SIZE)
    read, write = FdReadStream(wire_in, passthrough, warm, handoff), FdWriteStream(wire_out, warm)
    if passthrough is not None:
        passthrough.attach(write.send_bytes, write.send_nowait)
    try:
        yield read, write
    finally:
        read.unwatch()
        if passthrough is not None:
            passthrough.detach()
        # Put the wire back where it was, so that whatever runs after us finds stdin and stdout as they were.
        with suppress(OSError):
            os.set_blocking(wire_in, blocking[0])
            os.set_blocking(wire_out, blocking[1])
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
        for fd in (wire_in, wire_out):
            with suppress(OSError):
                os.close(fd)


class FdReadStream:
    """The SDK's `ReadStream` over a non-blocking descriptor: the dispatcher's own loop reads and parses.

    No reader task and no memory stream between the pipe and the dispatcher: one event-loop hop less per message.
    """

    def __init__(
        self,
        fd: int,
        passthrough: PassThrough | None = None,
        warm: WarmStart | None = None,
        handoff: Handoff | None = None,
    ) -> None:
        self._fd = fd
        self._passthrough = passthrough
        self._warm = warm
        self._lines: deque[bytes] = deque(handoff.lines if handoff else ())
        self._pending = handoff.pending if handoff else b""
        self._eof = False
        # While waiting, the descriptor stays registered with the event loop from one wait to the next: a
        # registration per wait (anyio.wait_readable) is two epoll_ctl calls per message.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None

    async def receive(self) -> SessionMessage | Exception:
        while True:
            while self._lines:
                line = self._lines.popleft()
                if line.strip():
                    data = decode(line)
                    if type(data) is dict:
                        if self._passthrough is not None and await self._diverted(data):
                            continue
                        if self._warm is not None and data.get("method") == "initialize":
                            self._warm.saw_initialize(data)
                    try:
                        return SessionMessage(message_from(data, line))
                    except ValueError as exc:
                        return exc  # the server answers with a parse error
            if self._eof:
                raise anyio.EndOfStream
            chunk = read_now(self._fd, READ_CHUNK)
            if chunk is None:
                await self._readable()
                continue
            if not chunk:
                self._eof = True  # the host closed stdin: the session ends
                continue
            *lines, self._pending = (self._pending + chunk).split(b"\n")
            self._lines.extend(lines)

    async def _readable(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            try:
                loop.add_reader(self._fd, self._wake)
            except (OSError, ValueError):  # not pollable; then reads never block either
                await anyio.wait_readable(self._fd)
                return
            self._loop = loop
        self._waiter = loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is None:
            self.unwatch()  # readable while nobody waits: epoll would call again on every loop iteration
            return
        if self._passthrough is not None and not self._lines and not self._eof:
            self._take_calls(self._passthrough)
            if not self._lines and not self._eof:
                return  # all of it went to the pass-through: the session's reader sleeps on
        if not waiter.done():
            waiter.set_result(None)

    def _take_calls(self, passthrough: PassThrough) -> None:
        """Read what the host sent, and give tools/call requests and their cancellations to the pass-through here.

        This runs in the event loop's callback for the readable pipe, so a call reaches its child without waking
        the SDK session's reader task (one task step less per call). The first line that is not the
        pass-through's, and every line after it, are left for `receive`, in order.
        """
        chunk = read_now(self._fd, READ_CHUNK)
        if chunk is None:
            return
        if not chunk:
            self._eof = True
            return
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for index, line in enumerate(lines):
            if not line.strip():
                continue
            data = decode(line)
            try:
                if type(data) is dict and _taken_now(passthrough, data):
                    continue
            except Exception:  # never in a loop callback: the session's reader takes it (and reports it)
                pass
            self._lines.extend(lines[index:])
            return

    def unwatch(self) -> None:
        """Unregister the descriptor from the event loop (before it is closed)."""
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.remove_reader(self._fd)

    async def _diverted(self, data: dict[str, Any]) -> bool:
        passthrough = self._passthrough
        assert passthrough is not None
        if data.get("method") == "tools/list":
            return "id" in data and await passthrough.list_tools(data)
        return _taken_now(passthrough, data)

    def __aiter__(self) -> FdReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._eof = True
        self._lines.clear()
        self.unwatch()

    async def __aenter__(self) -> FdReadStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _taken_now(passthrough: PassThrough, data: dict[str, Any]) -> bool:
    """A tools/call or notifications/cancelled the pass-through took; it never waits, so a callback may ask too."""
    method = data.get("method")
    if method == "tools/call":
        return "id" in data and passthrough.offer(data)
    return method == "notifications/cancelled" and passthrough.cancel(data)


class FdWriteStream:
    """The SDK's `WriteStream` over a non-blocking descriptor: each message is written by the task that sends it.

    A message that does not fit in the pipe at once is finished under a shield (bounded), so that a cancelled
    sender can never leave half a line on the wire.
    """

    def __init__(self, fd: int, warm: WarmStart | None = None) -> None:
        self._fd = fd
        self._warm = warm
        mode = os.fstat(fd).st_mode
        self._whole_writes = stat.S_ISFIFO(mode) or stat.S_ISREG(mode)  # see send_nowait
        self._lock = anyio.Lock(fast_acquire=True)
        self._broken = False

    async def send(self, item: SessionMessage) -> None:
        message, warm = item.message, self._warm
        if warm is not None and type(message) is JSONRPCResponse and warm.answer(message.id, message.result):
            return  # the SDK's answer to an initialize the host had from the warm start
        await self.send_bytes(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    async def send_bytes(self, line: bytes) -> None:
        """Write one encoded message (ending in a newline)."""
        data = memoryview(line)
        async with self._lock:
            if self._broken:
                raise anyio.BrokenResourceError
            written = self._write(data)
            if written < len(data):
                with anyio.CancelScope(shield=True), anyio.move_on_after(PARTIAL_WRITE_LIMIT):
                    while written < len(data):
                        await anyio.wait_writable(self._fd)
                        written += self._write(data[written:])
                if written < len(data):
                    self._broken = True  # the host stopped reading: the wire cannot be resynchronised
                    raise anyio.BrokenResourceError

    def send_nowait(self, line: bytes) -> bool:
        """Write one encoded message at once if it can go whole without waiting; False if nothing was written.

        Only a line of at most PIPE_BUF bytes to a pipe or a file, while no other write is under way: a pipe
        takes such a write whole or not at all, so a False leaves the wire as it was (then use `send_bytes`).
        """
        if not self._whole_writes or len(line) > select.PIPE_BUF or self._lock.locked() or self._broken:
            return False
        data, written = memoryview(line), 0
        try:
            written = self._write(data)
            while 0 < written < len(data):  # only a regular file falls short (disk full); it never blocks
                more = self._write(data[written:])
                if more == 0:
                    self._broken = True  # part of a line is out: the wire cannot be resynchronised
                    break
                written += more
        except anyio.BrokenResourceError:
            pass  # marked broken; with nothing written, send_bytes reports it
        return written > 0

    def _write(self, data: memoryview) -> int:
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError:
            self._broken = True
            raise anyio.BrokenResourceError from None

    async def aclose(self) -> None:
        pass  # the descriptor belongs to _nonblocking_stdio, which restores and closes it

    async def __aenter__(self) -> FdWriteStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
