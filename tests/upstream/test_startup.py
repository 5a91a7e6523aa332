"""The start-up wait of the one-shot commands and of calls (hub.upstream.startup.StartupWait.settle): each child is
waited for at most its own connect_timeout, and the progress callback hears of each as it settles."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.lowlevel
import pytest

from hub.upstream.child import Child
from hub.upstream.startup import SETTLE_SLACK, StartupWait


@dataclass
class Timeout:
    connect_timeout: float


@dataclass
class FakeChild:
    name: str
    connect_timeout: float
    settled: anyio.Event = field(default_factory=anyio.Event)

    @property
    def config(self) -> Timeout:
        return Timeout(self.connect_timeout)


def startup(children: list[FakeChild]) -> StartupWait:
    return StartupWait(lambda: cast(Any, {c.name: c for c in children}), time.monotonic(), lambda: 5.0)


@pytest.mark.anyio
async def test_a_hung_child_holds_the_wait_only_its_own_connect_timeout() -> None:
    quick, hung, slow = FakeChild("quick", 0.1), FakeChild("hung", 0.2), FakeChild("slow", 30.0)
    heard: list[list[str]] = []
    wait = startup([quick, hung, slow])
    with anyio.fail_after(0.2 + SETTLE_SLACK + 2):  # hung's own bound (the old wait gave every child 5 s more)
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait.settle, None, None, lambda left: heard.append([c.name for c in left]))
            await anyio.lowlevel.checkpoint()
            slow.settled.set()  # slow is up at once (its 30 s bound does not count); hung never answers
            quick.settled.set()
    assert heard[0] == ["quick", "hung", "slow"]
    assert heard[-1] == ["hung"], "the last report names the child that never settled"
    assert not hung.settled.is_set()


@pytest.mark.anyio
async def test_limit_s_bounds_the_whole_wait() -> None:
    hung = FakeChild("hung", 60.0)
    with anyio.fail_after(10):
        await startup([hung]).settle(cast(list[Child], [hung]), limit_s=0.05)
    assert not hung.settled.is_set()
