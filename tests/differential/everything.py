"""@modelcontextprotocol/server-everything and its script: every feature of the protocol it demonstrates."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types

from tests.differential.harness import NEW, Outcome, ServerSpec, Side
from tests.differential.servers import ISO_TIME, npm_entry, npm_missing
from tests.support.waits import WAIT

# Variables a child inherits from the hub (docs/configuration.md) that the SDK's client does not pass: get-env answers
# the server's environment, so both sides get them from the entry.
INHERITED = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "LC_CTYPE": "C.UTF-8", "TZ": "UTC", "TMPDIR": "/tmp"}
# The hub's mark in its children's environment (docs/configuration.md, the child's environment).
HUB_INSTANCE = (r'\n\s*"HUB_INSTANCE": "[^"]*",', "")
# What the server makes up on each call: task ids, the clock of its dynamic resources, random ids.
TASK_ID = (r'"taskId": "[^"]+"', '"taskId": "<task>"')
TASK_NAMED = (r"Task [0-9a-f]{32} ", "Task <task> ")  # in the server's own error messages
CLOCK = (r"\d\d?:\d\d:\d\d [AP]M", "<clock>")
UUID = (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>")
DOCUMENT = "demo://resource/static/document/architecture.md"


async def _progress(side: Side) -> Outcome:
    seen: list[list[Any]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append([progress, total, message])

    answer = await side.call(
        "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, progress_callback=on_progress
    )
    return {"answer": answer, "progress": seen}


async def _cancel(side: Side) -> Outcome:
    """The host cancels a call in flight (after its first progress): no answer, and the server goes on serving."""
    started = anyio.Event()
    answered: list[Outcome] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        started.set()

    async def call() -> None:
        arguments = {"duration": 30, "steps": 30}
        answered.append(await side.call("trigger-long-running-operation", arguments, progress_callback=on_progress))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        with anyio.fail_after(WAIT):
            await started.wait()
        group.cancel_scope.cancel()
    return {"answered": answered, "after": await side.call("echo", {"message": "after the cancel"})}


async def _logging(side: Side) -> Outcome:
    """logging/setLevel, then the server's simulated log messages (a random level each: only who logs is compared)."""
    level = await side.send(types.SetLevelRequest(params=types.SetLevelRequestParams(level="debug")))
    on = await side.call("toggle-simulated-logging", {})
    await side.host.wait_for(lambda: bool(side.host.logs), "a log message", limit=15)
    off = await side.call("toggle-simulated-logging", {})
    first = side.host.logs[0].model_dump(by_alias=True, exclude_none=True, mode="json")
    return {"setLevel": level, "on": on, "off": off, "log": {**first, "level": "<random>", "data": "<random>"}}


async def _subscribe(side: Side) -> Outcome:
    """A resource subscription and the server's update of it: resources/subscribe on a handshake connection,
    subscriptions/listen on a 2026-07-28 one (the revision's own way)."""
    uri = side.uri(DOCUMENT)
    if side.modern:
        return await _listen_for_update(side, uri)
    subscribed = await side.send(types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)))
    on = await side.call("toggle-subscriber-updates", {})

    def updates() -> list[Any]:
        return [n for n in side.host.notifications if isinstance(n, types.ResourceUpdatedNotification)]

    await side.host.wait_for(lambda: bool(updates()), "resources/updated", limit=15)
    off = await side.call("toggle-subscriber-updates", {})
    await side.send(types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri)))
    assert subscribed == {"result": {}}, subscribed
    return {"on": on, "off": off, "updated": {"uri": updates()[0].params.uri}}


async def _listen_for_update(side: Side, uri: str) -> Outcome:
    updated: Any = "no notification within 12 s (the server sends one at once, then every 5 s)"
    async with side.client.listen(resource_subscriptions=[uri]) as subscription:
        on = await side.call("toggle-subscriber-updates", {})
        with anyio.move_on_after(12):
            async for event in subscription:
                updated = {"uri": getattr(event, "uri", repr(event))}
                break
        off = await side.call("toggle-subscriber-updates", {})
    return {"on": on, "off": off, "updated": updated}


def _asked(records: list[Any]) -> list[Any]:
    return [r.model_dump(by_alias=True, exclude_none=True, mode="json") for r in records]


async def _sampling(side: Side) -> Outcome:
    answer = await side.call_driven("trigger-sampling-request", {"prompt": "Say hi", "maxTokens": 10})
    return {"answer": answer, "host was asked": _asked(side.host.sampled)}


async def _elicit(side: Side) -> Outcome:
    """Form mode, URL mode, and URL mode's -32042 error path (its retry goes through: the server's marker is reset)."""
    form = await side.call_driven("trigger-elicitation-request", {})
    url = {"url": "https://example.com/consent", "elicitationId": "differential"}
    by_url = await side.call_driven("trigger-url-elicitation", url)
    error_path = await side.call("trigger-url-elicitation", {**url, "errorPath": True})
    retried = await side.call_driven("trigger-url-elicitation", {**url, "errorPath": True})
    completions = [n for n in side.host.notifications if type(n).__name__ == "ElicitCompleteNotification"]
    return {
        "form": form,
        "url": by_url,
        "-32042": error_path,
        "retry": retried,
        "host was asked": _asked(side.host.elicited),
        "notifications/elicitation/complete": _asked(completions),
    }


async def _roots(side: Side) -> Outcome:
    return await side.call_driven("get-roots-list", {})


async def _tasks(side: Side) -> Outcome:
    """The tool that requires a task called without one, then a task-augmented tools/call, then tasks/get,
    tasks/list, tasks/cancel and tasks/result on the task."""
    without = await side.call("simulate-research-query", {"topic": "without a task"})
    params = types.CallToolRequestParams(
        name=side.tool("simulate-research-query"), arguments={"topic": "tides"}, task=types.TaskMetadata(ttl=60_000)
    )
    created = await side.send_unchecked("tools/call", params.model_dump(by_alias=True, exclude_none=True, mode="json"))
    steps: dict[str, Outcome] = {
        "tools/call without a task": without,
        "tools/call with task": created,
    }
    task_id = created.get("result", {}).get("task", {}).get("taskId")
    if not isinstance(task_id, str):
        return steps
    steps["tasks/get"] = await side.send(types.GetTaskRequest(params=types.GetTaskRequestParams(task_id=task_id)))
    listed = await side.send(types.ListTasksRequest())
    if "result" in listed:  # this run's task (the server's connection outlives one run)
        listed["result"]["tasks"] = [t for t in listed["result"]["tasks"] if t.get("taskId") == task_id]
    steps["tasks/list"] = listed
    steps["tasks/cancel"] = await side.send(
        types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id=task_id))
    )
    steps["tasks/result"] = await side.send(
        types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id=task_id))
    )
    return steps


EVERYTHING = ServerSpec(
    name="everything",
    entry=lambda workspace: npm_entry("mcp-server-everything", "stdio", **INHERITED),
    missing=lambda: npm_missing("mcp-server-everything"),
    calls=lambda workspace: [
        ("echo", {"message": "héllo ✓"}),
        ("get-annotated-message", {"messageType": "error"}),
        ("get-annotated-message", {"messageType": "success", "includeImage": True}),
        ("get-env", {}),
        ("get-resource-links", {"count": 4}),
        ("get-resource-reference", {"resourceType": "Text", "resourceId": 2}),
        ("get-resource-reference", {"resourceType": "Blob", "resourceId": 3}),
        ("get-structured-content", {"location": "Chicago"}),
        ("get-sum", {"a": 2, "b": 40.5}),
        ("get-sum", {"a": "two"}),
        ("get-tiny-image", {}),
        # outputType resource: a resourceLink would add a resource to the server's list for the rest of its life,
        # and the direct connection (one per era) outlives the hub's child of each front.
        (
            "gzip-file-as-resource",
            {"name": "a.txt.gz", "data": "data:text/plain;base64,aGVsbG8K", "outputType": "resource"},
        ),
        (
            "gzip-file-as-resource",
            {"name": "b.txt.gz", "data": "data:text/plain;base64,aGk=", "outputType": "resource"},
        ),
        ("toggle-simulated-logging", {}),
        ("toggle-simulated-logging", {}),
        ("toggle-subscriber-updates", {}),
        ("toggle-subscriber-updates", {}),
        ("trigger-long-running-operation", {"duration": 0.2, "steps": 2}),
    ],
    # The tools that ask the host for input are called by the features (sampling, elicit, roots), through the SDK's
    # own loop: through the hub, a 2026-07-28 host gets their requests as input-required rounds.
    prompts=[
        ("simple-prompt", {}),
        ("args-prompt", {"city": "Paris", "state": "Île-de-France"}),
        ("completable-prompt", {"department": "Engineering", "name": "Alice"}),
        ("resource-prompt", {"resourceType": "Text", "resourceId": "2"}),
        ("resource-prompt", {"resourceType": "Blob", "resourceId": "5"}),
    ],
    templates={
        "demo://resource/dynamic/text/{resourceId}": ["demo://resource/dynamic/text/1"],
        "demo://resource/dynamic/blob/{resourceId}": ["demo://resource/dynamic/blob/2"],
    },
    completions=[
        ({"type": "ref/prompt", "name": "completable-prompt"}, {"name": "department", "value": "E"}),
        (
            {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"},
            {"name": "resourceId", "value": "1"},
        ),
    ],
    features={
        "progress": _progress,
        "cancel": _cancel,
        "logging": _logging,
        "subscribe": _subscribe,
        "sampling": _sampling,
        "elicit": _elicit,
        "roots": _roots,
        "tasks": _tasks,
    },
    # simulate-research-query requires a task: called by the tasks feature, with and without one (a 2026-07-28 host
    # without the tasks extension is refused -32021 by the hub, as the extension says; the server itself speaks only
    # 2025-11-25, so that difference is the tasks cell's documented gap).
    feature_tools=frozenset(
        {
            "trigger-sampling-request",
            "trigger-elicitation-request",
            "trigger-url-elicitation",
            "get-roots-list",
            "simulate-research-query",
        }
    ),
    handshake_only=frozenset({"logging"}),
    volatile=[ISO_TIME, CLOCK, UUID, TASK_ID, TASK_NAMED, HUB_INSTANCE],
    session_resources="demo://resource/session/",
    gaps={
        ("subscribe", None, NEW): "found by this suite: a 2026-07-28 host's subscriptions/listen with "
        "resourceSubscriptions is acknowledged as honoured, but the hub never sends the server resources/subscribe "
        "(only a handshake host's resources/subscribe does), so no notifications/resources/updated ever comes",
        ("capabilities", None, NEW): "the server speaks 2025-11-25 only, so directly a 2026-07-28 host falls back "
        "and sees the 2025-11-25 `tasks` capability; through the hub it speaks 2026-07-28, where tasks are the "
        "extension io.modelcontextprotocol/tasks (capabilities.extensions), not `tasks` (docs/decisions/015)",
        ("tasks", None, NEW): "the script's task steps are 2025-11-25's (params.task, tasks/list, tasks/result, no "
        "envelope), which the server answers directly after its fallback; a 2026-07-28 host through the hub has the "
        "tasks extension instead (tests/integration/test_tasks_eras.py drives it), and without the extension the tool "
        "that requires a task gets -32021 from the hub, as the extension says, where the server answers isError",
    },
)
