"""One per-minute rule with and without Redis (docs/decisions/013-one-rate-algorithm.md): the same calls, on one
controlled clock, get the same answers from the memory backend and from the Redis backend's script, against a
real Redis server (Debian's; the test is skipped, naming it, when redis-server is not installed)."""

from __future__ import annotations

import random

import pytest

from hub.state import MemoryState, RateDecision, RedisState
from tests.integration.test_shared_state import redis_server

pytestmark = pytest.mark.anyio

# A wall-clock start, so that Redis holds scores as large as real ones (sub-millisecond digits included).
START = 1_764_000_000.123456


async def both(calls: list[tuple[float, str, int]]) -> list[tuple[RateDecision, RateDecision]]:
    """Each call (seconds the clock moves first, identity, per_minute) taken from both backends at one instant."""
    now = [START]
    memory = MemoryState(clock=lambda: now[0])
    async with redis_server() as url:
        redis = RedisState(url, clock=lambda: now[0])
        try:
            answers = []
            for advance, identity, per_minute in calls:
                now[0] += advance
                answers.append((await memory.take(identity, per_minute), await redis.take(identity, per_minute)))
            return answers
        finally:
            await redis.close()


async def test_the_rule_as_documented_from_both_backends() -> None:
    calls = [(0.0, "alice", 3)] * 4 + [(30.0, "alice", 3), (0.0, "bob", 3), (30.0, "alice", 3), (0.0, "alice", 3)]
    calls += [(0.0, "alice", 3), (0.0, "alice", 3), (59.999, "alice", 3), (0.001, "alice", 3)]
    expected = [RateDecision(True)] * 3 + [RateDecision(False, 60.0), RateDecision(False, 30.0), RateDecision(True)]
    # At +60 s the burst leaves at once: three more are taken, the fourth waits a whole window again.
    expected += [RateDecision(True)] * 3 + [RateDecision(False, 60.0), RateDecision(False, 0.001), RateDecision(True)]
    # 20 µs before a request leaves the window it is still in it (Redis compares the same doubles, not rounded ones).
    calls += [(0.0, "carol", 1), (59.99998, "carol", 1), (0.00002, "carol", 1)]
    expected += [RateDecision(True), RateDecision(False, 0.001), RateDecision(True)]
    answers = await both(calls)
    assert [memory for memory, _ in answers] == expected
    assert [redis for _, redis in answers] == expected


async def test_the_same_random_calls_get_the_same_answers_from_both_backends() -> None:
    rng = random.Random(27)
    steps = (0.0, 0.0, 0.0, 0.0, 0.0, 0.001, 0.1, 0.37, 1.0, 2.5, 7.3, 14.999, 15.0, 29.9, 59.999, 60.0, 61.0)
    limits = {"alice": 3, "bob": 5, "carol": 1}
    calls = []
    for _ in range(600):
        identity = rng.choice(sorted(limits))
        if rng.random() < 0.03:  # a reload changes the identity's limit (lowered: more in the window than allowed)
            limits[identity] = rng.randint(1, 6)
        calls.append((rng.choice(steps), identity, limits[identity]))
    answers = await both(calls)
    for index, (memory, redis) in enumerate(answers):
        assert memory == redis, f"call {index} {calls[index]}: memory {memory}, redis {redis}"
    taken = sum(memory.allowed for memory, _ in answers)
    assert 100 < taken < 500, "the sequence exercises both answers"
    assert len({memory.retry_after for memory, _ in answers if not memory.allowed}) > 20, "waits of many lengths"
