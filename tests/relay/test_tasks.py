"""The hub's own tasks in the relay (hub.relay.tasks, hub.relay.task_runner), with a fake child: what the child is
sent, what the host gets, and what another identity gets. Against server-everything: tests/integration/test_tasks.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from hub.access.identity import Identity
from hub.relay.task_records import TASKS_CAPABILITY
from tests.relay.harness import FakeSession, Relay, Upstream, running_relay

pytestmark = pytest.mark.anyio

TASK = {
    "taskId": "child-1",
    "status": "working",
    "createdAt": "2026-12-04T00:00:00Z",
    "lastUpdatedAt": "2026-12-04T00:00:00Z",
    "ttl": 60_000,
    "pollInterval": 100,
}


def task_child(relay: Relay) -> Upstream:
    child = relay.add_child("r", tools=("research", "echo"))
    child.connection.capabilities = {"tools": {}, "tasks": TASKS_CAPABILITY}
    research, echo = child.child.listing.tools
    child.child.listing = type(child.child.listing)(
        tools=({**research, "execution": {"taskSupport": "required"}}, echo)
    )
    relay.catalog.rebuild()
    return child


async def created(relay: Relay, child: Upstream, session: FakeSession | None = None) -> str:
    request = relay.request(
        "tools/call", {"name": "r_research", "arguments": {}, "task": {"ttl": 60_000}}, session=session
    )
    await child.wire.wait_for(lambda: bool(child.wire.requests("tools/call")))
    sent = child.last_request("tools/call")
    assert sent["params"]["task"] == {"ttl": 60_000}, "the child is asked for a task"
    child.answer(sent["id"], {"task": TASK})
    await request.answered()
    task: dict[str, Any] = request.result["task"]
    assert task["taskId"] != "child-1" and task["status"] == "working" and task["pollInterval"] == 100
    return str(task["taskId"])


async def test_a_task_asked_of_a_tool_that_runs_none_is_refused_and_never_sent() -> None:
    async with running_relay() as relay:
        child = task_child(relay)
        request = relay.request("tools/call", {"name": "r_echo", "arguments": {}, "task": {}})
        await request.answered()
        assert request.failure["code"] == -32601
        assert not child.wire.requests("tools/call")
        assert [line["outcome"] for line in relay.lines(request)] == ["not_task_capable"]


async def test_the_hub_hands_out_its_own_task_and_asks_the_child_for_its_state() -> None:
    async with running_relay() as relay:
        child = task_child(relay)
        task_id = await created(relay, child)
        get = relay.request("tasks/get", {"taskId": task_id})
        await child.wire.wait_for(lambda: bool(child.wire.requests("tasks/get")))
        asked = child.last_request("tasks/get")
        assert asked["params"] == {"taskId": "child-1"}, "the child is asked about its own task"
        child.answer(asked["id"], {**TASK, "statusMessage": "halfway"})
        await get.answered()
        assert get.result["taskId"] == task_id and get.result["statusMessage"] == "halfway"

        mallory = FakeSession("conn-m", identity=Identity("mallory"))
        stolen = relay.request("tasks/get", {"taskId": task_id}, session=mallory)
        unknown = relay.request("tasks/get", {"taskId": "child-1"}, session=mallory)
        await stolen.answered()
        await unknown.answered()
        assert (
            stolen.failure == unknown.failure == {"code": -32602, "message": "Failed to retrieve task: Task not found"}
        )


async def test_a_task_whose_child_connection_ends_fails_saying_why() -> None:
    async with running_relay() as relay:
        child = task_child(relay)
        task_id = await created(relay, child)
        child.connection.ended("server 'r' exited with code 1")
        result = relay.request("tasks/result", {"taskId": task_id})
        await result.answered()
        assert "restarted or went away" in result.failure["message"]
        assert "exited with code 1" in result.failure["message"]
        get = relay.request("tasks/get", {"taskId": task_id})
        await get.answered()
        assert get.result["status"] == "failed"
        (ended,) = [line for line in relay.calls if "task" in line]
        assert ended["outcome"] == "task_failed" and ended["child"] == "r"
