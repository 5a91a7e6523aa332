"""A hub-owned task's record in the shared state, its sealed id, and how a host of either era sees it (decision
[015](../../docs/decisions/015-hub-owned-tasks.md)). The id a host holds seals the record's key, the child, the
child's task id and the identity under the replicas' shared key: it cannot be made, and it opens for the identity
that created it only (any other gets "not found").
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from hub.access.sealed import seal, unseal
from hub.protocol import errors
from hub.protocol.jsonrpc import METHOD_NOT_FOUND
from hub.protocol.revisions import CLIENT_CAPABILITIES_KEY
from hub.upstream.child import Child

# The methods of tasks: the 2026-07-28 extension's, 2025-11-25's, and both.
MODERN_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
HANDSHAKE_TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
TASK_METHODS = MODERN_TASK_METHODS | HANDSHAKE_TASK_METHODS
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# What the hub declares to a handshake-era host when a child runs tasks.
TASKS_CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
TERMINAL = frozenset({"completed", "failed", "cancelled"})
RELATED_TASK = "io.modelcontextprotocol/related-task"
SEALED_FOR = b"hub:task:v1"
# How long a task is kept when its child gives no ttl (or an unlimited one), and at most.
KEEP_DEFAULT_MS = 3_600_000
KEEP_MAX_MS = 86_400_000
MISSING_CAPABILITY = -32021  # the 2026-07-28 "Missing required client capability"


class TaskRefused(errors.HubError):
    """A task asked for a tool whose server cannot run it as one: -32601, as the 2025-11-25 spec says."""

    outcome = "not_task_capable"
    code = METHOD_NOT_FOUND
    tool_result = False


class TaskNeeded(TaskRefused):
    """A 2026-07-28 host that did not declare the tasks extension called a tool that runs only as a task."""

    code = MISSING_CAPABILITY


def not_found() -> errors.BadRequest:
    """What an unknown, expired, forged or another identity's task id gets: the same, so nothing is learnt."""
    return errors.BadRequest("Failed to retrieve task: Task not found")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _at(value: Any, *keys: str) -> Any:
    """`value[key][key]...`, or None where a level is not an object."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def child_runs_tasks(capabilities: dict[str, Any]) -> bool:
    """Whether a child's capabilities say it takes task-augmented tools/call (2025-11-25) or the extension."""
    return (
        _at(capabilities, "tasks", "requests", "tools", "call") is not None
        or _at(capabilities, "extensions", TASKS_EXTENSION) is not None
    )


def task_support(child: Child, original: str) -> str:
    """A child's tool's `execution.taskSupport` ("forbidden" when absent, or when the child runs no tasks)."""
    connection = child.shared
    if connection is None or not child_runs_tasks(connection.capabilities):
        return "forbidden"
    tool = next((t for t in child.listing.tools if t.get("name") == original), None)
    value = _at(tool, "execution", "taskSupport")
    return value if value in ("optional", "required") else "forbidden"


def tasks_offered(children: Iterable[Child]) -> bool:
    """Whether the hub declares `tasks`: a child runs them, or one is still starting (what it runs is not known
    yet; a task asked of a tool that cannot run one is refused as the spec says)."""
    return any(
        not child.settled.is_set() or (child.shared is not None and child_runs_tasks(child.shared.capabilities))
        for child in children
    )


def declares_extension(params: dict[str, Any]) -> bool:
    """Whether a 2026-07-28 request's envelope declares the tasks extension."""
    return _at(params, "_meta", CLIENT_CAPABILITIES_KEY, "extensions", TASKS_EXTENSION) is not None


def seal_id(key: bytes, record: dict[str, Any]) -> str:
    payload = {"k": record["key"], "c": record["child"], "t": record["childTask"], "i": record["identity"]}
    return seal(key, payload, SEALED_FOR)


def open_id(key: bytes | None, task_id: Any, identity: str) -> str | None:
    """The record key a host's task id names, if it was sealed here for `identity`; else None."""
    if key is None or not isinstance(task_id, str) or len(task_id) > 1024:
        return None
    payload = unseal(key, task_id, SEALED_FOR)
    if payload is None or payload.get("i") != identity or not isinstance(payload.get("k"), str):
        return None
    return str(payload["k"])


def keep_seconds(record: dict[str, Any]) -> float:
    """How long the shared state keeps a record: its ttl from creation (bounded), from now on."""
    ttl = record.get("ttl")
    ms = ttl if isinstance(ttl, int) and 0 < ttl <= KEEP_MAX_MS else KEEP_DEFAULT_MS
    return ms / 1000


def absorb(record: dict[str, Any], task: dict[str, Any]) -> bool:
    """The child's view of its task (a Task of either era) into the record; whether the host would see a change."""
    before = (record.get("status"), record.get("statusMessage"))
    status = task.get("status")
    if isinstance(status, str) and record.get("status") not in TERMINAL:
        record["status"] = status
    if "statusMessage" in task:
        message = task.get("statusMessage")
        record["statusMessage"] = message if isinstance(message, str) else None
    for field, modern in (("ttl", "ttlMs"), ("pollInterval", "pollIntervalMs")):
        value = task.get(field, task.get(modern))
        usable = value is None or (isinstance(value, int) and not isinstance(value, bool))
        if usable and (field in task or modern in task):
            record[field] = value
    updated = task.get("lastUpdatedAt")
    changed = before != (record.get("status"), record.get("statusMessage"))
    if isinstance(updated, str):
        record["lastUpdatedAt"] = updated
    elif changed:
        record["lastUpdatedAt"] = now_iso()
    return changed


def shown(record: dict[str, Any], modern: bool) -> dict[str, Any]:
    """The Task a host gets (`tasks/get`, `tasks/list`, the status notification), in its era's field names."""
    status = record["status"]
    if modern and status == "input_required" and not record.get("inputRequests"):
        # The child says it waits for input, but its question has not reached the hub yet: to a 2026-07-28 host,
        # input_required means "answer these inputRequests", and there is nothing to answer yet.
        status = "working"
    task: dict[str, Any] = {"taskId": record["id"], "status": status}
    if isinstance(record.get("statusMessage"), str):
        task["statusMessage"] = record["statusMessage"]
    task["createdAt"] = record["createdAt"]
    task["lastUpdatedAt"] = record["lastUpdatedAt"]
    task["ttlMs" if modern else "ttl"] = record.get("ttl")
    if record.get("pollInterval") is not None:
        task["pollIntervalMs" if modern else "pollInterval"] = record["pollInterval"]
    if status == "input_required" and modern:
        task["inputRequests"] = record["inputRequests"]
    if modern and record.get("final"):  # the extension's tasks/get carries the outcome inline
        if "result" in record:
            task["result"] = record["result"]
        elif "error" in record:
            task["error"] = record["error"]
    return task


def with_related(result: dict[str, Any], task_id: str) -> dict[str, Any]:
    """A task's result as `tasks/result` gives it: its `_meta` names the hub's task, not the child's."""
    meta = result.get("_meta")
    return {**result, "_meta": {**(meta if isinstance(meta, dict) else {}), RELATED_TASK: {"taskId": task_id}}}


def failed(record: dict[str, Any], why: str, code: int) -> None:
    """The record of a task the hub gives up on (its child restarted, its replica stopped): failed, with why."""
    record.update(status="failed", statusMessage=why, lastUpdatedAt=now_iso(), final=True)
    record.pop("result", None)
    record["error"] = {"code": code, "message": why}
