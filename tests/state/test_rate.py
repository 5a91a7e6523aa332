"""hub.state.rate, the one per-minute rule, and the memory backend that applies it (hub.state.memory); the Redis
backend's identical answers: tests/integration/test_rate_parity.py."""

from __future__ import annotations

import pytest

from hub.protocol import errors
from hub.state import MemoryState, RateDecision, RedisState
from hub.state.rate import WINDOW, decide, horizon
from tests.support.system import free_port

pytestmark = pytest.mark.anyio


def test_a_request_is_taken_while_fewer_than_the_limit_are_in_the_window() -> None:
    assert decide([], 100.0, 1) == RateDecision(True)
    assert decide([41.0, 50.0], 100.0, 3).allowed
    refused = decide([41.0, 50.0, 99.0], 100.0, 3)
    assert refused == RateDecision(False, 1.0), "retry when the oldest (41 s) leaves the 60 s window"


def test_after_a_lowered_limit_as_many_more_must_leave() -> None:
    assert decide([41.0, 50.0, 70.0, 99.0], 100.0, 2) == RateDecision(False, 30.0), "two must leave: 50 s is second"


def test_the_wait_is_rounded_up_to_the_millisecond_never_down_to_zero() -> None:
    assert decide([40.0000001], 100.0, 1).retry_after == 0.001
    assert horizon(100.0) == 100.0 - WINDOW


async def test_the_memory_window_bursts_to_the_limit_and_refills_as_requests_leave() -> None:
    now = [1000.0]
    state = MemoryState(clock=lambda: now[0])
    for _ in range(60):
        assert (await state.take("alice", 60)).allowed
    assert await state.take("alice", 60) == RateDecision(False, 60.0), "at most 60 in any 60 s"
    now[0] += 59.5
    assert await state.take("alice", 60) == RateDecision(False, 0.5), "a refusal is not counted: the wait stays"
    now[0] += 0.5  # the burst leaves the window at once
    for _ in range(60):
        assert (await state.take("alice", 60)).allowed
    assert not (await state.take("alice", 60)).allowed
    assert (await state.take("bob", 60)).allowed, "another identity has its own window"


async def test_identities_that_stopped_asking_are_forgotten() -> None:
    now = [1000.0]
    state = MemoryState(clock=lambda: now[0])
    for name in ("alice", "bob"):
        await state.take(name, 5)
    now[0] += WINDOW + 1
    await state.take("carol", 5)
    assert list(state._windows) == ["carol"]


async def test_a_redis_that_cannot_be_reached_refuses_with_an_error_naming_it() -> None:
    state = RedisState(f"redis://user:secret@127.0.0.1:{free_port()}/0")
    try:
        with pytest.raises(errors.Unavailable, match=r"Redis at redis://127\.0\.0\.1:\d+/0\) cannot be reached"):
            await state.take("alice", 5)
    finally:
        await state.close()
