"""Tasks through the hub: the hub owns the task it hands out (decision
[015](../../docs/decisions/015-hub-owned-tasks.md)). A task-augmented `tools/call` is routed and admitted like any
call; the child's task becomes a record in the shared state (hub.relay.task_records) before the host gets its sealed
id; the replica that created it runs it (hub.relay.task_runner); any replica answers the host's task requests of
either era from the shared state, for the identity that created the task only, as its policy allows the tool now.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import anyio
import structlog

from hub.access.identity import Identity
from hub.protocol import errors, revisions
from hub.protocol.jsonrpc import INTERNAL_ERROR, encode
from hub.relay.attribution import Spawn
from hub.relay.call import Call, answer_error
from hub.relay.hosts import Hosts
from hub.relay.ports import HostRequest, StandIn
from hub.relay.record import Record
from hub.relay.task_records import (
    HANDSHAKE_TASK_METHODS,
    MODERN_TASK_METHODS,
    TERMINAL,
    TaskNeeded,
    TaskRefused,
    absorb,
    declares_extension,
    failed,
    not_found,
    now_iso,
    open_id,
    seal_id,
    shown,
    task_support,
    with_related,
)
from hub.relay.task_runner import Running, TaskRunner, outcome
from hub.state import SharedState
from hub.upstream.child import Child

RESULT_WAIT = 300.0  # tasks/result waits this long at most for the task to end
STORE_POLL = 1.0  # a replica that does not run the task reads its record again this often while it waits
Allowed = Callable[[Identity, str], bool]  # whether the identity's policy allows the exposed tool now

_log = structlog.get_logger("hub.relay")


class TaskCreation(StandIn):
    """A task-augmented tools/call on its way (`hub.relay.ports.StandIn`: the real request in all else): the
    call answers it with the child's CreateTaskResult, which becomes the hub's own task before the host gets it; any
    other answer passes through."""

    def __init__(self, request: HostRequest, tasks: Tasks, child: Child, exposed: str, rule: str | None) -> None:
        super().__init__(request)
        self.tasks = tasks
        self.child = child
        self.exposed = exposed
        self.rule = rule
        self.call: Call | None = None  # set once the call is made

    def respond(self, result: dict[str, Any] | bytes) -> None:
        try:
            answer = json.loads(result) if isinstance(result, bytes) else result
        except ValueError:
            answer = None
        task = answer.get("task") if isinstance(answer, dict) else None
        if isinstance(answer, dict) and answer.get("resultType") == "task":
            task = answer  # a 2026-07-28 child's task, inline
        connection = self.call.connection if self.call is not None else None
        if not isinstance(task, dict) or not isinstance(task.get("taskId"), str) or connection is None:
            self.real.respond(result)  # the server ran it as a plain call
            return
        assert isinstance(answer, dict)
        self.tasks.spawn(self.tasks.created, self, task, answer)


class Tasks:
    """The host's task requests, and the creation of tasks (the router hands both here)."""

    def __init__(
        self, state: SharedState, record: Record, hosts: Hosts, replica: str, spawn: Spawn, allowed: Allowed
    ) -> None:
        self.state = state
        self.record = record
        self.spawn = spawn
        self.allowed = allowed
        self.replica = replica
        self.runner = TaskRunner(state, record, hosts, replica, spawn)

    def asked(self, request: HostRequest, child: Child, exposed: str, original: str) -> bool:
        """Whether this admitted tools/call creates a task. Raises what the spec says for a task the tool cannot
        run (-32601), or, to a 2026-07-28 host without the extension, for a tool that runs only as one (-32021)."""
        if request.method != "tools/call":
            return False
        modern = revisions.is_modern(request.version)
        if not modern and request.params.get("task") is None:
            return False  # the common call: no task asked, nothing to look up
        support = task_support(child, original)
        if modern:
            if support != "required":
                return False
            if not declares_extension(request.params):
                raise TaskNeeded(
                    f"tool {exposed!r} runs only as a task: declare the extension "
                    "'io.modelcontextprotocol/tasks' in the request's client capabilities",
                    {"requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}},
                )
            return True
        if support == "forbidden":
            raise TaskRefused(
                f"Method not found: tool {exposed!r} cannot run as a task (its server does not offer it as one: "
                "execution.taskSupport)"
            )
        return True

    def creation(self, request: HostRequest, child: Child, exposed: str, rule: str | None) -> TaskCreation:
        return TaskCreation(request, self, child, exposed, rule)

    async def created(self, creation: TaskCreation, task: dict[str, Any], answer: dict[str, Any]) -> None:
        """The child made the task: stored as the hub's (durable before the host hears of it), then run here."""
        request, call = creation.real, creation.call
        assert call is not None and call.connection is not None
        identity = request.session.identity
        record: dict[str, Any] = {
            "key": secrets.token_hex(16),
            "identity": identity.name,
            "auth": identity.method,
            "session": request.session.label,
            "requestId": request.id,
            "rule": creation.rule,
            "child": creation.child.name,
            "childTask": task["taskId"],
            "tool": creation.exposed,
            "original": call.original,
            "owner": self.replica,
            "status": "working",
            "createdAt": task["createdAt"] if isinstance(task.get("createdAt"), str) else now_iso(),
            "lastUpdatedAt": now_iso(),
            "ttl": None,
            "began": time.time(),
        }
        absorb(record, task)
        key = self.state.known_key
        try:
            if key is None:
                raise errors.Unavailable("the hub's shared state has no sealing key: it could not be reached")
            record["id"] = seal_id(key, record)
            await self.runner.beat()
            await self.runner.store(record)
        except errors.HubError as error:
            _log.warning("task_not_stored", child=creation.child.name, error=error.message)
            answer_error(request, error)
            with anyio.move_on_after(5), suppress(errors.HubError, TimeoutError):  # the child need not run it
                await call.connection.request("tasks/cancel", {"taskId": task["taskId"]}, 5)
            return
        modern = revisions.is_modern(request.version)
        meta = revisions.unstamp(answer).get("_meta")
        shaped = {**shown(record, modern=True), "resultType": "task"} if modern else {"task": shown(record, False)}
        if isinstance(meta, dict):
            shaped["_meta"] = meta
        request.respond(encode(revisions.stamp(shaped, "tools/call") if modern else shaped))
        running = Running(record, creation.child, call.connection, request.session, modern)
        running.can_ask = frozenset(k for k in ("sampling", "elicitation", "roots") if request.declared(k))
        self.runner.running[record["key"]] = running  # before the first poll: a tasks/get may come at once
        self.spawn(self.runner.run, running)

    def handle(self, request: HostRequest) -> None:
        self.spawn(self._serve, request)

    async def _serve(self, request: HostRequest) -> None:
        began = time.perf_counter()
        modern = revisions.is_modern(request.version)
        found: dict[str, Any] = {}
        error: errors.HubError | None = None
        size = 0
        try:
            if request.method not in (MODERN_TASK_METHODS if modern else HANDSHAKE_TASK_METHODS):
                era = "the 2026-07-28 tasks extension" if modern else "the 2025-11-25 tasks"
                raise TaskRefused(f"Method not found: {request.method!r} (it is not part of {era})")
            if request.method == "tasks/list":
                result = await self._list(request)
            else:
                found = await self._find(request)
                result = await self._answer(request, found, modern)
            body = encode(revisions.stamp(result, request.method) if modern else result)
            request.respond(body)
            size = len(body)
        except errors.HubError as refused:
            error = refused
            size = answer_error(request, refused)
        self.record.line(
            request,
            found.get("child"),
            str(found.get("tool") or ""),
            found.get("original"),
            began,
            "ok" if error is None else error.outcome,
            error,
            size,
        )

    async def _find(self, request: HostRequest) -> dict[str, Any]:
        """The record the request's taskId names, if the caller created it and may still use its tool."""
        identity = request.session.identity
        key = open_id(self.state.known_key, request.params.get("taskId"), identity.name)
        record = None if key is None else await self.state.get_task(key)
        if record is None or not self.allowed(identity, str(record.get("tool"))):
            raise not_found()
        return await self._settle(record)

    async def _settle(self, record: dict[str, Any]) -> dict[str, Any]:
        """A record whose replica stopped running it is failed now, saying so (by whichever replica reads it)."""
        if record.get("final") or record.get("key") in self.runner.running:
            return record
        owner = record.get("owner")
        if owner == self.replica or not await self.state.alive(str(owner)):
            why = f"the hub replica '{owner}' that ran the task stopped; the task is lost"
            if record.get("status") in TERMINAL:
                record.update(final=True, error={"code": INTERNAL_ERROR, "message": why})
            else:
                failed(record, why, INTERNAL_ERROR)
            await self.runner.store(record)
            self.record.task_ended(record, outcome(record))
        return record

    async def _answer(self, request: HostRequest, record: dict[str, Any], modern: bool) -> dict[str, Any]:
        running = self.runner.running.get(record["key"])
        if request.method == "tasks/get":
            if running is not None:
                record = await self.runner.refresh(running) or record
            return shown(record, modern)
        if request.method == "tasks/cancel":
            return shown(await self._cancel(record, running), modern)
        if request.method == "tasks/update":
            if record.get("status") != "input_required":
                raise errors.BadRequest(f"the task is not waiting for input (its status is '{record['status']}')")
            responses = request.params.get("inputResponses")
            if not isinstance(responses, dict):
                raise errors.BadRequest("invalid params: 'inputResponses' must be an object")
            await self.state.put_answers(record["key"], responses, RESULT_WAIT)  # the replica running it answers
            if running is not None:
                await self.runner.refresh(running)
            return {}
        record = await self._wait_final(record)
        stored = record.get("error")
        if isinstance(stored, dict):
            code = stored.get("code")
            raise errors.ChildError(
                code if isinstance(code, int) else INTERNAL_ERROR, str(stored.get("message")), stored.get("data")
            )
        result = record.get("result")
        return with_related(result if isinstance(result, dict) else {}, record["id"])

    async def _cancel(self, record: dict[str, Any], running: Running | None) -> dict[str, Any]:
        if running is not None:
            return await self.runner.cancel(running)
        if record.get("status") in TERMINAL:
            raise errors.BadRequest(f"Cannot cancel task: already in terminal status '{record['status']}'")
        record.update(status="cancelled", statusMessage="The task was cancelled by request.", lastUpdatedAt=now_iso())
        await self.runner.store(record)
        await self.state.cancel_task(record["key"], RESULT_WAIT)  # the replica that runs it cancels it at the child
        return record

    async def _wait_final(self, record: dict[str, Any]) -> dict[str, Any]:
        """tasks/result: the record once the task is over, waited for (bounded)."""
        with anyio.move_on_after(RESULT_WAIT):
            while not record.get("final"):
                changed = self.runner.changed(record["key"])
                with anyio.move_on_after(STORE_POLL):
                    await changed.wait()
                again = await self.state.get_task(record["key"])
                if again is None:
                    raise not_found()
                record = await self._settle(again)
        if not record.get("final"):
            raise errors.Unavailable(
                f"the task is still '{record.get('status')}' after {RESULT_WAIT:g}s: ask tasks/get, then tasks/result "
                "again"
            )
        return record

    async def _list(self, request: HostRequest) -> dict[str, Any]:
        if request.params.get("cursor") is not None:
            raise errors.BadRequest("invalid params: the hub lists every task in one page; this cursor is not its own")
        identity = request.session.identity
        records = []
        for key in await self.state.task_keys(identity.name):
            record = await self.state.get_task(key)
            if record is not None and self.allowed(identity, str(record.get("tool"))):
                records.append(await self._settle(record))
        records.sort(key=lambda r: (str(r.get("createdAt")), str(r.get("key"))))
        return {"tasks": [shown(r, modern=False) for r in records]}
