"""The stdio front: one host, newline-delimited JSON-RPC on this process's stdin and stdout.

Like the SDK's `stdio_server`, it keeps the wire on private duplicates of fd 0 and 1 while serving and points fd 0
at the null device and fd 1 at stderr, so that stray output from the hub or a child can never corrupt the
protocol. On POSIX the duplicates are read and written without blocking from the event loop's own callbacks
(a line that can be routed at once costs no task switch); elsewhere, and with HUB_PORTABLE=1, by worker threads.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio

from hub.host.session import HostSession
from hub.platform import LINUX, portable
from hub.platform.pipes import (
    Broken,
    FdWriter,
    Lines,
    ThreadWriter,
    Writer,
    restore_wire,
    wire_reader,
)

if TYPE_CHECKING:
    from hub.app import Hub

# How long answers already written may take to reach the host once it has closed its end.
FLUSH_LIMIT = 2.0


class WireStream:
    """Every request's messages and the session's own go to the one wire (`hub.host.session.Stream`)."""

    def __init__(self, writer: Writer, gone: anyio.Event) -> None:
        self._writer = writer
        self._gone = gone

    def send(self, line: bytes) -> None:
        try:
            self._writer.write(line)
        except Broken:
            self._gone.set()  # the host stopped reading: nothing can reach it any more

    def end(self, line: bytes | None) -> None:
        if line is not None:
            self.send(line)


async def serve_stdio(hub: Hub) -> None:
    """Serve one host until it closes stdin (or stops reading stdout), or the hub is stopped."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    session: HostSession | None = None
    try:
        async with anyio.create_task_group() as tg:
            gone = anyio.Event()
            writer: Writer
            if portable():
                writer = ThreadWriter(wire_out, tg)
            else:
                writer = FdWriter(wire_out)
                if LINUX:
                    from hub.platform.linux import widen_pipe

                    widen_pipe(wire_out)
            stream = WireStream(writer, gone)
            session = HostSession(hub, "", stream, identity=hub.local)
            session.label = f"conn-{id(session):x}"
            limit = hub.loaded.config.hub.max_request_bytes
            served = session
            lines = Lines(
                limit,
                lambda line: served.receive(line, stream),
                lambda head, tail, size: served.oversized(head, size, limit, stream),
            )
            reader = wire_reader(wire_in, lines.feed, gone.set, tg)
            try:
                await gone.wait()
            finally:
                reader.close()
                with anyio.move_on_after(FLUSH_LIMIT, shield=True):
                    while getattr(writer, "pending", 0):  # noqa: ASYNC110 - the pipe has no "drained" event
                        await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
    finally:
        if session is not None:
            session.close()
        # Put the wire back where it was, so that whatever runs after us finds stdin and stdout as they were.
        restore_wire(wire_in, wire_out)
