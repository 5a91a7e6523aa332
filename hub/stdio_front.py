"""The host-facing stdio transport: newline-delimited JSON-RPC on the process's stdin and stdout.

The SDK's `stdio_server` reads and writes through `anyio.wrap_file`, a worker-thread round trip for every line,
and its blocked reader thread cannot be cancelled, so a hub told to stop (SIGTERM) would wait for the host's next
line. This transport reads and writes non-blocking descriptors on the event loop instead.

Like the SDK's, it keeps the wire on private duplicates of fd 0 and 1 while serving and points fd 0 at the null
device and fd 1 at stderr, so that stray output from the hub or a child process can never corrupt the protocol.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any

import anyio
from mcp.shared.message import SessionMessage

from hub.wire import parse_message

READ_CHUNK = 1 << 16


def stdio_front() -> AbstractAsyncContextManager[tuple[Any, Any]]:
    """The (read, write) streams for `Server.run` over this process's stdin and stdout.

    Pipes and sockets are read and written without blocking; a regular file, a terminal or /dev/null never
    raises BlockingIOError, so the same code serves them too.
    """
    return _nonblocking_stdio()


@asynccontextmanager
async def _nonblocking_stdio() -> AsyncIterator[tuple[Any, Any]]:
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    blocking = (os.get_blocking(wire_in), os.get_blocking(wire_out))
    os.set_blocking(wire_in, False)
    os.set_blocking(wire_out, False)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read, wire_in, read_send)
            tg.start_soon(_write, wire_out, write_recv)
            try:
                yield read_recv, write_send
            finally:
                tg.cancel_scope.cancel()
    finally:
        # Put the wire back where it was, so that whatever runs after us finds stdin and stdout as they were.
        with suppress(OSError):
            os.set_blocking(wire_in, blocking[0])
            os.set_blocking(wire_out, blocking[1])
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
        for fd in (wire_in, wire_out):
            with suppress(OSError):
                os.close(fd)


async def _read(fd: int, sink: Any) -> None:
    pending = b""
    async with sink:
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            except OSError:
                return
            if not chunk:
                return  # the host closed stdin: the session ends
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                try:
                    message: SessionMessage | Exception = SessionMessage(parse_message(line))
                except ValueError as exc:
                    message = exc  # the server answers with a parse error
                try:
                    await sink.send(message)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return


async def _write(fd: int, source: Any) -> None:
    async with source:
        async for message in source:
            data = memoryview(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
            while data:
                try:
                    written = os.write(fd, data)
                except BlockingIOError:
                    await anyio.wait_writable(fd)
                    continue
                except OSError:
                    return  # the host is gone
                data = data[written:]
