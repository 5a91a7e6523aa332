"""One host connection, as the MCP server side of the hub: every message a host sends is handled here, once.

What cannot be handled gets the JSON-RPC error its fault calls for when it has a usable id, and is logged (at most
once a second) when it has none; an answer (no method) is never answered back: the hub's request it answers fails
instead. A fault of the hub's own is logged and a request answered -32603: nothing a host sends ends the connection.
A routed request (`hub.relay.router.ROUTED`) goes to the router as a `Received`; the hub answers the others itself.

The era of a request: an HTTP transport knows it; over stdio the first request decides, as the SDK's server does.
"""

from __future__ import annotations

import time
from contextlib import suppress
from typing import Any

import anyio
import structlog

from hub.access.hidden import Explanation
from hub.access.identity import ANONYMOUS, Identity
from hub.host.port import HubPort
from hub.host.received import LOG_RANK, HostAsks, Listen, Received, Stream, usable
from hub.logs import Throttle
from hub.protocol import extensions, revisions
from hub.protocol.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    QUOTE_LIMIT,
    UNSUPPORTED_PROTOCOL_VERSION,
    EncodeError,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    batch_refusals,
    error_line,
    leading_id,
    notification_line,
    parse,
    quote,
    result_line,
)
from hub.relay.catalog import LISTS
from hub.relay.ports import AskFailed
from hub.relay.router import ROUTED
from hub.relay.task_records import TASKS_CAPABILITY, TASKS_EXTENSION, tasks_offered

# Methods a 2026-07-28 request may call (the era has no ping, setLevel or subscribe).
MODERN_METHODS = frozenset({"server/discover", "subscriptions/listen", *LISTS, *ROUTED}) - {
    "resources/subscribe",
    "resources/unsubscribe",
}
HANDSHAKE_METHODS = frozenset({"initialize", "ping", "logging/setLevel", *LISTS, *ROUTED})
NOT_THIS_ERA = (
    "this connection serves the handshake protocol era; "
    "requests carrying the 2026-07-28 envelope are not accepted on it"
)
# A request to the host outside any of its own (a child's roots/list, say) waits this long at most for a channel to
# go on: an HTTP host opens its GET stream just after it initializes, when a child told of its roots asks at once.
CHANNEL_WAIT = 5.0

_log = structlog.get_logger("hub.host")


class HostSession:
    """A host connection's state and its handling of every message (`hub.relay.hosts.Session`)."""

    def __init__(
        self,
        hub: HubPort,
        label: str,
        standalone: Stream | None,
        era: str | None = None,
        identity: Identity = ANONYMOUS,
    ) -> None:
        self.hub = hub
        self.label = label
        self.identity = identity
        self.standalone = standalone  # its own channel: stdio's wire, an HTTP session's GET stream (None until open)
        self._channel_opened: anyio.Event | None = None  # created by a request to the host that waits for one
        self.era = era  # "handshake" or "modern"; None until the first request decides (stdio)
        self.version: str | None = None  # the negotiated handshake revision
        self.capabilities: dict[str, Any] = {}
        self.client_info: Any = None
        self.initialized = False
        self._asks = HostAsks()
        self._listens: dict[RequestId, Listen] = {}
        self._dropped = Throttle()  # messages that cannot be answered
        self._faults = Throttle()  # faults of the hub's own
        self._unwritable = Throttle()  # notifications that cannot be written
        self.closed = False
        self.requests = 0  # requests taken; each gets exactly one `Stream.end` (stdio waits for them at end of input)

    def __repr__(self) -> str:
        return f"<HostSession {self.label} {self.era} {self.version}>"

    def open_channel(self, stream: Stream) -> None:
        """An HTTP session's GET stream opened: a request to the host waiting for a channel goes on it."""
        self.standalone = stream
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
            self._asks.answered(message)
        elif message.response:  # an unusable answer to a request of the hub's: that request fails, nothing is sent
            if not self._asks.refused(message.id, message.reason):
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
        self.requests += 1
        method = request.method
        modern = revisions.has_envelope(request.params) and method != "initialize"
        if self.era is None:
            self.era = "modern" if modern else "handshake"
        if self.era == "modern":
            self._modern_request(request, stream)
        elif modern:
            stream.end(error_line(request.id, INVALID_REQUEST, NOT_THIS_ERA))
        elif method == "initialize":
            self._initialize(request, stream)
        elif method == "ping":
            stream.end(result_line(request.id, b"{}"))
        elif method not in HANDSHAKE_METHODS:
            stream.end(error_line(request.id, METHOD_NOT_FOUND, extensions.method_not_found(method)))
        elif self.version is None:
            stream.end(error_line(request.id, INVALID_REQUEST, "the session is not initialized: send initialize first"))
        else:
            self._serve(Received(self, request, self.version, stream, None))

    def _initialize(self, request: Request, stream: Stream) -> None:
        params = request.params
        capabilities = params.get("capabilities")
        if not isinstance(capabilities, dict) or not isinstance(params.get("protocolVersion"), str):
            why = "invalid params: initialize needs 'protocolVersion' (a string) and 'capabilities' (an object)"
            stream.end(error_line(request.id, INVALID_PARAMS, why))
            return
        result = revisions.initialize_result(params["protocolVersion"], self._instructions())
        result["capabilities"] = self._server_capabilities()
        self.version = result["protocolVersion"]
        self.capabilities = capabilities
        self.client_info = params.get("clientInfo")
        stream.end(result_line(request.id, result))

    def _modern_request(self, request: Request, stream: Stream) -> None:
        method = request.method
        if method == "initialize":
            data = {"supported": list(revisions.MODERN_VERSIONS), "requested": request.params.get("protocolVersion")}
            why = "this connection serves the 2026-07-28 protocol; the initialize handshake is not accepted"
            stream.end(error_line(request.id, UNSUPPORTED_PROTOCOL_VERSION, why, data))
            return
        try:
            envelope = revisions.read_envelope(request.params)
        except revisions.EnvelopeError as exc:
            stream.end(error_line(request.id, exc.code, str(exc), exc.data))
            return
        if method not in MODERN_METHODS:
            stream.end(error_line(request.id, METHOD_NOT_FOUND, extensions.method_not_found(method)))
        elif method == "server/discover":
            discovered = {
                **revisions.discover_result(self._instructions()),
                "capabilities": self._server_capabilities(),
            }
            stream.end(result_line(request.id, revisions.stamp(discovered, method)))
        else:
            self._serve(Received(self, request, envelope.version, stream, envelope))

    def _server_capabilities(self) -> dict[str, Any]:
        """The hub's capabilities, with the extensions it can relay for the children it has (decision 016), and
        its own tasks (`hub.relay.tasks`): a capability in the handshake era, an extension in 2026-07-28."""
        children = list(self.hub.children.values())
        declared = [c.shared.capabilities for c in children if c.shared is not None]
        starting = any(not c.settled.is_set() for c in children)
        found = extensions.server_extensions(declared, starting=starting)
        capabilities = extensions.server_capabilities(revisions.SERVER_CAPABILITIES, found)
        if not tasks_offered(children):
            return capabilities
        if self.modern:
            return {**capabilities, "extensions": {**capabilities.get("extensions", {}), TASKS_EXTENSION: {}}}
        return {**capabilities, "tasks": TASKS_CAPABILITY}

    def _instructions(self) -> str:
        """The hub's instructions as this session's identity may see them (its policy, as it is now)."""
        return self.hub.instructions(self.hub.view(self.identity))

    def _serve(self, received: Received) -> None:
        method = received.method
        if method in LISTS:
            self._listing(received)
        elif method in ROUTED:
            self.hub.route(received)
        elif method == "logging/setLevel":
            level = received.params.get("level")
            if type(level) is not str or level not in LOG_RANK:
                levels = ", ".join(revisions.LOG_LEVELS)
                received.fail({"code": INVALID_PARAMS, "message": f"invalid params: 'level' must be one of {levels}"})
                return
            self.hub.spawn(self._set_level, received, level)
        elif method == "subscriptions/listen":
            listen = Listen(self, received)
            self._listens[received.id] = listen
            listen.start()

    def _listing(self, received: Received, began: float | None = None) -> None:
        """A list request, answered from the namespace; recorded (`hub.relay.record`) with its duration from
        `began` (its arrival, when it waited for the children starting with the hub)."""
        began = time.perf_counter() if began is None else began
        if received.params.get("cursor") is not None:
            why = "invalid params: the hub lists everything in one page; this cursor is not one of its own"
            received.fail({"code": INVALID_PARAMS, "message": why})
            return
        if self.hub.startup.left():
            self.hub.spawn(self._listing_after_start, received, began)
            return
        namespace = self.hub.namespace
        builtin = self.hub.builtin_tools() if received.method == "tools/list" else ()
        view = self.hub.view(self.identity)
        received.respond(namespace.listing(received.method, received.version, builtin, view))
        tally = namespace.tally(received.method, builtin, view)  # the decisions the listing was made with
        self.hub.record_listing(
            received.method, began, Explanation(self.identity, view, {LISTS[received.method][0]: tally})
        )

    async def _listing_after_start(self, received: Received, began: float) -> None:
        await self.hub.startup.wait()
        self._listing(received, began)

    async def _set_level(self, received: Received, level: str) -> None:
        await self.hub.set_log_level(level)
        if any(c.per_host for c in self.hub.children.values()):
            await self.hub.set_log_level(level, self)  # this session's own connections
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
                self.hub.cancel(self, request_id, reason if isinstance(reason, str) else None)
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
            while not self.closed and not usable(self.standalone):
                if self._channel_opened is None:
                    self._channel_opened = anyio.Event()
                await self._channel_opened.wait()
        stream = self.standalone
        if stream is None or not usable(stream):
            raise AskFailed({"code": INVALID_REQUEST, "message": "hub: the host has no channel open for requests"})
        return await self.ask_on(stream, method, params, max(0.0, limit_s - (anyio.current_time() - began)))

    async def ask_on(self, stream: Stream, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        """`HostAsks.send`; also AskFailed when this host cannot be sent requests (2026-07-28, closed)."""
        if self.modern or self.closed or not usable(stream):
            raise AskFailed({"code": INVALID_REQUEST, "message": "hub: this host cannot be sent requests now"})
        return await self._asks.send(stream, method, params, limit_s)

    def close(self) -> None:
        """The connection ended: requests to the host fail, listen streams end, the hub forgets the session."""
        self.closed = True
        self._wake_channel_waiters()
        self._asks.fail("the host's connection ended")
        for listen in list(self._listens.values()):
            listen.stop()
        self._listens.clear()
        self.hub.session_ended(self)
