"""A handshake-era child's sampling/elicitation/roots requests, turned into input-required rounds for a 2026 host.

Why: a 2026-07-28 host cannot receive server-to-client requests; it only answers `InputRequiredResult`s by
retrying its call with `inputResponses` and the `requestState` it was given. A handshake-era child, though,
asks *during* its call and waits for the answer. So the hub parks the child's call:

1. The host's `tools/call` (or `prompts/get`, `resources/read`) starts the child's call in the background
   (`ParkedCall`) and waits for whichever comes first: the child's result (returned as usual) or a request
   from the child (returned as an `InputRequiredResult`, keyed by the hub, with `requestState` = the hub's
   token for this parked call).
2. The host retries with its answers and the token: the answers go back to the child's waiting requests,
   and the hub waits again for the next request or the result.
3. Bounded: a child request the host does not answer within the child's `timeout` gets an error; a parked
   call whose result nobody collects within that time is dropped; a host that cancels its request cancels
   the child's call.

Progress and log messages of the parked call go to the host request currently waiting on it, if any.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
import structlog
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from hub.relay import HostRequest, Waiting, needed_capability
from hub.taskhost import TaskHost

PREFIX = "hub-bridge:"
_log = structlog.get_logger("hub.bridge")


class _Slot:
    """One child request waiting for the host's answer."""

    def __init__(self, request: types.ServerRequest) -> None:
        self.request = request
        self.answer: Any = None
        self.answered = anyio.Event()


class ParkedCall(Waiting):
    """A child call made for a 2026 host, kept running between the host's rounds."""

    def __init__(self, server: str, target: str | None, first: HostRequest, ttl: float) -> None:
        self.token = secrets.token_urlsafe(16)
        self.server = server
        self.target = target  # the child's tool or prompt name, or resource URI: a round resumes only its own call
        self.first = first  # its connection holds the capabilities the host declared
        self.ttl = ttl
        self.current: HostRequest | None = None
        self.scope = anyio.CancelScope()
        self.result: dict[str, Any] | None = None
        self.failure: Exception | None = None
        self.done = anyio.Event()
        self.collected = anyio.Event()
        self._slots: dict[str, _Slot] = {}
        self._count = 0
        self._changed = anyio.Event()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def ask(self, request: types.ServerRequest) -> Any:
        """The child's request: hand it to the host at its next round, wait (bounded) for the answer."""
        capability, kind = needed_capability(request)
        if not self.first.session.check_client_capability(capability):
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"hub: the host did not declare the {kind} capability, so server '{self.server}' cannot "
                f"use {kind}",
            )
        self._count += 1
        key = f"{kind}-{self._count}"
        slot = self._slots[key] = _Slot(request)
        self._wake()
        try:
            with anyio.move_on_after(self.ttl):
                await slot.answered.wait()
        finally:
            del self._slots[key]
        if not slot.answered.is_set():
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"hub: the host did not answer the {kind} request within {self.ttl:g}s",
            )
        return slot.answer

    def deliver(self, responses: dict[str, Any]) -> None:
        for key, answer in responses.items():
            slot = self._slots.get(key)
            if slot is not None and not slot.answered.is_set():
                slot.answer = answer
                slot.answered.set()

    async def next_step(self, ctx: HostRequest) -> dict[str, Any]:
        """What the waiting host request gets: the child's result, or a round of its unanswered requests.

        Raises:
            Exception: the child call's own failure (an `MCPError` from the child, say).
        """
        self.current = ctx
        try:
            while True:
                if self.done.is_set():
                    self.collected.set()
                    if self.failure is not None:
                        raise self.failure
                    assert self.result is not None
                    return self.result
                pending = {k: s for k, s in self._slots.items() if not s.answered.is_set()}
                if pending:
                    return {
                        "resultType": "input_required",
                        "inputRequests": {
                            k: s.request.model_dump(by_alias=True, mode="json", exclude_none=True)
                            for k, s in pending.items()
                        },
                        "requestState": PREFIX + self.token,
                    }
                await self._changed.wait()
        finally:
            self.current = None

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        ctx = self.current
        if ctx is not None and ctx.meta and ctx.meta.get("progress_token") is not None:
            await ctx.session.report_progress(progress, total, message)


Send = Callable[[ProgressFnT], Awaitable[dict[str, Any]]]


class Bridges(TaskHost):
    """The parked calls, by token; their child calls run in this task host (the hub's shutdown cancels them)."""

    def __init__(self) -> None:
        super().__init__()
        self._calls: dict[str, ParkedCall] = {}

    async def call(
        self, ctx: HostRequest, server: str, inflight: list[Any], params: Any, ttl: float, send: Send
    ) -> dict[str, Any]:
        """One round of a bridged call: start it (or resume it from `params.request_state`), return its next step.

        Raises:
            MCPError: the round's token is unknown or expired, or the child call failed.
        """
        state: str | None = params.request_state
        target: str | None = getattr(params, "name", None) or getattr(params, "uri", None)
        if state is not None and state.startswith(PREFIX):
            parked = self._calls.get(state.removeprefix(PREFIX))
            if parked is None or (parked.server, parked.target) != (server, target):
                raise MCPError(
                    code=types.INVALID_PARAMS,
                    message=f"hub: this input-required round of server '{server}' is unknown or expired; call again",
                )
            parked.deliver(dict(params.input_responses or {}))
        else:
            parked = ParkedCall(server, target, ctx, ttl)
            self._calls[parked.token] = parked
            await self.start_task(ttl, self._run, parked, inflight, send)
        try:
            return await parked.next_step(ctx)
        except anyio.get_cancelled_exc_class():
            parked.scope.cancel()  # the host gave up on the call: so does the child's
            raise
        finally:
            if parked.done.is_set() and parked.collected.is_set():
                self._calls.pop(parked.token, None)

    async def _run(self, parked: ParkedCall, inflight: list[Any], send: Send) -> None:
        inflight.append(parked)
        try:
            with parked.scope:
                try:
                    parked.result = await send(parked.progress)
                except Exception as exc:
                    parked.failure = exc
            if parked.result is None and parked.failure is None:
                parked.failure = MCPError(code=types.INTERNAL_ERROR, message="hub: the call was cancelled")
        finally:
            inflight.remove(parked)
            parked.done.set()
            parked._wake()
        with anyio.move_on_after(parked.ttl):  # nobody collects it: forget it after a while
            await parked.collected.wait()
        self._calls.pop(parked.token, None)
        if not parked.collected.is_set():
            _log.info("bridged_call_uncollected", child=parked.server)
