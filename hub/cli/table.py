"""The one-shot commands' tables: left-aligned columns, a header first."""

from __future__ import annotations

from typing import TextIO


def print_table(rows: list[list[str]], out: TextIO) -> None:
    """Rows as left-aligned columns, the first row a header; trailing blanks trimmed."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")
