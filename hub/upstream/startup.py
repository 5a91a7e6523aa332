"""The start-up wait: how long listings, and the one-shot commands, wait for the children started with the hub.

A host that ignores tools/list_changed keeps its first listing until it restarts, so during start-up a listing waits
to be complete (at most `startup_listing_wait` from the process's start). Children restarting later, or added by a
reload once the wait is over, never hold a listing. Every wait here is bounded.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping

import anyio
import structlog

from hub.upstream.child import Child

# A child's first attempt fails on its own connect_timeout; this is the time then given to stop its process.
SETTLE_SLACK = 1.0


class StartupWait:
    """Whether the children started with the hub have settled (each ready, or failed at least once)."""

    def __init__(self, children: Callable[[], Mapping[str, Child]], started: float, limit: Callable[[], float]) -> None:
        self._children = children  # the children as they are now
        self._started = started  # the process's start (time.monotonic())
        self._limit = limit  # `hub.startup_listing_wait`, as configured now
        self._over = False

    async def settle(
        self,
        children: list[Child] | None = None,
        limit_s: float | None = None,
        progress: Callable[[list[Child]], None] | None = None,
    ) -> None:
        """Until `children` (all, by default) are ready or have failed once: each at most its own connect_timeout
        (and SETTLE_SLACK for its process to be stopped), all at most `limit_s`. `progress` is told the children still
        starting, first and each time one settles. Those whose `settled` is not set after it did not settle in time."""
        pool = list(self._children().values()) if children is None else children
        begun = time.monotonic()
        starting = [child for child in pool if not child.settled.is_set()]

        async def one(child: Child) -> None:
            with anyio.move_on_after(begun + child.config.connect_timeout + SETTLE_SLACK - time.monotonic()):
                await child.settled.wait()
            if child.settled.is_set():
                starting.remove(child)
                if progress is not None:
                    progress(list(starting))

        if progress is not None:
            progress(list(starting))
        with anyio.move_on_after(math.inf if limit_s is None else limit_s):
            async with anyio.create_task_group() as tg:
                for child in list(starting):
                    tg.start_soon(one, child)

    def left(self) -> float:
        """Seconds a list request may still wait for the children started with the hub; 0 once that is over."""
        if self._over:
            return 0.0
        left = self._started + self._limit() - time.monotonic()
        if left <= 0 or all(child.settled.is_set() for child in self._children().values()):
            self._over = True
            return 0.0
        return left

    def end(self) -> None:
        """List requests from now on answer at once, with the children that are up."""
        self._over = True

    async def wait(self) -> None:
        """Hold a list request until every child started with the hub is ready or has failed once (bounded).

        It ends exactly when `left` does, because list_changed is not sent until then: a listing answered sooner
        could miss a change nobody is told of.
        """
        logged = False
        while left := self.left():
            starting = [child for child in self._children().values() if not child.settled.is_set()]
            if not logged:
                names = [c.name for c in starting]
                structlog.get_logger("hub").info("listing_waits_for_start", servers=names, limit_s=round(left, 1))
                logged = True
            with anyio.move_on_after(left):
                for child in starting:
                    await child.settled.wait()
