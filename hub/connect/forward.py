"""The host's side of hub connect: the lines the host writes go to the hub in order; answers and errors come back.

A line is decoded as the hub's stdio front decodes it (`hub.protocol.jsonrpc`); what is not a message gets the
JSON-RPC error it calls for when it has a usable id, and is logged otherwise. In order: a notification or an answer
is delivered (the hub said 202) before the next line is taken; a request is sent from a task of its own.

Every request of the host's gets exactly one answer: the hub's, or an error saying why there is none; a request the
host cancelled gets none. Toward 2026-07-28 a cancellation closes the request's POST; the host's other notifications
have nowhere to go in that revision and are dropped. At end of input, `drain` waits (up to DRAIN_LIMIT) for the
answers to what was sent, so `printf '<initialize>\n' | hub connect URL` prints the answer.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from hub.connect.remote import Remote, RemoteError, same_id
from hub.logs import Throttle
from hub.protocol import revisions
from hub.protocol.jsonrpc import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    EncodeError,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    batch_refusals,
    encode,
    error_line,
    is_id,
    leading_id,
    notification_line,
    parse,
    quote,
)

# Lines the host may write ahead of the hub (restarting, say); beyond, a request gets an error, the rest is dropped.
MAX_QUEUED = 10_000
DRAIN_LIMIT = 30.0  # at end of input, the longest wait for the answers to what was sent
_LISTS = ("tools", "prompts", "resources")

_log = structlog.get_logger("hub.connect")


def _answers(line: bytes, request_id: RequestId) -> bool:
    """Whether `line` is the answer (a result or an error) to the request `request_id`."""
    message = parse(line)
    if isinstance(message, Response) or (isinstance(message, Invalid) and message.response):
        return same_id(message.id, request_id)
    return False


class Forwarder:
    """Between the host's lines and the `Remote` session; `write` puts one line on the host's wire."""

    def __init__(self, remote: Remote, write: Callable[[bytes], None], tg: TaskGroup) -> None:
        self.remote = remote
        self._write = write
        self._tg = tg
        self._queue: deque[tuple[bytes, Message]] = deque()
        self._wake = anyio.Event()
        self._in_flight: dict[RequestId, anyio.CancelScope] = {}
        self._cancelled: set[RequestId] = set()
        self._era: str | None = None  # "handshake" or "modern", from the host's first request
        self._dropped = Throttle()
        self._delivering = False  # a notification or answer of the host's is on its way to the hub
        self._settled = anyio.Event()  # set whenever a message is through: `drain` looks again

    def line(self, line: bytes) -> None:
        """One line from the host (without its newline); never raises."""
        message = parse(line)
        if isinstance(message, list):  # batches are not part of MCP: answered as the hub answers them
            for refusal in batch_refusals(message):
                self.send(refusal)
            return
        if isinstance(message, Invalid):
            self._invalid(message)
        elif len(self._queue) >= MAX_QUEUED:
            self._overflow(message)
        else:
            self._queue.append((line, message))
            self._wake.set()

    def oversized(self, head: bytes, size: int, limit: int) -> None:
        """A line over `limit` bytes was dropped as it arrived; answered if its id could be found."""
        request_id = leading_id(head)
        reason = f"invalid request: the message is {size} bytes, over hub connect's limit of {limit}"
        if request_id is not None:
            self.send(error_line(request_id, INVALID_REQUEST, reason))
        else:
            self._noisy(reason)

    def _invalid(self, message: Invalid) -> None:
        """What is not a usable message. An unusable answer to a request of the hub's fails that request at the
        hub (it is never answered back to the host, which would take that for an answer of its own)."""
        if message.response and message.id is not None:
            reason = f"the host's answer was invalid ({message.reason})"
            answer = Response(message.id, None, {"code": message.code, "message": reason})
            self._queue.append((error_line(message.id, message.code, reason), answer))
            self._wake.set()
        elif message.id is not None:
            self.send(error_line(message.id, message.code, message.reason))
        else:
            self._noisy(message.reason)

    def _overflow(self, message: Message) -> None:
        if isinstance(message, Request):
            reason = f"hub connect has {MAX_QUEUED} messages waiting for the hub at {self.remote.url}; try again later"
            self.send(error_line(message.id, CONNECTION_CLOSED, reason))
        else:
            self._noisy(f"dropped: {MAX_QUEUED} messages are waiting for the hub")

    def _noisy(self, reason: str) -> None:
        if self._dropped.tick():
            _log.warning("connect_host_message_dropped", reason=reason, dropped=self._dropped.count)

    async def run(self) -> None:
        """Send the host's messages to the hub in order, for as long as hub connect runs."""
        while True:
            while not self._queue:
                self._wake = anyio.Event()
                await self._wake.wait()
            line, message = self._queue.popleft()
            if isinstance(message, Request) and message.method == "initialize":
                # What follows needs the session its answer makes: a host that writes ahead (a script piping
                # lines in) would otherwise send it with no session id. A host that waits loses nothing.
                answered = anyio.Event()
                self._start(message, answered)
                await answered.wait()
            elif isinstance(message, Request):
                self._start(message)
            else:
                self._delivering = True
                try:
                    await self._deliver(line, message)
                finally:
                    self._delivering = False
                    self._settled.set()

    async def drain(self, stop: anyio.Event) -> None:
        """At end of input: wait until what the host wrote has reached the hub and each request sent has its answer,
        for at most DRAIN_LIMIT seconds, or until `stop` (a stop signal) is set."""

        async def on_stop() -> None:
            await stop.wait()
            scope.cancel()

        async with anyio.create_task_group() as tg:
            with anyio.move_on_after(DRAIN_LIMIT) as scope:
                tg.start_soon(on_stop)
                while self._queue or self._in_flight or self._delivering:
                    self._settled = anyio.Event()
                    await self._settled.wait()
            tg.cancel_scope.cancel()
        if self._queue or self._in_flight:
            _log.warning("connect_input_ended_unanswered", queued=len(self._queue), in_flight=len(self._in_flight))

    def _start(self, request: Request, answered: anyio.Event | None = None) -> None:
        if self._era is None:
            modern = request.method != "initialize" and revisions.has_envelope(request.params)
            self._era = "modern" if modern else "handshake"
        scope = anyio.CancelScope()
        self._in_flight[request.id] = scope
        self._tg.start_soon(self._request, request, scope, answered)

    async def _request(self, request: Request, scope: anyio.CancelScope, answered_event: anyio.Event | None) -> None:
        """One request, to its answer (or the error that stands for it); then `answered_event` is set."""
        answered = False

        def deliver(line: bytes) -> None:
            nonlocal answered
            if not answered and _answers(line, request.id):
                answered = True
                if request.id in self._cancelled:
                    return  # the host cancelled it: it takes no answer
            self.send(line)

        failure: bytes | None = None
        with scope:
            try:
                await self.remote.request(request, deliver, self._era == "modern")
            except RemoteError as exc:
                failure = exc.line(request.id)
                _log.warning("connect_request_failed", method=request.method[:100], error=str(exc))
            except Exception as exc:  # a fault of hub connect's own: the host is answered, hub connect goes on
                _log.error("connect_request_fault", method=request.method[:100], exc_info=exc)
                failure = error_line(
                    request.id, INTERNAL_ERROR, f"hub connect: internal error in {quote(request.method)}"
                )
        if self._in_flight.get(request.id) is scope:
            del self._in_flight[request.id]
        cancelled = request.id in self._cancelled
        self._cancelled.discard(request.id)
        if not answered and not cancelled:
            ended = f"the hub at {self.remote.url} ended its response without an answer"
            self.send(failure or error_line(request.id, CONNECTION_CLOSED, ended))
        self._settled.set()
        if answered_event is not None:
            answered_event.set()

    async def _deliver(self, line: bytes, message: Message) -> None:
        """A notification or an answer of the host's, to the hub."""
        initialized = False
        if isinstance(message, Notification):
            if message.method == "notifications/cancelled":
                self._cancel(message.params)
            if self._era == "modern":
                return
            initialized = message.method == "notifications/initialized"
        method = message.method[:100] if isinstance(message, Notification) else "(an answer)"
        try:
            await self.remote.post(line, initialized)
        except RemoteError as exc:
            _log.warning("connect_message_failed", method=method, error=str(exc))
        except Exception as exc:  # a fault of hub connect's own: logged, and the next line is taken
            _log.error("connect_message_fault", method=method, exc_info=exc)

    def _cancel(self, params: dict[str, Any]) -> None:
        request_id = params.get("requestId")
        if not is_id(request_id) or request_id not in self._in_flight:
            return
        self._cancelled.add(request_id)
        if self._era == "modern":
            self._in_flight[request_id].cancel()

    def send(self, line: bytes) -> None:
        """One message to the host, as one line."""
        line = line.strip()
        if b"\n" in line or b"\r" in line:  # JSON spread over lines (whitespace between tokens): one line for the wire
            try:
                line = encode(json.loads(line))
            except (ValueError, RecursionError, EncodeError):
                self._noisy("the hub sent a message that is not JSON; not passed on")
                return
        self._write(line + b"\n")

    def renewed(self, capabilities: dict[str, Any]) -> None:
        """The hub forgot the host's session and a new one was made: the host is told its lists may have changed
        (they are the lists of a hub that restarted, perhaps with another configuration)."""
        for kind in _LISTS:
            if kind in capabilities:
                self.send(notification_line(f"notifications/{kind}/list_changed", None))
