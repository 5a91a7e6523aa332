"""One host connection, as the MCP server side of the hub: every message a host sends is handled here, once.

A message is decoded and classified (`hub.protocol.jsonrpc`); what cannot be handled gets the JSON-RPC error its
fault calls for when it has a usable id, and is logged (at most once a second) when it has none. One meant as an
answer (no method; a result or an error) is never answered back: the hub's request it answers fails instead. A
fault of the hub's own in handling a message is logged (`host_message_failed`) and a request answered -32603:
nothing a host sends ends the connection. Then:

- a request the hub answers itself: `initialize` (handshake era), `server/discover` (2026-07-28), `ping`, the
  four listings (from the current namespace, encoded once per revision), `logging/setLevel`,
  `subscriptions/listen`;
- a routed request (`hub.relay.router.ROUTED`): handed to the router as a `Received`, which carries it to its one
  answer on the stream the transport gave it;
- notifications: `initialized`, `cancelled` (of a call or a listen stream), `roots/list_changed`;
- a response: the host's answer to a request the hub sent it (a child's sampling, elicitation or roots request).

The era of a request: an HTTP transport knows it (a session is handshake-era; a request without one carries the
2026-07-28 envelope); over stdio the first request decides for the connection, as the SDK's server does.
"""

from __future__ import annotations

import time
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import structlog

from hub.access.identity import ANONYMOUS, Identity
from hub.logs import Throttle
from hub.protocol import revisions
from hub.protocol.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    QUOTE_LIMIT,
    REQUEST_TIMEOUT,
    UNSUPPORTED_PROTOCOL_VERSION,
    EncodeError,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    batch_refusals,
    error_line,
    is_id,
    leading_id,
    notification_line,
    parse,
    quote,
    request_line,
    result_line,
)
from hub.relay.catalog import LISTS
from hub.relay.ports import AskFailed
from hub.relay.router import ROUTED

if TYPE_CHECKING:
    from hub.app import Hub

# Methods a 2026-07-28 request may call (the era has no ping, setLevel or subscribe).
MODERN_METHODS = frozenset({"server/discover", "subscriptions/listen", *LISTS, *ROUTED}) - {
    "resources/subscribe",
    "resources/unsubscribe",
}
HANDSHAKE_METHODS = frozenset({"initialize", "ping", "logging/setLevel", *LISTS, *ROUTED})
# A request to the host outside any of its own (a child's roots/list, say) waits this long at most for a channel to
# go on: an HTTP host opens its GET stream just after it initializes, when a child told of its roots asks at once.
CHANNEL_WAIT = 5.0
LOG_RANK = {level: rank for rank, level in enumerate(revisions.LOG_LEVELS)}

_log = structlog.get_logger("hub.host")


class Stream(Protocol):
    """Where the messages about one request go: the stdio wire, or an HTTP request's response."""

    def send(self, line: bytes) -> None:
        """A message before the answer (a notification, a request to the host)."""

    def end(self, line: bytes | None) -> None:
        """The answer (None: there is none, the request was cancelled); nothing is sent after it."""


class HostSession:
    """A host connection's state and its handling of every message (`hub.relay.hosts.Session`)."""

    def __init__(
        self, hub: Hub, label: str, standalone: Stream | None, era: str | None = None, identity: Identity = ANONYMOUS
    ) -> None:
        self.hub = hub
        self.label = label
        self.identity = identity
        self._standalone = standalone  # stdio's wire, an HTTP session's GET stream (None while not open)
        self._channel_opened: anyio.Event | None = None  # created by a request to the host that waits for one
        self.era = era  # "handshake" or "modern"; None until the first request decides (stdio)
        self.version: str | None = None  # the negotiated handshake revision
        self.capabilities: dict[str, Any] = {}
        self.client_info: Any = None
        self.initialized = False
        self._ask_ids = 0
        self._asks: dict[RequestId, _Answer] = {}
        self._listens: dict[RequestId, Listen] = {}
        self._dropped = Throttle()  # messages that cannot be answered
        self._faults = Throttle()  # faults of the hub's own
        self._unwritable = Throttle()  # notifications that cannot be written
        self.closed = False

    def __repr__(self) -> str:
        return f"<HostSession {self.label} {self.era} {self.version}>"

    @property
    def standalone(self) -> Stream | None:
        """The session's own channel: stdio's wire, an HTTP session's GET stream (None while not open)."""
        return self._standalone

    @standalone.setter
    def standalone(self, stream: Stream | None) -> None:
        self._standalone = stream
        self._wake_channel_waiters()

    def _wake_channel_waiters(self) -> None:
        if self._channel_opened is not None:
            self._channel_opened.set()
            self._channel_opened = None

    @property
    def modern(self) -> bool:
        return self.era == "modern"

    def declared(self, capability: str) -> bool:
        return self.capabilities.get(capability) is not None

    # ---- receiving ------------------------------------------------------------------------------------------

    def receive(self, line: bytes, stream: Stream) -> None:
        """One line from the host; messages about a request go to `stream`."""
        message = parse(line)
        if isinstance(message, list):
            for refusal in batch_refusals(message):
                stream.send(refusal)
            return
        self.handle(message, stream)

    def oversized(self, head: bytes, size: int, limit: int, stream: Stream) -> None:
        """A message over `limit` bytes was dropped as it arrived; answered if its id could be found."""
        request_id = leading_id(head)
        reason = f"invalid request: the message is {size} bytes, over the hub's limit of {limit} (max_request_bytes)"
        if request_id is not None:
            stream.send(error_line(request_id, INVALID_REQUEST, reason))
        else:
            self._noisy(reason)

    def handle(self, message: Message, stream: Stream) -> None:
        """One decoded message. Never raises: a fault of the hub's own in handling it is logged and, for a
        request, answered -32603, so that one message cannot end the connection nor drop the lines after it."""
        try:
            self._handle(message, stream)
        except Exception as exc:
            self._failed(message, exc, stream)

    def _handle(self, message: Message, stream: Stream) -> None:
        if isinstance(message, Request):
            self._request(message, stream)
        elif isinstance(message, Notification):
            self._notification(message)
        elif isinstance(message, Response):
            answer = self._asks.pop(message.id, None)
            if answer is not None:
                answer.set(message)
        elif message.response:  # an unusable answer to a request of the hub's: that request fails, nothing is sent
            answer = self._asks.pop(message.id, None) if message.id is not None else None
            if answer is not None:
                answer.set(None, f"the host's answer was invalid ({message.reason})")
            else:
                self._noisy(message.reason)
        elif message.id is not None:
            stream.send(error_line(message.id, message.code, message.reason))
        else:
            self._noisy(message.reason)

    def _failed(self, message: Message, exc: Exception, stream: Stream) -> None:
        if self._faults.tick():
            _log.error(
                "host_message_failed",
                host_session=self.label,
                kind=type(message).__name__,
                method=quote(getattr(message, "method", None)),
                error=f"{type(exc).__name__}: {exc}"[:QUOTE_LIMIT],
                failed=self._faults.count,
                exc_info=exc,
            )
        if isinstance(message, Request):
            with suppress(Exception):
                stream.end(error_line(message.id, INTERNAL_ERROR, f"hub: internal error in {quote(message.method)}"))

    def _noisy(self, reason: str) -> None:
        if self._dropped.tick():
            _log.warning("host_message_dropped", host_session=self.label, reason=reason, dropped=self._dropped.count)

    # ---- requests ----------------------------------------------------------------------------------------------

    def _request(self, request: Request, stream: Stream) -> None:
        method, params = request.method, request.params
        modern = revisions.has_envelope(params) and method != "initialize"
        if self.era is None:
            self.era = "modern" if modern else "handshake"
        if self.era == "modern":
            self._modern_request(request, stream)
            return
        if modern:
            stream.end(
                error_line(
                    request.id,
                    INVALID_REQUEST,
                    "this connection serves the handshake protocol era; "
                    "requests carrying the 2026-07-28 envelope are not accepted on it",
                )
            )
            return
        if method == "initialize":
            self._initialize(request, stream)
        elif method == "ping":
            stream.end(result_line(request.id, b"{}"))
        elif method not in HANDSHAKE_METHODS:
            stream.end(error_line(request.id, METHOD_NOT_FOUND, f"Method not found: {method!r}"[:300]))
        elif self.version is None:
            stream.end(error_line(request.id, INVALID_REQUEST, "the session is not initialized: send initialize first"))
        else:
            self._serve(Received(self, request, self.version, stream, None), stream)

    def _initialize(self, request: Request, stream: Stream) -> None:
        params = request.params
        capabilities = params.get("capabilities")
        if not isinstance(capabilities, dict) or not isinstance(params.get("protocolVersion"), str):
            stream.end(
                error_line(
                    request.id,
                    INVALID_PARAMS,
                    "invalid params: initialize needs 'protocolVersion' (a string) and 'capabilities' (an object)",
                )
            )
            return
        result = revisions.initialize_result(params["protocolVersion"], self._instructions())
        self.version = result["protocolVersion"]
        self.capabilities = capabilities
        self.client_info = params.get("clientInfo")
        stream.end(result_line(request.id, result))

    def _modern_request(self, request: Request, stream: Stream) -> None:
        method = request.method
        if method == "initialize":
            data = {"supported": list(revisions.MODERN_VERSIONS), "requested": request.params.get("protocolVersion")}
            stream.end(
                error_line(
                    request.id,
                    UNSUPPORTED_PROTOCOL_VERSION,
                    "this connection serves the 2026-07-28 protocol; the initialize handshake is not accepted",
                    data,
                )
            )
            return
        try:
            envelope = revisions.read_envelope(request.params)
        except revisions.EnvelopeError as exc:
            stream.end(error_line(request.id, exc.code, str(exc), exc.data))
            return
        if method not in MODERN_METHODS:
            stream.end(error_line(request.id, METHOD_NOT_FOUND, f"Method not found: {method!r}"[:300]))
        elif method == "server/discover":
            stream.end(
                result_line(request.id, revisions.stamp(revisions.discover_result(self._instructions()), method))
            )
        else:
            self._serve(Received(self, request, envelope.version, stream, envelope), stream)

    def _instructions(self) -> str:
        """The hub's instructions as this session's identity may see them (its policy, as it is now)."""
        return self.hub.instructions(self.hub.loaded.policy.view(self.identity))

    def _serve(self, received: Received, stream: Stream) -> None:
        method = received.method
        if method in LISTS:
            self._listing(received)
        elif method in ROUTED:
            self.hub.router.route(received)
        elif method == "logging/setLevel":
            level = received.params.get("level")
            if type(level) is not str or level not in LOG_RANK:
                received.fail(
                    {
                        "code": INVALID_PARAMS,
                        "message": f"invalid params: 'level' must be one of {', '.join(revisions.LOG_LEVELS)}",
                    }
                )
                return
            self.hub.router.spawn(self._set_level, received, level)
        elif method == "subscriptions/listen":
            listen = Listen(self, received)
            self._listens[received.id] = listen
            listen.start()

    def _listing(self, received: Received, began: float | None = None) -> None:
        """A list request, answered from the namespace; recorded (`hub.relay.record`) with its duration from
        `began` (its arrival, when it waited for the children starting with the hub)."""
        began = time.perf_counter() if began is None else began
        cursor = received.params.get("cursor")
        if cursor is not None:
            received.fail(
                {
                    "code": INVALID_PARAMS,
                    "message": "invalid params: the hub lists everything in one page; "
                    "this cursor is not one of its own",
                }
            )
            return
        if self.hub.startup_wait_left():
            self.hub.router.spawn(self._listing_after_start, received, began)
            return
        namespace = self.hub.catalog.namespace
        builtin = self.hub.builtin_tools() if received.method == "tools/list" else ()
        view = self.hub.loaded.policy.view(self.identity)
        received.respond(namespace.listing(received.method, received.version, builtin, view))
        self.hub.record.listing(received.method, began)

    async def _listing_after_start(self, received: Received, began: float) -> None:
        await self.hub.wait_for_start()
        self._listing(received, began)

    async def _set_level(self, received: Received, level: str) -> None:
        owner = self if self.hub.children and any(c.per_host for c in self.hub.children.values()) else None
        await self.hub.set_log_level(level)
        if owner is not None:
            await self.hub.set_log_level(level, owner)  # this session's own connections
        received.respond(b"{}")

    # ---- notifications --------------------------------------------------------------------------------------

    def _notification(self, notification: Notification) -> None:
        method, params = notification.method, notification.params
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            reason = params.get("reason")
            listen = self._listens.pop(request_id, None) if isinstance(request_id, int | str) else None
            if listen is not None:
                listen.stop()
            else:
                self.hub.router.cancel(self, request_id, reason if isinstance(reason, str) else None)
        elif method == "notifications/initialized":
            if self.version is not None and not self.initialized:
                self.initialized = True
                self.hub.hosts.add(self)
                if self.declared("roots"):
                    self.hub.roots_changed(self)  # children started before this host ask for its roots again
        elif method == "notifications/roots/list_changed":
            self.hub.roots_changed(self)

    # ---- what the hub sends the host ------------------------------------------------------------------------

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """A notification on the session's own channel (`hub.relay.hosts.Session`)."""
        if self.standalone is not None and not self.closed:
            line = self.notification_line(method, params)
            if line is not None:
                self.standalone.send(line)

    def log(self, params: dict[str, Any]) -> None:
        self.notify("notifications/message", params)

    def notification_line(self, method: str, params: dict[str, Any]) -> bytes | None:
        """A notification's line; None (logged, at most once a second) when what a child put in it cannot be written
        as JSON (nested too deeply, a number out of range): the host gets the rest of the call, not a broken line."""
        try:
            return notification_line(method, params)
        except EncodeError as exc:
            if self._unwritable.tick():
                _log.warning(
                    "host_notification_dropped", method=method, reason=str(exc), dropped=self._unwritable.count
                )
            return None

    async def ask(self, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        """A request to the host on its own channel, outside any of its requests.

        An HTTP host that has just initialized may not have opened its GET stream yet: the request waits for it,
        at most CHANNEL_WAIT (and within `limit_s`).
        """
        began = anyio.current_time()
        with anyio.move_on_after(min(limit_s, CHANNEL_WAIT)):
            while not self.closed and not _usable(self._standalone):
                if self._channel_opened is None:
                    self._channel_opened = anyio.Event()
                await self._channel_opened.wait()
        stream = self._standalone
        if stream is None or not _usable(stream):
            raise AskFailed({"code": INVALID_REQUEST, "message": "hub: the host has no channel open for requests"})
        return await self.ask_on(stream, method, params, max(0.0, limit_s - (anyio.current_time() - began)))

    async def ask_on(self, stream: Stream, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        """Send the host a request on `stream` and wait (bounded) for its answer.

        Raises:
            AskFailed: the host answered with an error, did not answer in time, or the session ended first.
        """
        if self.modern or self.closed or getattr(stream, "closed", False):
            raise AskFailed({"code": INVALID_REQUEST, "message": "hub: this host cannot be sent requests now"})
        try:
            line = request_line(self._ask_ids + 1, method, params)
        except EncodeError as exc:  # what a child asks for, nested too deeply or with a number out of range
            message = f"hub: the {method} request cannot be relayed: {exc}"
            raise AskFailed({"code": INVALID_PARAMS, "message": message}) from None
        self._ask_ids += 1
        ask_id = self._ask_ids
        answer = _Answer()
        self._asks[ask_id] = answer
        # An HTTP call's stream that ends without its answer (the host cancelled the call) fails the ask then. One
        # that ends with its answer has carried this request already, and the host answers it in a POST of its own:
        # a child's roots/list sent just as the call it came during was answered still gets the host's roots.
        ended = getattr(stream, "on_end", None)
        if ended is not None:

            def on_end() -> None:
                if getattr(stream, "answer", None) is None:
                    answer.set(None, f"the host's request ended before it answered {method}")

            ended.append(on_end)
        try:
            stream.send(line)
            with anyio.move_on_after(limit_s):
                await answer.done.wait()
        finally:
            self._asks.pop(ask_id, None)
        response = answer.response
        if response is None:
            why = answer.why or f"the host did not answer {method} within {limit_s:g}s"
            raise AskFailed(
                {"code": REQUEST_TIMEOUT if answer.why is None else INVALID_REQUEST, "message": f"hub: {why}"}
            )
        if response.error is not None:
            raise AskFailed(response.error)
        return response.result or {}

    def fail_asks(self, why: str) -> None:
        for answer in self._asks.values():
            answer.set(None, why)

    def close(self) -> None:
        """The connection ended: requests to the host fail, listen streams end, the hub forgets the session."""
        self.closed = True
        self._wake_channel_waiters()
        self.fail_asks("the host's connection ended")
        for listen in list(self._listens.values()):
            listen.stop()
        self._listens.clear()
        self.hub.session_ended(self)


class _Answer:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.response: Response | None = None
        self.why: str | None = None

    def set(self, response: Response | None, why: str | None = None) -> None:
        if not self.done.is_set():
            self.response, self.why = response, why
            self.done.set()


class Received:
    """One request of a host's, until its one answer (`hub.relay.ports.HostRequest`)."""

    __slots__ = ("answered", "envelope", "request", "session", "stream", "version")

    def __init__(
        self, session: HostSession, request: Request, version: str, stream: Stream, envelope: revisions.Envelope | None
    ) -> None:
        self.session, self.request, self.version = session, request, version
        self.stream, self.envelope = stream, envelope
        self.answered = False

    @property
    def id(self) -> RequestId:
        return self.request.id

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def params(self) -> dict[str, Any]:
        return self.request.params

    @property
    def progress_token(self) -> RequestId | None:
        meta = self.params.get("_meta")
        token = meta.get("progressToken") if type(meta) is dict else None
        return token if is_id(token) else None

    @property
    def log_level(self) -> str | None:
        return self.envelope.log_level if self.envelope is not None else None

    def declared(self, capability: str) -> bool:
        capabilities = self.envelope.capabilities if self.envelope is not None else self.session.capabilities
        return capabilities.get(capability) is not None

    def respond(self, result: dict[str, Any] | bytes) -> None:
        if not self.answered:
            self.answered = True
            self.stream.end(result_line(self.id, result))

    def fail(self, error: dict[str, Any]) -> None:
        if not self.answered:
            self.answered = True
            self.stream.end(
                error_line(self.id, error.get("code", INVALID_REQUEST), str(error.get("message")), error.get("data"))
            )

    def drop(self) -> None:
        if not self.answered:
            self.answered = True
            self.stream.end(None)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        if not self.answered:
            line = self.session.notification_line(method, params)
            if line is not None:
                self.stream.send(line)

    def log(self, params: dict[str, Any]) -> None:
        if self.envelope is not None:  # 2026-07-28: only what the request opted in to
            wanted = self.envelope.log_level
            level = params.get("level")
            if wanted is None or (LOG_RANK.get(level, 0) if type(level) is str else 0) < LOG_RANK[wanted]:
                return
        self.notify("notifications/message", params)

    async def ask(self, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        if self.answered:
            raise AskFailed(
                {"code": INVALID_REQUEST, "message": f"hub: the host's {self.method} ended before it could be asked"}
            )
        return await self.session.ask_on(self.stream, method, params, limit_s)


class Listen:
    """A 2026-07-28 host's `subscriptions/listen` stream (`hub.relay.hosts.Listener`)."""

    def __init__(self, session: HostSession, received: Received) -> None:
        self.session = session
        self.identity = session.identity
        self.received = received
        notifications = received.params.get("notifications")
        wanted = notifications if isinstance(notifications, dict) else {}
        self.honored = {
            k: True for k in ("toolsListChanged", "promptsListChanged", "resourcesListChanged") if wanted.get(k) is True
        }
        uris = wanted.get("resourceSubscriptions")
        self.uris = frozenset(u for u in uris if isinstance(u, str)) if isinstance(uris, list) else frozenset()
        if self.uris:
            self.honored["resourceSubscriptions"] = sorted(self.uris)  # type: ignore[assignment]
        self.meta = {revisions.SUBSCRIPTION_ID_KEY: received.id}

    def start(self) -> None:
        self.received.notify(
            "notifications/subscriptions/acknowledged", {"notifications": self.honored, "_meta": self.meta}
        )
        self.session.hub.hosts.listeners.add(self)

    def wants(self, method: str, uri: str | None) -> bool:
        key = {
            "notifications/tools/list_changed": "toolsListChanged",
            "notifications/prompts/list_changed": "promptsListChanged",
            "notifications/resources/list_changed": "resourcesListChanged",
        }.get(method)
        if key is not None:
            return key in self.honored
        return method == "notifications/resources/updated" and uri in self.uris

    def send(self, method: str, params: dict[str, Any]) -> None:
        if self.received.answered:
            self.stop()
            return
        self.received.notify(method, {**params, "_meta": self.meta})

    def stop(self, final: bool = False) -> None:
        """The stream ends: by the host (no answer) or, with `final`, by the hub (a last result)."""
        self.session.hub.hosts.listeners.discard(self)
        if final:
            self.received.respond(revisions.stamp({"_meta": self.meta}, "subscriptions/listen"))
        else:
            self.received.drop()


def _usable(stream: Stream | None) -> bool:
    return stream is not None and not getattr(stream, "closed", False)
