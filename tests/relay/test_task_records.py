"""A hub-owned task's record, sealed id and shapes (hub.relay.task_records); the tasks end to end:
tests/integration/test_tasks.py and test_tasks_eras.py."""

from __future__ import annotations

import secrets
from types import SimpleNamespace
from typing import Any

import anyio

from hub.relay.task_records import (
    TASKS_EXTENSION,
    absorb,
    child_runs_tasks,
    declares_extension,
    failed,
    keep_seconds,
    open_id,
    seal_id,
    shown,
    task_support,
    tasks_offered,
    with_related,
)
from hub.relay.task_runner import outcome

KEY = secrets.token_bytes(32)
TASKS_CALL = {"tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}


def record(**extra: Any) -> dict[str, Any]:
    base = {
        "key": "k1",
        "id": "sealed",
        "identity": "alice",
        "child": "everything",
        "childTask": "c1",
        "status": "working",
        "statusMessage": "Gathering sources...",
        "createdAt": "2026-12-04T00:00:00Z",
        "lastUpdatedAt": "2026-12-04T00:00:01Z",
        "ttl": 60_000,
        "pollInterval": 1000,
    }
    return {**base, **extra}


def child(capabilities: dict[str, Any] | None, tools: tuple[dict[str, Any], ...] = (), settled: bool = True) -> Any:
    done = anyio.Event()
    if settled:
        done.set()
    shared = None if capabilities is None else SimpleNamespace(capabilities=capabilities)
    return SimpleNamespace(shared=shared, listing=SimpleNamespace(tools=tools), settled=done)


def test_a_task_id_opens_for_the_identity_that_created_it_only() -> None:
    task_id = seal_id(KEY, record())
    assert open_id(KEY, task_id, "alice") == "k1"
    assert open_id(KEY, task_id, "bob") is None, "another identity: as if it did not exist"
    assert open_id(secrets.token_bytes(32), task_id, "alice") is None, "another hub's key"
    assert open_id(KEY, task_id[:-3] + ("AAA" if not task_id.endswith("AAA") else "BBB"), "alice") is None
    assert open_id(KEY, "c1", "alice") is None, "the child's own id is not a hub task id"
    assert open_id(KEY, 7, "alice") is None and open_id(None, task_id, "alice") is None
    assert seal_id(KEY, record()) != task_id, "sealed with a fresh nonce each time: nothing to guess from"


def test_a_host_sees_the_task_in_its_eras_field_names() -> None:
    old = shown(record(), modern=False)
    assert old == {
        "taskId": "sealed",
        "status": "working",
        "statusMessage": "Gathering sources...",
        "createdAt": "2026-12-04T00:00:00Z",
        "lastUpdatedAt": "2026-12-04T00:00:01Z",
        "ttl": 60_000,
        "pollInterval": 1000,
    }
    new = shown(record(status="completed", final=True, result={"content": []}), modern=True)
    assert new["ttlMs"] == 60_000 and new["pollIntervalMs"] == 1000 and "ttl" not in new
    assert new["result"] == {"content": []}, "the extension's tasks/get carries the result inline"
    assert "result" not in shown(record(status="completed", final=True, result={}), modern=False)
    assert "pollInterval" not in shown(record(pollInterval=None), modern=False)


def test_a_2026_host_is_told_input_required_only_with_the_requests_to_answer() -> None:
    asks = {"q1": {"method": "elicitation/create", "params": {"message": "which tides?"}}}
    # The child already says input_required; its question is still on its way to the hub.
    assert shown(record(status="input_required"), modern=True)["status"] == "working"
    ready = shown(record(status="input_required", inputRequests=asks), modern=True)
    assert (ready["status"], ready["inputRequests"]) == ("input_required", asks)
    assert shown(record(status="input_required"), modern=False)["status"] == "input_required"


def test_the_childs_view_updates_the_record_but_never_undoes_its_end() -> None:
    mine = record()
    assert absorb(mine, {"status": "working", "statusMessage": "Analyzing content...", "pollInterval": 500})
    assert mine["statusMessage"] == "Analyzing content..." and mine["pollInterval"] == 500
    assert not absorb(mine, {"status": "working", "statusMessage": "Analyzing content..."}), "nothing new"
    cancelled = record(status="cancelled")
    absorb(cancelled, {"status": "completed", "statusMessage": "Client cancelled task execution."})
    assert cancelled["status"] == "cancelled", "a cancelled task stays cancelled"
    modern = record()
    absorb(modern, {"status": "working", "ttlMs": None, "pollIntervalMs": 2000})
    assert modern["ttl"] is None and modern["pollInterval"] == 2000


def test_a_task_given_up_says_why_in_its_status_and_its_result() -> None:
    lost = record(result={"content": []})
    failed(lost, "server 'everything' restarted", -32603)
    assert lost["status"] == "failed" and lost["final"] and "result" not in lost
    assert lost["error"] == {"code": -32603, "message": "server 'everything' restarted"}
    assert lost["statusMessage"] == "server 'everything' restarted"
    assert outcome(lost) == "task_failed"
    assert outcome(record(status="completed", result={"isError": True})) == "tool_error"
    assert outcome(record(status="completed", result={})) == "ok"
    assert outcome(record(status="cancelled")) == "cancelled"


def test_a_result_names_the_hubs_task_not_the_childs() -> None:
    related = "io.modelcontextprotocol/related-task"
    result = {"content": [], "_meta": {related: {"taskId": "c1"}, "other": 1}}
    assert with_related(result, "sealed")["_meta"] == {related: {"taskId": "sealed"}, "other": 1}


def test_which_tools_run_as_tasks() -> None:
    tools = (
        {"name": "research", "execution": {"taskSupport": "required"}},
        {"name": "maybe", "execution": {"taskSupport": "optional"}},
        {"name": "echo"},
    )
    runs = child(TASKS_CALL, tools)
    assert [task_support(runs, n) for n in ("research", "maybe", "echo", "gone")] == [
        "required",
        "optional",
        "forbidden",
        "forbidden",
    ]
    assert task_support(child({}, tools), "research") == "forbidden", "the server does not declare tasks"
    assert task_support(child(None, tools), "research") == "forbidden", "the server is not connected"
    assert child_runs_tasks({"extensions": {TASKS_EXTENSION: {}}}), "a 2026-07-28 server's extension"
    assert not child_runs_tasks({"tasks": {"list": {}}})


def test_the_hub_offers_tasks_when_a_child_runs_them_or_may_once_started() -> None:
    assert tasks_offered([child({}), child(TASKS_CALL)])
    assert not tasks_offered([child({}), child(None)])
    assert tasks_offered([child(None, settled=False)]), "still starting: what it runs is not known yet"
    assert not tasks_offered([])


def test_a_2026_host_declares_the_extension_in_its_envelope() -> None:
    capabilities = "io.modelcontextprotocol/clientCapabilities"
    assert declares_extension({"_meta": {capabilities: {"extensions": {TASKS_EXTENSION: {}}}}})
    assert not declares_extension({"_meta": {capabilities: {}}})
    assert not declares_extension({})


def test_a_record_is_kept_for_its_ttl_bounded() -> None:
    assert keep_seconds(record(ttl=60_000)) == 60
    assert keep_seconds(record(ttl=None)) == 3600, "unlimited: the hub's default"
    assert keep_seconds(record(ttl=10**12)) == 3600, "over the hub's maximum: its default"
