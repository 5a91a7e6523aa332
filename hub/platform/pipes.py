"""Newline-delimited messages over pipes: one splitter, and a reader and a writer per platform path.

A line over the limit is never held in memory: only its first and last bytes are kept, so that its request id can
still be found. A writer never blocks its caller: what the pipe cannot take now is buffered, up to a bound past
which the peer is deemed stuck and the pipe broken.

The fast path (POSIX) reads and writes non-blocking descriptors from the event loop's own callbacks: a message
that can be forwarded at once costs no task switch. The portable path runs one task per direction over anyio byte
streams (a child's pipes) or a daemon thread per direction (the hub's own stdin and stdout, which cannot be polled
everywhere).
"""

from __future__ import annotations

import asyncio
import io
import mmap
import os
import threading
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from typing import Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

READ_CHUNK = 1 << 20
# Bytes kept from each end of an oversized line, to find its request id.
EDGE = 512
# A peer that leaves this much unread is deemed stuck: the pipe is broken rather than grown further.
MAX_BUFFERED = 64 << 20


class Broken(Exception):
    """The pipe is closed, or its peer stopped reading."""


class Lines:
    """Splits chunks into lines (without their newline); lines over `limit` bytes are cut short and reported."""

    def __init__(
        self,
        limit: int,
        on_line: Callable[[bytes], None],
        on_oversized: Callable[[bytes, bytes, int], None],
    ) -> None:
        self.limit = limit
        self._on_line = on_line
        self._on_oversized = on_oversized
        self._pending: list[bytes] = []  # the chunks of a line not ended yet: joined once, a large line copied once
        self._size = 0  # their bytes
        self._skipping: tuple[bytes, bytearray, int] | None = None  # (head, tail, size) of an oversized line

    def feed(self, chunk: bytes) -> None:
        start = 0
        if self._skipping is not None:
            end = chunk.find(b"\n")
            piece = chunk if end < 0 else chunk[:end]
            head, tail, size = self._skipping
            tail = (tail + piece)[-EDGE:]
            if end < 0:
                self._skipping = (head, tail, size + len(piece))
                return
            self._skipping = None
            self._on_oversized(head, bytes(tail), size + len(piece))
            start = end + 1
        end = chunk.find(b"\n", start)
        while end >= 0:
            line = chunk[start:end]
            if self._pending:  # the end of a line begun in earlier chunks
                line = b"".join([*self._pending, line])
                self._pending, self._size = [], 0
            self._emit(line)
            start = end + 1
            end = chunk.find(b"\n", start)
        self._keep(chunk[start:])

    def _emit(self, line: bytes) -> None:
        if len(line) > self.limit:
            self._on_oversized(line[:EDGE], line[-EDGE:], len(line))
        elif line and not line.isspace():
            self._on_line(line)

    def _keep(self, rest: bytes) -> None:
        if not rest:
            return
        self._pending.append(rest)
        self._size += len(rest)
        if self._size > self.limit:
            held = b"".join(self._pending)
            self._skipping = (held[:EDGE], bytearray(held[-EDGE:]), self._size)
            self._pending, self._size = [], 0


def read_buffer() -> mmap.mmap:
    """One reader's buffer, reused for every read: reading with os.read(fd, READ_CHUNK) would map and unmap a
    READ_CHUNK-sized block each time, however little it returns (three system calls a message). An anonymous
    mapping: its pages are backed only as far as the longest read so far; a slice of it is a copy."""
    return mmap.mmap(-1, READ_CHUNK)


class Writer(Protocol):
    def write(self, data: bytes) -> None:
        """Send whole messages, or buffer them; never waits.

        Raises:
            Broken: the pipe is closed or its peer stopped reading.
        """

    def close(self) -> None: ...


class Backlog:
    """What a writer holds for a peer that is slow to read: bounded, in order; past the bound the pipe is broken."""

    def __init__(self) -> None:
        self.chunks: deque[bytes | memoryview] = deque()
        self.size = 0  # bytes added and not yet taken by the pipe
        self.broken = False

    def add(self, data: bytes | memoryview) -> None:
        """Raises `Broken` if the pipe is, or becomes so by this much more unread."""
        if self.broken:
            raise Broken("the pipe is closed")
        if self.size + len(data) > MAX_BUFFERED:
            self.close()
            raise Broken(f"the reader left more than {MAX_BUFFERED >> 20} MiB unread")
        self.chunks.append(data)
        self.size += len(data)

    def take(self) -> bytes:
        """Everything added so far, in one piece (it still counts in `size` until `sent`)."""
        data = b"".join(self.chunks)
        self.chunks.clear()
        return data

    def sent(self, count: int) -> None:
        self.size = max(0, self.size - count)

    def close(self) -> None:
        self.broken = True
        self.chunks.clear()
        self.size = 0


# ---- the fast path: the event loop watches the descriptors ---------------------------------------------------


class FdReader:
    """Reads a non-blocking descriptor from the event loop's callback; `feed` gets each chunk, `on_end` the end."""

    def __init__(self, fd: int, feed: Callable[[bytes], None], on_end: Callable[[], None]) -> None:
        self._fd = fd
        self._feed = feed
        self._on_end = on_end
        self._loop = asyncio.get_running_loop()
        os.set_blocking(fd, False)
        self._buffer = read_buffer()
        self._loop.add_reader(fd, self._readable)
        self._open = True

    def _readable(self) -> None:
        try:
            size = os.readv(self._fd, (self._buffer,))
        except BlockingIOError:
            return
        except OSError:
            size = 0
        if size:
            self._feed(self._buffer[:size])
        else:
            self.close()
            self._on_end()

    def close(self) -> None:
        if self._open:
            self._open = False
            self._loop.remove_reader(self._fd)
            self._buffer.close()


class FdWriter:
    """Writes a non-blocking descriptor at once where it can, and the rest when the loop says it is writable."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        os.set_blocking(fd, False)
        self._backlog = Backlog()
        self._watching = False

    def write(self, data: bytes) -> None:
        backlog = self._backlog
        rest: bytes | memoryview = data
        if not backlog.chunks and not backlog.broken:
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                self.close()
                raise Broken(f"the pipe is closed ({exc.strerror})") from None
            if written == len(data):
                return
            rest = memoryview(data)[written:]  # not a copy
        try:
            backlog.add(rest)
        except Broken:
            self.close()
            raise
        if not self._watching:
            self._watching = True
            self._loop.add_writer(self._fd, self._writable)

    def _writable(self) -> None:
        chunks = self._backlog.chunks
        while chunks:
            try:
                written = os.write(self._fd, chunks[0])
            except BlockingIOError:
                return
            except OSError:
                self.close()
                return
            self._backlog.sent(written)
            if written < len(chunks[0]):
                chunks[0] = memoryview(chunks[0])[written:]
                return
            chunks.popleft()
        self._unwatch()

    def _unwatch(self) -> None:
        if self._watching:
            self._watching = False
            self._loop.remove_writer(self._fd)

    @property
    def pending(self) -> int:
        """Bytes written but not yet taken by the pipe."""
        return self._backlog.size

    def close(self) -> None:
        self._backlog.close()
        self._unwatch()


# ---- the portable path: a task per direction -----------------------------------------------------------------


class StreamReader:
    """Reads an anyio byte stream in a task of `tg`; `feed` gets each chunk, `on_end` the end."""

    def __init__(
        self, stream: ByteReceiveStream, feed: Callable[[bytes], None], on_end: Callable[[], None], tg: TaskGroup
    ) -> None:
        self._stream = stream
        self._scope = anyio.CancelScope()
        tg.start_soon(self._run, feed, on_end)

    async def _run(self, feed: Callable[[bytes], None], on_end: Callable[[], None]) -> None:
        with self._scope:
            with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                while True:
                    feed(await self._stream.receive(READ_CHUNK))
            on_end()

    def close(self) -> None:
        self._scope.cancel()


class StreamWriter:
    """Queues writes for a task of `tg` that sends them to an anyio byte stream."""

    def __init__(self, stream: ByteSendStream, tg: TaskGroup) -> None:
        self._stream = stream
        self._backlog = Backlog()
        self._wake = anyio.Event()
        self._scope = anyio.CancelScope()
        tg.start_soon(self._run)

    def write(self, data: bytes) -> None:
        try:
            self._backlog.add(data)
        except Broken:
            self._scope.cancel()
            raise
        self._wake.set()

    async def _run(self) -> None:
        with self._scope:
            try:
                while True:
                    while not self._backlog.chunks:
                        self._wake = anyio.Event()
                        await self._wake.wait()
                    data = self._backlog.take()
                    await self._stream.send(data)
                    self._backlog.sent(len(data))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                self._backlog.close()

    def close(self) -> None:
        self._backlog.close()
        self._scope.cancel()


class ThreadReader:
    """Reads a blocking descriptor in a daemon thread of its own, not one of anyio's workers: a read that blocks as
    long as the host keeps its end open must not hold the hub's exit. Chunks reach `feed` in a task of `tg`."""

    def __init__(self, fd: int, feed: Callable[[bytes], None], on_end: Callable[[], None], tg: TaskGroup) -> None:
        self._fd = fd
        self._open = True
        self._scope = anyio.CancelScope()
        send, receive = anyio.create_memory_object_stream[bytes](0)
        token = anyio.lowlevel.current_token()
        threading.Thread(target=self._read, args=(send, token), name="hub-pipe-reader", daemon=True).start()
        tg.start_soon(self._run, receive, feed, on_end)

    def _read(self, send: MemoryObjectSendStream[bytes], token: anyio.lowlevel.EventLoopToken) -> None:
        buffer = read_buffer()
        file = io.FileIO(self._fd, "rb", closefd=False)  # readinto where os.readv does not exist (Windows)
        try:
            while self._open:
                try:
                    size = file.readinto(buffer) or 0
                except OSError:
                    size = 0
                if not size or not self._open:
                    break
                anyio.from_thread.run(send.send, buffer[:size], token=token)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # closed by the hub
        except (anyio.RunFinishedError, RuntimeError):
            send.close()  # the event loop is gone: nothing else touches the stream any more
            return
        finally:
            buffer.close()
        with suppress(anyio.RunFinishedError, RuntimeError):
            anyio.from_thread.run_sync(send.close, token=token)  # the end of the pipe

    async def _run(
        self, receive: MemoryObjectReceiveStream[bytes], feed: Callable[[bytes], None], on_end: Callable[[], None]
    ) -> None:
        with self._scope, receive:
            async for chunk in receive:
                feed(chunk)
            on_end()

    def close(self) -> None:
        self._open = False
        self._scope.cancel()


class ThreadWriter:
    """Writes a blocking descriptor from a daemon thread of its own, in order (the hub's stdout where it cannot be
    polled); a host that stops reading blocks only that thread, never the hub's exit."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._backlog = Backlog()
        self._ready = threading.Condition()
        threading.Thread(target=self._run, name="hub-pipe-writer", daemon=True).start()

    def write(self, data: bytes) -> None:
        with self._ready:
            try:
                self._backlog.add(data)
            finally:
                self._ready.notify()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._backlog.chunks and not self._backlog.broken:
                    self._ready.wait()
                if self._backlog.broken:
                    return
                data = self._backlog.take()
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:
                with self._ready:
                    self._backlog.close()
                return
            with self._ready:
                self._backlog.sent(len(data))

    @property
    def pending(self) -> int:
        return self._backlog.size

    def close(self) -> None:
        with self._ready:
            self._backlog.close()
            self._ready.notify()
