"""This process's stdin and stdout as a wire of newline-delimited JSON-RPC, for the hub's stdio front and for
`hub connect` (hub.connect) alike.

Like the SDK's `stdio_server`, the wire is kept on private duplicates of fd 0 and 1 while it is in use, and fd 0 is
pointed at the null device and fd 1 at stderr, so that nothing printed by accident (by the hub, a library or a
child) can corrupt the protocol.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress

import anyio
from anyio.abc import TaskGroup

from hub.platform import LINUX, portable
from hub.platform.linux import widen_pipe
from hub.platform.pipes import Broken, FdReader, FdWriter, Lines, ThreadReader, ThreadWriter

# How long the lines already written may take to reach the host once the wire is left.
FLUSH_LIMIT = 2.0


class HostWire:
    """Lines to the host; `gone` is set once the host closed stdin or stopped reading stdout (then `deaf` too)."""

    def __init__(self, writer: FdWriter | ThreadWriter) -> None:
        self._writer = writer
        self.gone = anyio.Event()
        self.deaf = False  # the host stopped reading: no answer can reach it, none is worth waiting for

    def write(self, line: bytes) -> None:
        try:
            self._writer.write(line)
        except Broken:
            self.deaf = True
            self.gone.set()  # the host stopped reading: nothing can reach it any more


@asynccontextmanager
async def stdio_wire(
    tg: TaskGroup, limit: int, on_line: Callable[[bytes], None], on_oversized: Callable[[bytes, int], None]
) -> AsyncIterator[HostWire]:
    """The wire for the life of the block: each line the host writes goes to `on_line`, from the event loop (a
    line over `limit` bytes is dropped as it arrives: its head and size go to `on_oversized`); on leaving, what was
    written is flushed (bounded) and fd 0 and 1 are put back as they were."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    writer: FdWriter | ThreadWriter
    reader: FdReader | ThreadReader | None = None
    try:
        if portable():
            writer = ThreadWriter(wire_out)
        else:
            writer = FdWriter(wire_out)
            if LINUX:
                widen_pipe(wire_out)
        wire = HostWire(writer)
        lines = Lines(limit, on_line, lambda head, tail, size: on_oversized(head, size))
        if not portable():  # the event loop watches stdin, unless it is a file (`hub serve < requests.jsonl`)
            with suppress(OSError, ValueError):
                reader = FdReader(wire_in, lines.feed, wire.gone.set)
        if reader is None:
            reader = ThreadReader(wire_in, lines.feed, wire.gone.set, tg)
        try:
            yield wire
        finally:
            reader.close()
            with anyio.move_on_after(FLUSH_LIMIT, shield=True):
                while writer.pending:  # noqa: ASYNC110 - the pipe has no "drained" event
                    await anyio.sleep(0.01)
            writer.close()
    finally:
        with suppress(OSError):  # stdin and stdout back as they were, for whatever runs next
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)
        for fd in (wire_in, wire_out):
            with suppress(OSError):
                os.close(fd)
