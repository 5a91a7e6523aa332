"""The replica that created a task runs it (decision 015): it polls the child's task, keeps its state and answer in
the shared state, cancels it at the child, tells the owning host session of each change, and writes the call log's
line when it ends. A task does not outlive its child's connection: when that ends, the task fails, saying why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from hub.protocol import errors
from hub.protocol.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, Request
from hub.relay.attribution import Spawn, ask_host
from hub.relay.call import refusal
from hub.relay.hosts import Hosts
from hub.relay.naming import expose_uri, map_uris
from hub.relay.record import Record
from hub.relay.task_records import RELATED_TASK, TERMINAL, absorb, failed, keep_seconds, not_found, now_iso, shown
from hub.state import SharedState
from hub.upstream.child import Child
from hub.upstream.connection import Connection

POLL_BOUNDS = (0.1, 10.0)  # seconds between two asks of the child, whatever pollInterval it gives
DEFAULT_POLL = 1.0
BEAT_EVERY = 5.0  # a replica running tasks says it is alive this often...
BEAT_KEEP = 20.0  # ...and is taken for stopped when it has not for this long
ASK_LIMIT = 30.0  # one tasks/get, tasks/result or tasks/cancel to the child, at most
MAX_FAILURES = 5  # consecutive tasks/get that fail before the task is given up
COLLECT_LIMIT = 600.0  # a tasks/result opened for a task's input requests stays open this long at most
STOP_LIMIT = 3.0  # when the hub stops, each task it runs is failed (and cancelled at its child) within this

_log = structlog.get_logger("hub.relay")


@dataclass
class Running:
    """A task this replica runs: where its child's task lives, and who gets its status notifications."""

    record: dict[str, Any]
    child: Child
    connection: Connection
    session: object  # the host session that created it (its notifications go there while it is connected)
    modern: bool
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    wake: anyio.Event = field(default_factory=anyio.Event)
    failures: int = 0
    collecting: bool = False  # a tasks/result is open at the child, for the input it asks (input_required)
    can_ask: frozenset[str] = frozenset()  # what a 2026-07-28 creator declared it can be asked (elicitation, ...)
    asks: dict[str, Request] = field(default_factory=dict)  # a 2026-07-28 creator's input requests, by key
    asked: int = 0

    @property
    def key(self) -> str:
        return str(self.record["key"])

    def input_requests(self) -> dict[str, dict[str, Any]]:
        return {k: {"method": r.method, "params": r.params} for k, r in self.asks.items()}


class TaskRunner:
    """The tasks this replica runs, and every write of their records (the other replicas write only a cancel and a
    failure of a replica that stopped)."""

    def __init__(self, state: SharedState, record: Record, hosts: Hosts, replica: str, spawn: Spawn) -> None:
        self.state = state
        self.spawn = spawn
        self.record = record
        self.hosts = hosts
        self.replica = replica
        self.running: dict[str, Running] = {}
        self._changed: dict[str, anyio.Event] = {}
        self._last_beat = -BEAT_EVERY

    async def store(self, record: dict[str, Any]) -> None:
        """Write a record; whoever waits on this replica for it to change is woken."""
        await self.state.put_task(record["key"], record, keep_seconds(record))
        event = self._changed.pop(record["key"], None)
        if event is not None:
            event.set()

    def changed(self, key: str) -> anyio.Event:
        """Set at the next write of `key`'s record on this replica."""
        return self._changed.setdefault(key, anyio.Event())

    async def beat(self) -> None:
        now = time.monotonic()
        if now - self._last_beat >= BEAT_EVERY:
            await self.state.beat(self.replica, BEAT_KEEP)
            self._last_beat = now

    async def run(self, task: Running) -> None:
        """Ask the child how the task is until it is over (or its record is gone); the relay's task group runs it."""
        self.running[task.key] = task
        try:
            async with anyio.create_task_group() as collectors:
                await self._poll(task, collectors)
                collectors.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_LIMIT):
                await self._stopped(task)
            raise
        finally:
            self.running.pop(task.key, None)

    async def _poll(self, task: Running, collectors: TaskGroup) -> None:
        while True:
            poll = task.record.get("pollInterval")
            seconds = poll / 1000 if isinstance(poll, int) and poll > 0 else DEFAULT_POLL
            with anyio.move_on_after(min(max(seconds, POLL_BOUNDS[0]), POLL_BOUNDS[1])):
                async with anyio.create_task_group() as group:
                    group.start_soon(_until, task.wake, group)
                    group.start_soon(_until, task.connection.done, group)
            task.wake = anyio.Event()
            try:
                await self.beat()
                current = await self.refresh(task)
            except errors.HubError as error:  # the shared state cannot be reached: tried again
                _log.warning("task_state_unavailable", task=task.key, error=error.message)
                current = task.record
            if current is None or current.get("final"):
                return
            if current.get("status") == "input_required" and not task.collecting:
                task.collecting = True
                collectors.start_soon(self._collect, task)

    async def _collect(self, task: Running) -> None:
        """A task waits for input: its server sends its requests (`relatedTask`) while a tasks/result is open
        (2025-11-25), so one is opened; they reach the owning host session (`child_asked`)."""
        try:
            await task.connection.request("tasks/result", {"taskId": task.record["childTask"]}, COLLECT_LIMIT)
        except (errors.HubError, TimeoutError):
            pass  # the answer is fetched again once the task is over
        finally:
            task.collecting = False
            task.wake.set()

    def child_asked(self, connection: Connection, request: Request, kind: str) -> bool:
        """A child's request for one of the tasks this replica runs (`relatedTask` in its `_meta`) goes to the host
        session that created the task, naming the hub's task; False if it names none of them."""
        meta = request.params.get("_meta")
        related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
        child_task = related.get("taskId") if isinstance(related, dict) else None
        task = next(
            (t for t in self.running.values() if t.connection is connection and t.record["childTask"] == child_task),
            None,
        )
        if task is None:
            return False
        named = {**(meta if isinstance(meta, dict) else {}), RELATED_TASK: {"taskId": task.record["id"]}}
        relayed = Request(request.id, request.method, {**request.params, "_meta": named}, request.raw)
        session = self.hosts.connected(task.session)
        if task.modern and kind in task.can_ask:  # the host gets it in tasks/get, answers it with tasks/update
            task.asked += 1
            task.asks[f"{kind}-{task.asked}"] = relayed
            self.spawn(self._hold, task)
        elif session is None or task.modern:
            why = (
                f"hub: the host that created task {task.key} is gone, or did not declare {kind}; the task's input "
                "cannot be asked"
            )
            connection.respond(request.id, error={"code": INVALID_REQUEST, "message": why})
        elif not session.declared(kind):
            connection.respond(request.id, error=refusal(kind, task.child.name))
        else:
            self.spawn(ask_host, session.ask, connection, relayed, task.child.config.timeout)
        return True

    async def _hold(self, task: Running) -> None:
        """A 2026-07-28 creator's input requests, in the record: its next tasks/get shows them (`inputRequests`)."""
        async with task.lock:
            record = await self.state.get_task(task.key)
            if record is None or record.get("final"):
                return
            task.record = record
            record["inputRequests"] = task.input_requests()
            record.update(status="input_required", lastUpdatedAt=now_iso())
            await self.store(record)

    async def _answered(self, task: Running) -> bool:
        """The answers a 2026-07-28 creator sent (tasks/update, on any replica) go to the child's requests; keys
        not outstanding are ignored, as the extension says. Whether any was."""
        if not task.asks:
            return False
        answers = await self.state.take_answers(task.key)
        used = [key for key in answers if key in task.asks]
        for key in used:
            answer = answers[key]
            task.connection.respond(task.asks.pop(key).id, answer if isinstance(answer, dict) else {})
        if used:
            task.record["inputRequests"] = task.input_requests()
        return bool(used)

    async def _stopped(self, task: Running) -> None:
        """The hub stops while it runs the task: the task fails, saying so, and the child is told to cancel it."""
        try:
            record = await self.state.get_task(task.key)
            if record is None or record.get("final"):
                return
            task.record = record
            if task.connection.closed is None:
                with anyio.move_on_after(STOP_LIMIT / 2):
                    await task.connection.request("tasks/cancel", {"taskId": record["childTask"]}, STOP_LIMIT / 2)
            await self.fail(task, f"the hub replica '{self.replica}' that ran the task stopped; the task is lost")
        except (errors.HubError, TimeoutError) as error:
            _log.warning("task_not_failed_at_stop", task=task.key, error=str(error))

    async def refresh(self, task: Running) -> dict[str, Any] | None:
        """The task as it is now: asked of the child (unless over), stored when it changed; None if gone."""
        async with task.lock:
            record = await self.state.get_task(task.key)
            if record is None:
                return None
            task.record = record
            if record.get("final"):
                return record
            if record.get("status") in TERMINAL or await self.state.task_cancelled(task.key):
                await self._cancel_at_child(task, None)  # cancelled on another replica
                return task.record
            if task.connection.closed is not None:
                await self.fail(task, _lost(task))
                return task.record
            try:
                got = await task.connection.request("tasks/get", {"taskId": record["childTask"]}, ASK_LIMIT)
            except (errors.HubError, TimeoutError) as error:
                task.failures += 1
                if task.connection.closed is not None:
                    await self.fail(task, _lost(task))
                elif task.failures >= MAX_FAILURES:
                    why = getattr(error, "message", None) or "it did not answer"
                    await self.fail(task, f"server '{task.child.name}' could not say how the task is: {why}")
                return task.record
            task.failures = 0
            changed = await self._answered(task)
            changed = absorb(record, got) or changed
            if record.get("status") in TERMINAL:
                await self._end_with_outcome(task)
            elif changed:
                await self.store(record)
                self._notify(task)
            return task.record

    async def cancel(self, task: Running) -> dict[str, Any]:
        """The host cancels a task this replica runs: cancelled at the child (its answer kept), then stored."""
        async with task.lock:
            record = await self.state.get_task(task.key)
            if record is None:
                raise not_found()
            task.record = record
            if record.get("status") in TERMINAL:
                raise errors.BadRequest(f"Cannot cancel task: already in terminal status '{record['status']}'")
            await self._cancel_at_child(task, "The task was cancelled by request.")
            return task.record

    async def fail(self, task: Running, why: str) -> None:
        failed(task.record, why, INTERNAL_ERROR)
        await self._end(task)

    async def _cancel_at_child(self, task: Running, message: str | None) -> None:
        record = task.record
        if task.connection.closed is None:
            try:
                got = await task.connection.request("tasks/cancel", {"taskId": record["childTask"]}, ASK_LIMIT)
                absorb(record, got)
            except (errors.HubError, TimeoutError):
                pass  # the child could not cancel it: the task is cancelled all the same, as the host asked
        if record.get("status") != "cancelled":
            record.update(status="cancelled", lastUpdatedAt=now_iso())
            if message is not None or not record.get("statusMessage"):
                record["statusMessage"] = message or "The task was cancelled by request."
        await self._end_with_outcome(task)

    async def _end_with_outcome(self, task: Running) -> None:
        """The task is over at its child: it ends with what tasks/result answers for it, the child's own answer (its
        result or its error)."""
        record = task.record
        try:
            if task.connection.closed is not None:
                raise errors.Unavailable(_lost(task))
            result = await task.connection.request("tasks/result", {"taskId": record["childTask"]}, ASK_LIMIT)
            prefix = task.child.prefix
            if prefix:
                result = map_uris(result, lambda uri: expose_uri(prefix, uri))
            record.pop("error", None)
            record["result"] = result
        except errors.HubError as error:
            record.pop("result", None)
            record["error"] = {"code": error.code, "message": error.message}
            if error.data is not None:
                record["error"]["data"] = error.data
        except TimeoutError:
            record["error"] = {"code": INTERNAL_ERROR, "message": "the task's server did not give its result in time"}
        await self._end(task)

    async def _end(self, task: Running) -> None:
        record = task.record
        record["final"] = True
        await self.store(record)
        self._notify(task)
        self.record.task_ended(record, outcome(record))

    def _notify(self, task: Running) -> None:
        """The owning host session gets the task's new status, if it is still connected here (handshake era)."""
        session = self.hosts.connected(task.session)
        if session is not None and not task.modern:
            session.notify("notifications/tasks/status", shown(task.record, modern=False))


def outcome(record: dict[str, Any]) -> str:
    """A task's end as the call log names it."""
    status = record.get("status")
    if status == "completed":
        result = record.get("result")
        return "tool_error" if isinstance(result, dict) and result.get("isError") is True else "ok"
    return "cancelled" if status == "cancelled" else "task_failed"


def _lost(task: Running) -> str:
    return (
        f"server '{task.child.name}' restarted or went away while it ran the task "
        f"({task.connection.closed or 'its connection ended'}); the task is lost"
    )


async def _until(event: anyio.Event, group: Any) -> None:
    await event.wait()
    group.cancel_scope.cancel()
