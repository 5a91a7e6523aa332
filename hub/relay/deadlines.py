"""Deadlines of the calls in flight: one heap and one task, whatever the number of calls. An entry is checked when it
comes due, and pushed back if its call's deadline moved meanwhile (progress). Entries of ended calls stay until they
come due, so that a new call rarely wakes the watcher; once they are most of the heap, it is rebuilt without them.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from typing import Protocol

import anyio

# Entries of ended calls tolerated before the heap is rebuilt without them (when they are also most of it).
COMPACT_AFTER = 256


class Timed(Protocol):
    deadline: float  # time.monotonic() seconds; math.inf once it has ended

    def expire(self) -> None: ...  # the deadline has passed (and was not moved)


class Deadlines:
    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timed]] = []
        self._order = itertools.count()
        self._wake = anyio.Event()
        self._watch_until = math.inf
        self._ended = 0  # entries of calls that ended, about (a call may have several, or none left)

    def add(self, timed: Timed) -> None:
        heapq.heappush(self._heap, (timed.deadline, next(self._order), timed))
        if timed.deadline < self._watch_until:
            self._wake.set()

    def ended(self) -> None:
        """A call that has an entry ended (its deadline is now math.inf)."""
        self._ended += 1
        if self._ended > COMPACT_AFTER and self._ended * 2 > len(self._heap):
            self._heap = [entry for entry in self._heap if entry[2].deadline != math.inf]
            heapq.heapify(self._heap)
            self._ended = 0

    async def run(self) -> None:
        """Expire what is due, until cancelled."""
        while True:
            now = time.monotonic()
            while self._heap and self._heap[0][0] <= now:
                _, _, timed = heapq.heappop(self._heap)
                if timed.deadline == math.inf:
                    self._ended = max(0, self._ended - 1)
                    continue  # ended
                if timed.deadline > now:  # moved by progress
                    heapq.heappush(self._heap, (timed.deadline, next(self._order), timed))
                    continue
                timed.deadline = math.inf
                timed.expire()
            self._watch_until = self._heap[0][0] if self._heap else math.inf
            self._wake = anyio.Event()
            with anyio.move_on_after(self._watch_until - now):
                await self._wake.wait()
