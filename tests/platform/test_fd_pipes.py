"""The fast path's reader and writer over real pipes (hub.platform.pipes.FdReader, FdWriter): what a reader's callback
writes is held until the callback ends, then leaves in one write per peer; nothing held is lost to a close, and a
held write that finds its peer gone says so."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from hub.platform.pipes import FdReader, FdWriter, Lines


def _read_now(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return b""


async def _one_chunk(lines: bytes, on_line: Callable[[bytes], None]) -> None:
    """Write `lines` into a pipe at once, and run an FdReader over it until they have all been handled."""
    inbound_r, inbound_w = os.pipe()
    handled = asyncio.Event()
    count = lines.count(b"\n")
    seen: list[bytes] = []

    def line(data: bytes) -> None:
        seen.append(data)
        on_line(data)
        if len(seen) == count:
            handled.set()

    splitter = Lines(1 << 20, line, lambda head, tail, size: None)
    reader = FdReader(inbound_r, splitter.feed, lambda: None)
    try:
        os.write(inbound_w, lines)
        await asyncio.wait_for(handled.wait(), 10)
    finally:
        reader.close()
        os.close(inbound_r)
        os.close(inbound_w)


def test_what_a_reader_callback_writes_leaves_when_the_callback_ends() -> None:
    async def main() -> None:
        peer_r, peer_w = os.pipe()
        os.set_blocking(peer_r, False)
        writer = FdWriter(peer_w)
        during: list[bytes] = []

        def answer(line: bytes) -> None:
            writer.write(b"answer-" + line + b"\n")
            during.append(_read_now(peer_r))  # nothing reaches the peer while the callback runs

        await _one_chunk(b"a\nb\nc\n", answer)
        assert during == [b"", b"", b""]
        assert _read_now(peer_r) == b"answer-a\nanswer-b\nanswer-c\n"
        writer.write(b"outside\n")  # outside a reader's callback: written at once
        assert _read_now(peer_r) == b"outside\n"
        writer.close()
        os.close(peer_r)
        os.close(peer_w)

    asyncio.run(main())


def test_a_writer_closed_within_the_callback_still_writes_what_it_held() -> None:
    async def main() -> None:
        peer_r, peer_w = os.pipe()
        os.set_blocking(peer_r, False)
        writer = FdWriter(peer_w)

        def answer_then_close(line: bytes) -> None:
            writer.write(b"last\n")
            writer.close()

        await _one_chunk(b"x\n", answer_then_close)
        assert _read_now(peer_r) == b"last\n"
        os.close(peer_r)
        os.close(peer_w)

    asyncio.run(main())


def test_a_held_write_to_a_closed_peer_reports_the_break() -> None:
    async def main() -> None:
        peer_r, peer_w = os.pipe()
        os.close(peer_r)
        broken: list[bool] = []
        writer = FdWriter(peer_w, lambda: broken.append(True))
        await _one_chunk(b"x\n", lambda line: writer.write(b"lost\n"))
        assert broken == [True]
        assert writer.pending == 0
        writer.close()
        os.close(peer_w)

    asyncio.run(main())
