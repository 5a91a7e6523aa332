"""A hub-owned task (decision [015](../../docs/decisions/015-hub-owned-tasks.md)): its record in the shared state,
its sealed id, and how a host of either era sees it.

The record names the task's child and the child's own task id, the identity that created it, the replica that runs
it (`owner`), and the task's state as the hub last saw it (`status`, `statusMessage`, `createdAt`, `lastUpdatedAt`,
`ttl`, `pollInterval`); once it is over, `final` and the answer `tasks/result` gives (`result` or `error`). The id a
host holds is the record's key, the child, the child's task id and the identity, sealed under the replicas' shared
key: it cannot be made, and it opens for the identity that created it only (any other gets "not found").
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

# The methods of tasks, of both eras (2025-11-25: get, result, list, cancel; the 2026-07-28 extension: get, update,
# cancel).
TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update"})
MODERN_TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
HANDSHAKE_TASK_METHODS = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
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


class TaskNeeded(errors.HubError):
    """A 2026-07-28 host that did not declare the tasks extension called a tool that runs only as a task."""

    outcome = "not_task_capable"
    code = MISSING_CAPABILITY
    tool_result = False


def not_found() -> errors.BadRequest:
    """What an unknown, expired, forged or another identity's task id gets: the same, so nothing is learnt."""
    return errors.BadRequest("Failed to retrieve task: Task not found")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def child_runs_tasks(capabilities: dict[str, Any]) -> bool:
    """Whether a child's capabilities say it takes task-augmented tools/call (2025-11-25) or the extension."""
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    if isinstance(tools, dict) and tools.get("call") is not None:
        return True
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and extensions.get(TASKS_EXTENSION) is not None


def task_support(child: Child, original: str) -> str:
    """A child's tool's `execution.taskSupport` ("forbidden" when absent, or when the child runs no tasks)."""
    connection = child.shared
    if connection is None or not child_runs_tasks(connection.capabilities):
        return "forbidden"
    for tool in child.listing.tools:
        if tool.get("name") == original:
            execution = tool.get("execution")
            value = execution.get("taskSupport") if isinstance(execution, dict) else None
            return value if value in ("optional", "required") else "forbidden"
    return "forbidden"


def tasks_offered(children: Iterable[Child]) -> bool:
    """Whether the hub declares `tasks`: a child runs them, or one is still starting (what it runs is not known
    yet; a task asked of a tool that cannot run one is refused as the spec says)."""
    for child in children:
        if not child.settled.is_set():
            return True
        connection = child.shared
        if connection is not None and child_runs_tasks(connection.capabilities):
            return True
    return False


def declares_extension(params: dict[str, Any]) -> bool:
    """Whether a 2026-07-28 request's envelope declares the tasks extension."""
    meta = params.get("_meta")
    capabilities = meta.get(CLIENT_CAPABILITIES_KEY) if isinstance(meta, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and extensions.get(TASKS_EXTENSION) is not None


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
