"""The deadline watcher (hub.relay.deadlines): one heap and one task expire calls in order, follow deadlines that
progress moved, skip calls that ended, and wake for a deadline sooner than the one it sleeps towards."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel
import pytest

from hub.relay.deadlines import Deadlines
from tests.relay.harness import WAIT

pytestmark = pytest.mark.anyio


class Timed:
    def __init__(self, name: str, seconds: float, expired: list[Timed]) -> None:
        self.name = name
        self.deadline = time.monotonic() + seconds
        self.expired_at: float | None = None
        self.done = anyio.Event()
        self._expired = expired

    def __repr__(self) -> str:
        return f"<Timed {self.name}>"

    def expire(self) -> None:
        self.expired_at = time.monotonic()
        self._expired.append(self)
        self.done.set()

    async def wait(self) -> None:
        with anyio.fail_after(WAIT):
            await self.done.wait()


@asynccontextmanager
async def watching() -> AsyncIterator[Deadlines]:
    deadlines = Deadlines()
    async with anyio.create_task_group() as tg:
        tg.start_soon(deadlines.run)
        yield deadlines
        tg.cancel_scope.cancel()


async def test_deadlines_expire_in_their_order_not_the_order_added() -> None:
    expired: list[Timed] = []
    async with watching() as deadlines:
        later, sooner = Timed("later", 0.04, expired), Timed("sooner", 0.01, expired)
        deadlines.add(later)
        deadlines.add(sooner)
        await later.wait()
        assert expired == [sooner, later]
        assert later.deadline == sooner.deadline == math.inf, "an expired entry is marked ended"


async def test_a_deadline_already_past_expires_at_once() -> None:
    expired: list[Timed] = []
    async with watching() as deadlines:
        past = Timed("past", -1.0, expired)
        deadlines.add(past)
        await past.wait()
        assert expired == [past]


async def test_a_deadline_moved_later_expires_at_its_new_time_only() -> None:
    expired: list[Timed] = []
    async with watching() as deadlines:
        moved = Timed("moved", 0.01, expired)
        deadlines.add(moved)
        moved.deadline = new = time.monotonic() + 0.06  # progress, before the first deadline came
        await moved.wait()
        assert moved.expired_at is not None and moved.expired_at >= new
        assert expired == [moved], "once"


async def test_an_ended_call_is_never_expired() -> None:
    expired: list[Timed] = []
    async with watching() as deadlines:
        ended, sentinel = Timed("ended", 0.01, expired), Timed("sentinel", 0.03, expired)
        deadlines.add(ended)
        deadlines.add(sentinel)
        ended.deadline = math.inf  # answered meanwhile
        await sentinel.wait()
        assert expired == [sentinel]


async def test_a_sooner_deadline_wakes_a_watcher_sleeping_towards_a_later_one() -> None:
    expired: list[Timed] = []
    async with watching() as deadlines:
        far = Timed("far", 3600, expired)
        deadlines.add(far)
        await anyio.lowlevel.checkpoint()  # the watcher now sleeps towards `far`
        near = Timed("near", 0.01, expired)
        deadlines.add(near)
        await near.wait()  # bounded by WAIT, far sooner than an hour
        assert expired == [near]
