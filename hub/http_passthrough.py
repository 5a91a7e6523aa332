"""tools/call from HTTP hosts around the SDK's Streamable HTTP transport: the host side of the pass-through.

Over HTTP the SDK spends more CPU per call than the child behind the hub does: it validates each POST into models,
hands it through memory streams to a session task and a handler task, and answers on an `EventSourceResponse`
with a task of its own (docs/performance.md, "HTTP"). For the common call, this wrapper around the SDK's app
answers the POST itself: the body is parsed once, the call goes to the child through `PassThrough`, and the
child's result is written back as the one SSE event of the response, unchanged.

It takes a POST only when all of this holds, and hands everything else to the SDK untouched:

- the request is a single `tools/call` (or a `notifications/cancelled` for one of its calls) within the SDK's
  body limit, with the headers the SDK requires (Host, Origin and Content-Type as the SDK checks them, Accept with
  both media types) and the session's own protocol version;
- the session is a live handshake-era one the hub knows, opened without credentials;
- `PassThrough` takes the call (a ready stdio child on its shared connection: see hub/passthrough.py).

What the child sends during the call travels on the call's own stream, as on the SDK path: progress, log messages
(one that comes after the result goes on the session's standalone stream, as over stdio), and its sampling,
elicitation and roots requests, under ids of the hub's own (`hub-ask-N`). The host POSTs its answer to such a
request; the wrapper takes it (202) when its id waits in that same session, and the SDK gets every other answer.

The session's idle timeout counts these calls as activity. The SDK keeps its sessions in private fields
(`_server_instances`, `_session_owners`); if a release renames them, every request takes the SDK path again.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import deque
from contextlib import suppress
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.peer import dump_params
from mcp_types import methods
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hub.eras import is_modern
from hub.relay import Unattached, ask_if_declared, result_type

if TYPE_CHECKING:
    from mcp.server.connection import Connection

    from hub.hub import Hub

# Should the lane never answer a call, its stream is ended (and the call cancelled) this long after twice its
# longest allowed time. A backstop: every call the lane holds ends by its answer, its deadline or a cancel.
SAFETY_MARGIN = 30.0
# Ids of the requests the hub sends a host on a call's stream (a child's sampling, elicitation, roots).
ASK_ID_PREFIX = "hub-ask-"
_CALL_MARKERS = (b'"tools/call"', b'"notifications/cancelled"', ASK_ID_PREFIX.encode())


class _Answer:
    """The host's answer to one request the hub sent on a call's stream; None if the stream ended first."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.done = anyio.Event()

    def set(self, message: dict[str, Any] | None) -> None:
        if not self.done.is_set():
            self.message = message
            self.done.set()


class _CallStream:
    """One POST's SSE response body: the call's progress, log messages, the child's requests and the answer."""

    def __init__(self, request_id: Any) -> None:
        self._request_id = request_id
        self._events: deque[bytes] = deque()
        self._ended = False
        self._wake = anyio.Event()
        self.asks: set[_Answer] = set()  # the host's answers this stream still waits for

    @property
    def open(self) -> bool:
        return not self._ended

    def send(self, line: bytes) -> None:
        if not self._ended:
            self._events.append(b"event: message\r\ndata: " + line.rstrip(b"\n") + b"\r\n\r\n")
            self._wake.set()

    def end(self, line: bytes | None) -> None:
        if not self._ended:
            if line is not None:
                self.send(line)
            self._stop()

    def _stop(self) -> None:
        """No more events: a request to the host that is still unanswered has nowhere to be answered now."""
        self._ended = True
        self._wake.set()
        for answer in self.asks:
            answer.set(None)

    async def take(self) -> tuple[bytes, bool]:
        """The events since the last take (waiting for one), and whether the stream has ended."""
        while not self._events and not self._ended:
            self._wake = anyio.Event()
            await self._wake.wait()
        body = b"".join(self._events)
        self._events.clear()
        return body, self._ended

    def give_up(self) -> bytes:
        """The stream's end when its answer never came (the call's own deadline should have given one)."""
        self._stop()
        error = {"code": types.INTERNAL_ERROR, "message": "hub: the call got no answer"}
        answer = json.dumps({"jsonrpc": "2.0", "id": self._request_id, "error": error}).encode()
        return b"event: message\r\ndata: " + answer + b"\r\n\r\n"


class _HostRequests:
    """Requests the hub sends HTTP hosts on calls' streams, each waiting for the POST that answers it.

    Their ids (`hub-ask-N`) are the hub's own, apart from the SDK's (integers): the wrapper takes the answer to
    one of them, and only from the session it was sent to.
    """

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[tuple[str, str], _Answer] = {}

    async def ask(self, session_id: str, stream: _CallStream, request: types.ServerRequest) -> dict[str, Any]:
        """Send `request` on `stream` and return the host's result.

        Raises:
            MCPError: the host answered with an error, or the call ended (answered, timed out, cancelled) first.
        """
        request_id = f"{ASK_ID_PREFIX}{next(self._ids)}"
        answer, key = _Answer(), (session_id, request_id)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": request.method}
        params = dump_params(request.params)
        if params is not None:
            message["params"] = params
        self._waiting[key] = answer
        stream.asks.add(answer)
        try:
            stream.send(json.dumps(message).encode())
            await answer.done.wait()  # bounded: the call's stream ends by its answer, its deadline or a cancel
        finally:
            del self._waiting[key]
            stream.asks.discard(answer)
        reply = answer.message
        if reply is None:
            error = types.ErrorData(
                code=types.INTERNAL_ERROR,
                message=f"hub: the host's call ended before it answered {request.method}",
            )
            raise MCPError.from_error_data(error)
        if "error" in reply:
            raise MCPError.from_error_data(types.ErrorData.model_validate(reply["error"]))
        result: dict[str, Any] = reply.get("result") or {}
        return result

    def answer(self, session_id: str, message: dict[str, Any]) -> bool:
        """Hand a host's answer to the request waiting for it; False if none from this session is."""
        request_id = message.get("id")
        answer = self._waiting.get((session_id, request_id)) if type(request_id) is str else None
        if answer is None or ("result" not in message and "error" not in message):
            return False
        answer.set(message)
        return True


class _StreamedHost(Unattached):
    """The host of one streamed call: a child's requests and log messages during it go on the call's own stream,
    as the SDK sends what relates to a request (spec: Streamable HTTP, "Sending Messages to the Server")."""

    def __init__(self, connection: Connection, stream: _CallStream, requests: _HostRequests, session_id: str) -> None:
        super().__init__(connection)
        self.stream = stream
        self._requests = requests
        self._session_id = session_id

    async def ask(self, request: types.ServerRequest, server: str) -> Any:
        if not self.stream.open:
            return await super().ask(request, server)
        connection = self.connection
        return await ask_if_declared(
            connection.check_capability, lambda: self._send(request), request, server, connection.protocol_version
        )

    async def _send(self, request: types.ServerRequest) -> types.Result:
        """As the SDK's `Connection.send_request` checks the host's result: against its revision, then the model."""
        raw = await self._requests.ask(self._session_id, self.stream, request)
        if request.method in methods.MONOLITH_REQUESTS:
            with suppress(KeyError):
                methods.validate_client_result(request.method, self.connection.protocol_version, raw)
        return result_type(request).model_validate(raw, by_name=False)

    async def log(self, level: types.LoggingLevel, data: Any, logger: str) -> None:
        if not self.stream.open:
            await super().log(level, data, logger)
            return
        params = {"level": level, "logger": logger, "data": data}
        self.stream.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": params}).encode())


def _accepts_both(accept: str) -> bool:
    """The SDK's rule (`check_accept_headers`): JSON and SSE both acceptable, wildcards included."""
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    if "*/*" in kinds:
        return True
    return bool(kinds & {"application/json", "application/*"}) and bool(kinds & {"text/event-stream", "text/*"})


class HttpPassThrough:
    """ASGI wrapper of the SDK's Streamable HTTP app (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        hub: Hub,
        manager: StreamableHTTPSessionManager,
        security: TransportSecuritySettings,
        path: str = "/mcp",
    ) -> None:
        self._app = app
        self._hub = hub
        self._manager = manager
        self._security = TransportSecurityMiddleware(security)
        self._path = path
        self._requests = _HostRequests()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self._path:
            await self._app(scope, receive, send)
            return
        received: list[Message] = []
        body = await self._read_body(receive, received)
        if body is None or not await self._took(scope, body, send):
            await self._app(scope, _replay(received, receive), send)

    async def _read_body(self, receive: Receive, received: list[Message]) -> bytes | None:
        """The whole body, or None (then the SDK gets the request: too large, or the client went away)."""
        size, limit = 0, self._manager.max_request_body_size
        while True:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                return None
            size += len(message.get("body", b""))
            if size > limit:
                return None
            if not message.get("more_body", False):
                return b"".join(m.get("body", b"") for m in received)

    async def _took(self, scope: Scope, body: bytes, send: Send) -> bool:
        if not any(marker in body for marker in _CALL_MARKERS):
            return False
        headers = {k: v for k, v in scope["headers"] if k in (b"mcp-session-id", b"mcp-protocol-version", b"accept")}
        session_id = headers.get(b"mcp-session-id", b"").decode("latin-1")
        connection = self._session(scope, session_id)
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if connection is None or version != connection.protocol_version:
            return False
        if not _accepts_both(headers.get(b"accept", b"").decode("latin-1")):
            return False
        if await self._security.validate_request(Request(scope), is_post=True) is not None:
            return False
        try:
            message = json.loads(body)
        except ValueError:
            return False
        if type(message) is not dict or message.get("jsonrpc") != "2.0":
            return False
        passthrough = self._hub.passthrough
        method = message.get("method")
        if method is None and self._requests.answer(session_id, message):
            await _accepted(session_id, send)
            return True
        if method == "notifications/cancelled" and "id" not in message:
            if not passthrough.cancel(message, connection):
                return False
            await _accepted(session_id, send)
            return True
        if method != "tools/call" or "id" not in message:
            return False
        stream = _CallStream(message["id"])
        host = _StreamedHost(connection, stream, self._requests, session_id)
        limit = passthrough.offer_streamed(message, host, stream)
        if limit is None:
            return False
        self._touch(session_id)
        try:
            # Queued behind max_concurrency, a call may wait about as long again before its deadline starts.
            if not await self._respond(session_id, stream, 2 * limit + SAFETY_MARGIN, send):
                notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": message["id"]}}
                passthrough.cancel(notice, connection)  # given up on: the child stops, and its slot is free
        finally:
            self._touch(session_id)
        return True

    def _session(self, scope: Scope, session_id: str) -> Connection | None:
        """The session's connection, if this request may go around the SDK's transport at all."""
        manager = self._manager
        if not session_id or scope.get("user") is not None or manager.json_response or manager.event_store is not None:
            return None  # credentials, JSON-only answers and resumable streams are the SDK's to handle
        transport = getattr(manager, "_server_instances", {}).get(session_id)
        if transport is None or transport.is_terminated:
            return None
        if getattr(manager, "_session_owners", {}).get(session_id):  # opened with credentials
            return None
        connection = self._hub.hosts.session(session_id)
        if connection is None or is_modern(connection.protocol_version) or not connection.initialize_accepted:
            return None
        return connection

    def _touch(self, session_id: str) -> None:
        """A call is activity: push the session's idle deadline on, as the SDK does for the requests it serves."""
        transport = getattr(self._manager, "_server_instances", {}).get(session_id)
        idle = getattr(transport, "idle_scope", None)
        timeout = self._manager.session_idle_timeout
        if idle is not None and timeout is not None and not idle.cancel_called and math.isfinite(idle.deadline):
            idle.deadline = max(idle.deadline, anyio.current_time() + timeout)

    async def _respond(self, session_id: str, stream: _CallStream, limit: float, send: Send) -> bool:
        """Write the call's events until its answer; False if `limit` ran out first (the host got an error)."""
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache, no-transform"),
            (b"connection", b"keep-alive"),
            (b"mcp-session-id", session_id.encode("latin-1")),
        ]
        started = False
        try:
            with anyio.move_on_after(limit):
                while True:
                    body, last = await stream.take()
                    if not started:
                        await send({"type": "http.response.start", "status": 200, "headers": headers})
                        started = True
                    await send({"type": "http.response.body", "body": body, "more_body": not last})
                    if last:
                        return True
            if not started:
                await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": stream.give_up(), "more_body": False})
            return False
        except OSError:
            return True  # the host went away: its call still ends at the child, by its answer or its deadline


async def _accepted(session_id: str, send: Send) -> None:
    """202, as the SDK answers a notification or a response."""
    headers = [(b"content-length", b"0"), (b"mcp-session-id", session_id.encode("latin-1"))]
    await send({"type": "http.response.start", "status": 202, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


def _replay(received: list[Message], receive: Receive) -> Receive:
    """A `receive` that gives the messages already read first, then the rest."""
    pending = deque(received)

    async def replay() -> Message:
        return pending.popleft() if pending else await receive()

    return replay
