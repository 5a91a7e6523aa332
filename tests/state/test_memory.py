"""hub.state.memory's task store (the Redis one behaves alike across replicas: tests/integration/test_tasks.py)."""

from __future__ import annotations

import pytest

from hub.state import MemoryState

pytestmark = pytest.mark.anyio


async def test_a_task_record_is_kept_for_its_time_and_listed_for_its_identity() -> None:
    state = MemoryState()
    await state.put_task("k1", {"identity": "alice", "status": "working"}, 60)
    await state.put_task("k2", {"identity": "alice", "status": "working"}, -1)  # already expired
    await state.put_task("k3", {"identity": "bob", "status": "working"}, 60)
    assert await state.get_task("k1") == {"identity": "alice", "status": "working"}
    assert await state.get_task("k2") is None and await state.get_task("nope") is None
    assert await state.task_keys("alice") == ["k1"]
    assert await state.task_keys("bob") == ["k3"] and await state.task_keys("carol") == []
    copy = await state.get_task("k1")
    assert copy is not None
    copy["status"] = "changed"
    assert (await state.get_task("k1") or {})["status"] == "working", "a read is a copy, as Redis's would be"


async def test_a_cancel_and_a_replicas_beat_are_remembered() -> None:
    state = MemoryState()
    assert not await state.task_cancelled("k1")
    await state.cancel_task("k1", 60)
    assert await state.task_cancelled("k1")
    assert not await state.alive("a")
    await state.beat("a", 20)
    assert await state.alive("a")
    await state.beat("a", -1)
    assert not await state.alive("a")
