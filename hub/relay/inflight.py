"""What the relay has in flight: calls, staged steps, parked calls, the tasks they spawn, and the drain's wait.

A **call** is in flight from its start to its one answer, under its host request's (session, id): another request
with that id on that connection is refused meanwhile, and the host's cancel finds it. A **staged step** (an admitted
request waiting for the replicas' count of its minute, or its user's confirmation) is in flight too, so that the
drain waits for it and the host's cancel ends it unanswered. A **parked call** (`hub.relay.rounds`) is not: nothing
of the host's waits on it, and its deadline bounds it.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from hub.protocol.jsonrpc import RequestId
from hub.relay.call import Call
from hub.relay.deadlines import Deadlines
from hub.relay.ports import HostRequest

_log = structlog.get_logger("hub")
Key = tuple[object, RequestId]


class InFlight:
    """The calls, staged steps and parked calls of one relay, and its task group."""

    def __init__(self) -> None:
        self.deadlines = Deadlines()
        self.calls: dict[Key, Call] = {}
        # Admitted requests in a step that waits before their call (the replicas' count, the user's confirmation).
        self._staged: dict[Key, tuple[anyio.CancelScope, HostRequest]] = {}
        self.parked: dict[str, Call] = {}  # by token, until the host comes back with the round's answers
        self._idle: anyio.Event | None = None  # set when the last call in flight ends (`wait_idle`)
        self._tg: TaskGroup | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The deadline watcher and the tasks calls start (asking a host, opening a connection), until cancelled;
        ready (`task_group.start`) once tasks can be spawned."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self.deadlines.run)
            task_status.started()
            await anyio.sleep_forever()

    def spawn(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run `func(*args)` in the relay's task group. A fault of the hub's own in it is logged: one request must
        not end the relay's other tasks, and with them the hub."""
        if self._tg is None:
            raise RuntimeError("the relay is not running: start InFlight.run with task_group.start first")
        self._tg.start_soon(_guarded, func, args)

    def taken(self, request: HostRequest) -> bool:
        """Whether the request's id is in flight on its connection already."""
        key = (request.session, request.id)
        return key in self.calls or key in self._staged

    def stage(self, request: HostRequest, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run `func(*args)`, a step of an admitted request that waits before its call, as in flight."""
        key = (request.session, request.id)
        entry = self._staged[key] = (anyio.CancelScope(), request)

        async def staged() -> None:
            try:
                with entry[0]:
                    await func(*args)
            finally:
                if self._staged.get(key) is entry:
                    del self._staged[key]
                    self._tell_idle()

        self.spawn(staged)

    def add(self, request: HostRequest, call: Call) -> None:
        self.calls[(request.session, request.id)] = call

    def cancel(self, session: object, request_id: Any, reason: str | None) -> HostRequest | Call | None:
        """The host cancelled `request_id` of `session`: its call is cancelled, or its staged step ended unanswered
        (returned as its request, for the caller's record); None if nothing of it is in flight."""
        if not isinstance(request_id, int | str):
            return None
        call = self.calls.get((session, request_id))
        if call is not None:
            call.cancel(reason)
            return call
        staged = self._staged.get((session, request_id))
        if staged is None:
            return None
        scope, request = staged
        scope.cancel()
        request.drop()
        return request

    def ended(self, call: Call) -> None:
        request = call.request
        if request is not None:
            self.calls.pop((request.session, request.id), None)
        self._tell_idle()

    @property
    def count(self) -> int:
        return len(self.calls) + len(self._staged)

    async def wait_idle(self) -> None:
        """Until no call is in flight (unbounded: the caller bounds it, as the drain on SIGTERM does)."""
        while self.calls or self._staged:
            self._idle = anyio.Event()
            await self._idle.wait()

    def _tell_idle(self) -> None:
        if self._idle is not None and not self.calls and not self._staged:
            self._idle.set()
            self._idle = None


async def _guarded(func: Callable[..., Coroutine[Any, Any, Any]], args: tuple[Any, ...]) -> None:
    try:
        await func(*args)
    except Exception as exc:
        _log.error("relay_task_failed", task=getattr(func, "__qualname__", "?"), error=repr(exc)[:200], exc_info=exc)
