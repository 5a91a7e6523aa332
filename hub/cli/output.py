"""What the one-shot commands print: tables on stdout (their result), the reason they stop on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Collection, Sequence
from typing import Any, TextIO

EXIT_FAILED = 1
EXIT_USAGE = 2  # also a configuration that cannot be used
EXIT_INTERRUPTED = 130


def fail(message: str, status: int = EXIT_FAILED) -> int:
    """`status`, once `hub: message` is on stderr."""
    print(f"hub: {message}", file=sys.stderr)
    return status


def print_json(document: Any, out: TextIO) -> None:
    """`document` as indented JSON, for --json."""
    out.write(json.dumps(document, indent=2) + "\n")


def table_row(cells: Sequence[str], widths: Sequence[int], right: Collection[int] = ()) -> str:
    """One line of a table: cells padded to `widths` (the columns in `right` right-aligned), trailing blanks
    trimmed."""
    padded = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
    return "  ".join(padded).rstrip() + "\n"


def print_table(rows: Sequence[Sequence[str]], out: TextIO, right: Collection[int] = ()) -> None:
    """Rows as aligned columns, the first row a header."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out.writelines(table_row(row, widths, right) for row in rows)


class StartProgress:
    """On a terminal (`stream` is stderr), one line saying which servers are still starting, rewritten as each gets
    ready (or fails), and erased once the wait is over; nothing when `stream` is not a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._on = stream.isatty()
        self._shown = 0  # width of the line on the terminal

    def starting(self, children: Sequence[Any]) -> None:
        """`children` (objects with a `name`) are still starting."""
        if self._on:
            self._show(f"hub: starting {', '.join(child.name for child in children)} ..." if children else "")

    def done(self) -> None:
        if self._on:
            self._show("")

    def _show(self, line: str) -> None:
        self._stream.write("\r" + line.ljust(self._shown) + ("\r" if not line else ""))
        self._stream.flush()
        self._shown = len(line)
