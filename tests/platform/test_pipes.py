"""The line splitter every reader uses (hub.platform.pipes.Lines): lines across chunks, in order; blank lines
skipped; a line over the limit reported with its first and last bytes and its size, and never held whole."""

from __future__ import annotations

import pytest

from hub.platform.pipes import EDGE, Lines


class Split:
    """A splitter and what it reported, in order."""

    def __init__(self, limit: int) -> None:
        self.events: list[tuple[str, bytes, bytes, int]] = []
        self.lines = Lines(limit, self._line, self._oversized)

    def _line(self, line: bytes) -> None:
        self.events.append(("line", line, b"", len(line)))

    def _oversized(self, head: bytes, tail: bytes, size: int) -> None:
        self.events.append(("oversized", head, tail, size))

    def feed(self, *chunks: bytes) -> Split:
        for chunk in chunks:
            self.lines.feed(chunk)
            held = self.lines._size + (len(self.lines._skipping[1]) if self.lines._skipping else 0)
            assert held <= self.lines.limit + EDGE, "an oversized line is never held whole"
        return self

    @property
    def found(self) -> list[bytes]:
        return [line for kind, line, _, _ in self.events if kind == "line"]


def test_complete_lines_in_one_chunk_are_given_in_order_without_newlines() -> None:
    assert Split(100).feed(b'{"a":1}\n{"b":2}\n').found == [b'{"a":1}', b'{"b":2}']


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_a_line_split_across_chunks_is_given_once_whole(size: int) -> None:
    data = b'{"jsonrpc":"2.0","id":1}\n{"x":"y"}\n'
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    assert Split(100).feed(*chunks).found == [b'{"jsonrpc":"2.0","id":1}', b'{"x":"y"}']


def test_a_line_is_given_only_once_its_newline_arrives() -> None:
    split = Split(100).feed(b'{"a":', b"1}")
    assert split.found == []
    split.feed(b"\n")
    assert split.found == [b'{"a":1}']


def test_blank_and_whitespace_lines_are_skipped_and_a_carriage_return_is_kept() -> None:
    assert Split(100).feed(b"\n\n  \n\t\r\n{}\r\n").found == [b"{}\r"]


def test_a_line_of_exactly_the_limit_passes_and_one_byte_more_does_not() -> None:
    split = Split(10).feed(b"x" * 10 + b"\n" + b"y" * 11 + b"\n" + b"z\n")
    assert split.events == [
        ("line", b"x" * 10, b"", 10),
        ("oversized", b"y" * 11, b"y" * 11, 11),
        ("line", b"z", b"", 1),
    ]


def test_an_oversized_line_in_one_chunk_is_reported_with_its_head_tail_and_size() -> None:
    line = b'{"jsonrpc":"2.0","id":42,"result":{"text":"' + b"a" * 5000 + b'"}}'
    split = Split(1024).feed(line + b"\n{}\n")
    (kind, head, tail, size), after = split.events[0], split.events[1:]
    assert (kind, size) == ("oversized", len(line))
    assert head == line[:EDGE] and tail == line[-EDGE:]
    assert after == [("line", b"{}", b"", 2)], "the next line is read as usual"


@pytest.mark.parametrize("chunk", [100, 4096, 65536])
def test_an_oversized_line_across_chunks_is_reported_once_with_its_true_size(chunk: int) -> None:
    line = b'{"jsonrpc":"2.0","id":7,"result":{"text":"' + b"b" * 300_000 + b'"},"end":"tail-marker"}'
    data = b"{}\n" + line + b"\n" + b'{"after":1}\n'
    split = Split(2048).feed(*[data[i : i + chunk] for i in range(0, len(data), chunk)])
    assert [e[0] for e in split.events] == ["line", "oversized", "line"]
    _, head, tail, size = split.events[1]
    assert size == len(line)
    assert head == line[:EDGE]
    assert tail == line[-EDGE:] and tail.endswith(b'"end":"tail-marker"}')
    assert split.found == [b"{}", b'{"after":1}']


def test_an_oversized_line_without_its_newline_yet_is_reported_when_it_ends() -> None:
    split = Split(64).feed(b"c" * 1000, b"c" * 1000)
    assert split.events == []
    split.feed(b"cc\nok\n")
    assert split.events == [("oversized", b"c" * EDGE, b"c" * EDGE, 2002), ("line", b"ok", b"", 2)]


def test_a_pending_line_that_grows_past_the_limit_with_the_next_chunk_is_reported() -> None:
    split = Split(10).feed(b"12345678", b"9012\n")
    assert split.events == [("oversized", b"123456789012", b"123456789012", 12)]
