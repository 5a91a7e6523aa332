"""Writes held while the fast path's reader handles one chunk (hub.platform.pipes): the N messages of a chunk read
at once cost two writes per peer, not N wake-ups of its reader.

While a reader's callback handles a chunk's lines but the last, the writers hold what they are given, and write it
before that last line is handled; the last line's writes leave at once, so that its answer does not wait behind its
own bookkeeping (the call log, say). Nothing waits on a cork: what a callback writes leaves within it.
"""

from __future__ import annotations

from typing import Protocol


class Holder(Protocol):
    def uncork(self) -> None:
        """Write what was held, as far as the pipe takes it now."""


class Cork:
    held: list[Holder] | None = None  # the writers holding something; None outside a reader's callback


def cork() -> None:
    """A reader's callback begins (one never runs within another's)."""
    Cork.held = []


def uncork() -> None:
    """What the writers hold is written now, and the rest of the reader's callback writes at once."""
    held, Cork.held = Cork.held, None
    for writer in held or ():
        writer.uncork()
