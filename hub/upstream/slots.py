"""The concurrency limit of one child: `max_concurrency` requests in flight over all its connections, `max_queue`
more waiting in arrival order, and a clear refusal beyond that.

Synchronous, so that a request is admitted (or queued, or refused) in the same step that reads it, with no task.
"""

from __future__ import annotations

import contextlib
from collections import deque
from typing import Protocol

from hub.protocol.errors import Busy


class Waiter(Protocol):
    def admitted(self) -> None:
        """A slot was freed for this waiter: it holds it now and must `release` it when done."""


class Slots:
    def __init__(self, name: str, concurrency: int, queue: int) -> None:
        self.name = name
        self.concurrency = concurrency
        self.queue = queue
        self.in_flight = 0
        self._waiting: deque[Waiter] = deque()

    def __repr__(self) -> str:
        return f"<Slots {self.name} {self.in_flight}/{self.concurrency} in flight, {len(self._waiting)} waiting>"

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def take(self, waiter: Waiter) -> bool:
        """True: `waiter` holds a slot now. False: it waits, and `admitted` is called when one is free.

        Raises:
            Busy: every slot is taken and the queue is full.
        """
        if self.in_flight < self.concurrency and not self._waiting:
            self.in_flight += 1
            return True
        if len(self._waiting) >= self.queue:
            raise Busy(
                f"server '{self.name}' is busy: {self.in_flight} requests in flight and {len(self._waiting)} waiting; "
                "try again, or raise max_concurrency / max_queue in servers.yaml"
            )
        self._waiting.append(waiter)
        return False

    def withdraw(self, waiter: Waiter) -> None:
        """A waiter gives up before it was admitted (its request was cancelled)."""
        with contextlib.suppress(ValueError):
            self._waiting.remove(waiter)

    def release(self) -> None:
        """A slot is free again: the longest waiter gets it."""
        self.in_flight -= 1
        while self._waiting and self.in_flight < self.concurrency:
            waiter = self._waiting.popleft()
            self.in_flight += 1
            waiter.admitted()
