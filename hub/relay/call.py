"""One host request routed to a child, from the child's slots to its one answer and call-log line (the call's
contract: docs/architecture.md), the same for every transport and protocol era. The child's frames for the call
arrive through `Exchange` callbacks from the connection's reader; nothing here waits, except the tasks that ask the
host something. Input rounds go both ways: a 2026-07-28 child's `input_required` answer becomes real requests to a
handshake-era host; a handshake-era child's request during a 2026-07-28 host's call becomes an `input_required`
answer, and the call is parked until the host comes back with the answers (`hub.relay.rounds`).
"""

from __future__ import annotations

import math
import re
import secrets
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import structlog

from hub.config.settings import HubSettings
from hub.protocol import errors, revisions
from hub.protocol.jsonrpc import INVALID_PARAMS, Request, Response, encode
from hub.relay.boundary import wrap_result
from hub.relay.deadlines import Deadlines
from hub.relay.naming import expose_uri, map_uris
from hub.relay.ports import AskFailed, HostRequest
from hub.upstream.child import Child
from hub.upstream.connection import Connection

if TYPE_CHECKING:
    from hub.observe.tracing import RequestSpan

# Methods whose results may hand out URIs the host must be able to read back through the hub.
RENAMES_URIS = frozenset({"tools/call", "resources/read", "prompts/get"})
# A key that may hold a URI to rename, in a result's bytes: one pass over them (a large result's, at the speed of its
# quotes), where `in` twice took three times as long.
_URI_KEY = re.compile(rb'"(?:uri|resourceUri|ui/resourceUri)"')
# A child that keeps answering input_required past this many rounds is given up on (the SDK's default too).
MAX_INPUT_ROUNDS = 10
# Results whose text a child controls and `output: wrap` puts inside a boundary (hub.relay.boundary).
WRAPPED = frozenset({"tools/call", "resources/read"})
# What each kind of child request needs the host to have declared, and what it is called in messages.
ASKS = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}

_log = structlog.get_logger("hub.relay")


class CallOwner(Protocol):
    """What a call needs of the relay around it (hub.relay.router.Router)."""

    @property
    def deadlines(self) -> Deadlines: ...
    def spawn(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None: ...  # in the relay's tasks
    def park(self, call: Call) -> str: ...  # kept by its token, out of flight; its round's sealed requestState
    def unpark(self, call: Call) -> None: ...
    def ended(self, call: Call) -> None: ...  # answered (or cancelled): forgotten, its quota released
    def log_call(self, call: Call, outcome: str, error: errors.HubError | None, size: int) -> None: ...
    def redact(self, value: Any) -> Any: ...  # a result with the secrets the hub knows replaced (`redact_output`)
    def settings(self) -> HubSettings: ...


class Call:
    def __init__(
        self, router: CallOwner, request: HostRequest, child: Child, exposed: str, original: str, params: dict[str, Any]
    ) -> None:
        self.router = router
        self.request: HostRequest | None = request  # None while parked between input rounds
        self.session = request.session
        self.method = request.method
        self.child = child
        self.exposed = exposed
        self.original = original
        self.params = params
        config = child.config
        self.window = child.timeout_for(original) if self.method == "tools/call" else config.timeout
        self.deadline = math.inf
        self.ceiling = math.inf
        self.began = time.perf_counter()
        self.rule: str | None = None  # the policy rule that allowed it (None: the default, or no policy)
        self.confirmation: str | None = None  # "accepted": its user confirmed it (`confirm:`)
        self.quota: str | None = None  # the identity whose per-identity limits count this call
        self.span: RequestSpan | None = None  # its trace span, with OpenTelemetry on
        self.connection: Connection | None = None
        self.child_id: int | None = None
        self.holds_slot = False
        self.done = False
        self.rounds = 0
        # A 2026-07-28 host's call to a handshake-era child: the child's requests waiting for the host's answers.
        self.token: str | None = None
        self.asks: dict[str, Request] = {}
        self._asked = 0
        self._declared: dict[str, bool] = {}  # the parked host request's capabilities
        self._final: tuple[bytes | None, errors.HubError | None, str] | None = None  # answered while parked
        self._resend: dict[str, Any] | None = None  # the last input round's params, sent in place of the call's

    @property
    def modern_host(self) -> bool:
        return revisions.is_modern(self.request.version if self.request is not None else revisions.LATEST_MODERN)

    @property
    def attribution(self) -> object:
        """Whose the child's requests during this call are: its host session, or, for a 2026-07-28 request (which
        belongs to no session), the call itself."""
        return self if self.token is not None or self.modern_host else self.session

    def start(self, connection: Connection | None = None) -> None:
        """Send the call on `connection` (by default the child's shared one) now, or queue it for a slot; a refusal
        answers the host at once."""
        try:
            self.connection = connection or self.child.connection()
        except errors.HubError as error:
            self.finish(error)
            return
        self._take_slot()

    def _take_slot(self) -> None:
        """The one admission to the child's slots, for the call and each input round's resend: sent now if a slot
        is free, else when one is (`admitted`); a full queue refuses it as Busy."""
        try:
            admitted = self.child.slots.take(self)
        except errors.Busy as busy:
            self.finish(busy)
            return
        if admitted:
            self.holds_slot = True
            self._send()
        elif self.deadline == math.inf:  # waiting for a slot counts against the same deadline
            self.deadline = time.monotonic() + self.window
            self.router.deadlines.add(self)

    def admitted(self) -> None:
        self.holds_slot = True
        if self.done:  # cancelled while it waited
            self._release()
            return
        self._send()

    def _send(self) -> None:
        assert self.connection is not None
        params = self.params if self._resend is None else self._resend
        level = self.request.log_level if self.request is not None and self.modern_host else self.child.log_level
        try:
            self.child_id = self.connection.send(self.method, params, self, progress=True, log_level=level)
        except errors.HubError as error:
            self.finish(error)
            return
        self.connection.inflight[self] = None  # sent again (an input round): it keeps its place
        now = time.monotonic()
        if self.ceiling == math.inf:
            self.ceiling = now + max(self.child.config.max_timeout, self.window)
        self.deadline = min(now + self.window, self.ceiling)
        self.router.deadlines.add(self)

    # ---- what the child sends for the call (hub.upstream.connection.Exchange) -----------------------------------

    def progress(self, params: dict[str, Any]) -> None:
        if self.done:
            return
        self.deadline = min(time.monotonic() + self.window, self.ceiling)
        request = self.request
        if request is not None and (token := request.progress_token) is not None:
            request.notify("notifications/progress", {**params, "progressToken": token})

    def answered(self, response: Response) -> None:
        if self.done:
            return
        if response.error is not None:
            self.finish(errors.child_error(self.child.name, response.error))
            return
        result = response.result or {}
        if result.get("resultType") == "input_required" and not self.modern_host:
            self._release()
            self.rounds += 1
            if self.rounds > MAX_INPUT_ROUNDS:
                self.finish(
                    errors.Unavailable(f"server '{self.child.name}' asked for input more than {MAX_INPUT_ROUNDS} times")
                )
            else:
                self.router.spawn(self._input_round, result)
            return
        self._deliver(result, response.exact)

    def failed(self, error: errors.HubError) -> None:
        self.finish(error)

    def expire(self) -> None:
        if self.done:
            return
        if self.connection is not None and self.child_id is not None:
            self.connection.cancel(self.child_id, "timeout")
        if self.request is None:  # parked, and the host did not come back in time
            _log.info("parked_call_uncollected", child=self.child.name, name=self.exposed)
            self._end("uncollected")
            return
        name = self.child.name
        if self.child_id is None:  # still waiting for a slot
            self.child.slots.withdraw(self)
            error: errors.HubError = errors.Busy(
                f"server '{name}' is busy: the call waited {self.window:g}s for one of its "
                f"{self.child.slots.concurrency} slots (max_concurrency) and was given up",
                {"server": name},
            )
        else:
            elapsed = time.perf_counter() - self.began
            error = errors.TimedOut(
                f"server '{name}' did not answer within {elapsed:.3g}s (timeout {self.window:g}s); the request was "
                "cancelled",
                {"server": name},
            )
        self.finish(error)

    def cancel(self, reason: str | None) -> None:
        """The host cancelled the request: the child is told, and the host gets no answer."""
        if self.done:
            return
        if self.connection is not None and self.child_id is not None:
            self.connection.cancel(self.child_id, reason or "cancelled by the host")
        self.child.slots.withdraw(self)
        if self.request is not None:
            self.request.drop()
        self._end("cancelled")  # with the request kept: the router forgets it, and the call log names it

    def _deliver(self, result: dict[str, Any], exact: bytes | None) -> None:
        child, method = self.child, self.method
        try:
            if child.prefix and method in RENAMES_URIS and (exact is None or _URI_KEY.search(exact) is not None):
                prefix = child.prefix
                renamed = map_uris(result, lambda uri: expose_uri(prefix, uri))
                if renamed is not result:
                    result, exact = renamed, None
            if method in WRAPPED:
                if child.config.redact_output:
                    result, exact = self.router.redact(result), None
                if (child.config.output or self.router.settings().output) == "wrap":
                    source = f"{child.name}/{self.original}" if method == "tools/call" else child.name
                    result, exact = wrap_result(result, method, source), None
            if self.modern_host:
                result, exact = revisions.stamp(result, method), None
            elif self.connection is not None and self.connection.modern:
                result, exact = revisions.unstamp(result), None
            body = exact if exact is not None else encode(result)
        except (RecursionError, ValueError) as exc:  # a result the hub cannot forward: this call fails, not the reader
            why = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            self.finish(errors.Unavailable(f"server '{child.name}' sent a result the hub cannot forward: {why}"))
            return
        outcome = "tool_error" if method == "tools/call" and result.get("isError") is True else "ok"
        self.finish(None, body, outcome)

    def finish(self, error: errors.HubError | None, body: bytes | None = None, outcome: str = "ok") -> None:
        """The call's one answer (`body`, or what `error` maps to), then its one call-log line."""
        if self.done:
            return
        request = self.request
        if request is None:  # parked: kept for the host's next round, which must come within the call's window
            self._final = (body, error, outcome)
            self._after_answer()
            self.deadline = time.monotonic() + self.window
            self.router.deadlines.add(self)
            return
        if error is not None:
            self._end(error.outcome, error, answer_error(request, error))
        else:
            assert body is not None
            request.respond(body)
            self._end(outcome, None, len(body))

    def _after_answer(self) -> None:
        if self.deadline != math.inf:  # it has an entry in the deadline heap, now of an ended call
            self.deadline = math.inf
            self.router.deadlines.ended()
        self._release()
        if self.connection is not None:
            self.connection.inflight.pop(self, None)

    def _end(self, outcome: str, error: errors.HubError | None = None, size: int = 0) -> None:
        self.done = True
        self._after_answer()
        asks, self.asks = self.asks, {}
        for asked in asks.values():
            if self.connection is not None:
                self.connection.respond(asked.id, error={"code": INVALID_PARAMS, "message": "hub: the call ended"})
        if self.token is not None:
            self.router.unpark(self)
        self.router.ended(self)
        self.router.log_call(self, outcome, error, size)
        # An ended call may wait in the deadline heap until its deadline: it keeps nothing large meanwhile (a
        # request's arguments; over HTTP its stream, which holds the answer).
        self.request, self.params = None, {}

    def _release(self) -> None:
        if self.holds_slot:
            self.holds_slot = False
            self.child.slots.release()

    # ---- input rounds: a 2026-07-28 child, a handshake-era host ----------------------------------------------

    async def _input_round(self, result: dict[str, Any]) -> None:
        """Ask the host each of the child's input requests (concurrently, on the call's own stream), then send the
        call again with the answers and the child's `requestState`."""
        requests = result.get("inputRequests")
        responses: dict[str, Any] = {}
        refused: list[dict[str, Any]] = []

        async def one(key: str, asked: Any) -> None:
            try:
                responses[key] = await self._ask_host(asked.get("method"), asked.get("params") or {})
            except AskFailed as failure:
                refused.append(failure.error)

        async with anyio.create_task_group() as tg:
            for key, asked in (requests if isinstance(requests, dict) else {}).items():
                if isinstance(asked, dict):
                    tg.start_soon(one, key, asked)
        if self.done:
            return
        if refused:
            error = refused[0]
            self.finish(
                errors.ChildError(error.get("code", INVALID_PARAMS), str(error.get("message")), error.get("data"))
            )
            return
        params = {**self.params, "inputResponses": responses}
        if "requestState" in result:
            params["requestState"] = result["requestState"]
        self._resend = params
        self._take_slot()  # re-admitted; a full queue refuses the round as it would a call

    async def _ask_host(self, method: Any, params: dict[str, Any]) -> dict[str, Any]:
        kind = ASKS.get(method) if isinstance(method, str) else None
        request = self.request
        if kind is None or request is None:
            raise AskFailed({"code": INVALID_PARAMS, "message": f"hub: cannot relay a {method!r} request to the host"})
        if not request.declared(kind):
            raise AskFailed(refusal(kind, self.child.name))
        return await request.ask(method, params, self.window)

    # ---- input rounds: a handshake-era child, a 2026-07-28 host ----------------------------------------------

    def hold(self, asked: Request) -> None:
        """The child asks the host something during a 2026-07-28 host's call: the host gets it as an
        `input_required` answer, and the call is parked until the host sends it again with the answers."""
        assert self.connection is not None
        kind = ASKS[asked.method]
        declared = self.request.declared(kind) if self.request is not None else self._declared.get(kind, False)
        if not declared:
            self.connection.respond(asked.id, error=refusal(kind, self.child.name))
            return
        self._asked += 1
        self.asks[f"{kind}-{self._asked}"] = asked
        if self.request is not None:
            self._answer_round()

    def _answer_round(self) -> None:
        """Answer the waiting host request with the child's requests not yet answered; the call is parked."""
        request = self.request
        assert request is not None
        if self.token is None:
            self.token = secrets.token_urlsafe(16)
        state = self.router.park(self)  # every round: the router forgets the request this round answers
        inputs = {key: {"method": r.method, "params": r.params} for key, r in self.asks.items()}
        answer = {"resultType": "input_required", "inputRequests": inputs, "requestState": state}
        request.respond(encode(revisions.stamp(answer, self.method)))
        self.router.log_call(self, "input_required", None, 0)
        self._declared = {kind: request.declared(kind) for kind in ASKS.values()}
        self.request = None

    def resume(self, request: HostRequest, responses: dict[str, Any]) -> None:
        """The host is back with answers: they go to the child, and `request` waits for what comes next."""
        for key, answer in responses.items():
            asked = self.asks.pop(key, None)
            if asked is not None and self.connection is not None:
                self.connection.respond(asked.id, answer if isinstance(answer, dict) else {})
        self.request = request
        self.began = time.perf_counter()
        if self._final is not None:
            body, error, outcome = self._final
            self._final = None
            self.router.unpark(self)
            self.finish(error, body, outcome)
        elif self.asks:
            self._answer_round()


def answer_error(request: HostRequest, error: errors.HubError) -> int:
    """Answer `request` with what `error` maps to (`hub.protocol.errors.answer`); the bytes of a result sent."""
    result, wire = errors.answer(error, request.method)
    if result is None:
        assert wire is not None
        request.fail(wire)
        return 0
    if revisions.is_modern(request.version):
        result = revisions.stamp(result, request.method)
    body = encode(result)
    request.respond(body)
    return len(body)


def refusal(kind: str, child: str) -> dict[str, Any]:
    return {
        "code": INVALID_PARAMS,
        "message": f"hub: the host did not declare the {kind} capability, so server '{child}' cannot use {kind}",
    }
