"""The Streamable HTTP front: a team's hosts at `http://HOST:PORT/mcp`, both protocol eras on one endpoint.

- Handshake era: `initialize` opens a session (its id in `Mcp-Session-Id`); the session's requests are POSTs, each
  answered as JSON, or as an SSE stream when something comes before the answer (progress, a log message, a request
  to the host); notifications and the host's answers are POSTs answered 202; a GET opens the session's stream for
  what belongs to no request; a DELETE ends the session. Sessions are bounded (`hub.http_sessions`).
- 2026-07-28: each POST is one request with its own envelope and no session; closing its response cancels it;
  `subscriptions/listen` is a POST whose response is the stream of change notifications.

Every request is checked before it reaches a session: Host and Origin (DNS-rebinding protection, the SDK's
`TransportSecurityMiddleware`), the bearer token when `auth:` is configured (`hub.host.http_auth`; a session belongs
to the identity that opened it), `Content-Type`, `Accept`, the body's size (`hub.max_request_bytes`), the time the
request's head and then its body take to arrive (`hub.http.request_timeout`: a connection that sends nothing, or
half a request, is closed), and for 2026-07-28 the routing headers against the body. Then the message takes the
same path as over stdio: `HostSession.handle`. An error about a request carries its id; an answer of the host's
is never answered back (`hub.protocol.jsonrpc.Invalid`). `/healthz` says the hub is up; `/readyz` whether the
required children are ready (503 while they are not, or while draining); `POST /reload` re-reads servers.yaml and
`/metrics` serves Prometheus text (with `auth:`, for the admin and metrics groups; without, reload from loopback
only); `/.well-known/oauth-protected-resource` is the RFC 9728 metadata; `/` (or `/status`) is the status page and
`/status.json` its data, with `/login` and `/logout` for browsers (`hub.host.http_status`).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import structlog
from starlette.types import Receive, Scope, Send

from hub.access.identity import Identity
from hub.host.http_auth import WELL_KNOWN, Authenticator, Refusal
from hub.host.http_body import read_body
from hub.host.http_checks import Checks
from hub.host.http_oauth import CALLBACK as OAUTH_CALLBACK
from hub.host.http_oauth import START as OAUTH_START
from hub.host.http_oauth import SignIns
from hub.host.http_sessions import HttpSession, Sessions, StandaloneStream
from hub.host.http_status import PATHS as STATUS_PATHS
from hub.host.http_status import StatusPage
from hub.host.session import HostSession
from hub.observe.recent import Recent
from hub.protocol import revisions
from hub.protocol.jsonrpc import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    REQUEST_CANCELLED,
    UNSUPPORTED_PROTOCOL_VERSION,
    Invalid,
    Message,
    Notification,
    Request,
    Response,
    error_line,
    leading_id,
    parse,
)
from hub.reload import reload_from_disk

if TYPE_CHECKING:
    from hub.app import Hub

# Once an SSE response has started, a comment line this often keeps proxies from closing a quiet stream; a request
# still silent after this long commits to SSE for the same reason.
KEEPALIVE = 15.0
# The revision a --stateless request without MCP-Protocol-Version is taken to speak (the transport spec's rule).
STATELESS_DEFAULT_VERSION = "2025-03-26"
_SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform")]
_JSON = [(b"content-type", b"application/json")]
# Messages a POST's stream holds before its answer while the client is slow to read; more are dropped.
POST_BACKLOG = 1000
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_ROUTING_HEADERS = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")

_log = structlog.get_logger("hub.http")


class PostStream:
    """One POST's response: the messages about its request, then the answer (`hub.host.session.Stream`).

    What comes before the answer waits here while the client is slow to read; past POST_BACKLOG messages, more are
    dropped (a child's progress and log messages, counted in the log), so that a child that floods a call cannot
    grow the hub while its host does not read.
    """

    def __init__(self, request_id: Any = None) -> None:
        self.request_id = request_id
        self.events: deque[bytes] = deque()
        self.answer: bytes | None = None
        self.ended = False
        self.wake = anyio.Event()
        self.on_end: list[Callable[[], None]] = []
        self.dropped = 0

    def send(self, line: bytes) -> None:
        if self.ended:
            return
        if len(self.events) >= POST_BACKLOG:
            self.dropped += 1
            if self.dropped == 1:
                _log.warning("http_stream_backlog_full", limit=POST_BACKLOG)
            return
        self.events.append(line)
        self.wake.set()

    def end(self, line: bytes | None) -> None:
        if not self.ended:
            self.ended = True
            self.answer = line
            self.wake.set()
            for callback in self.on_end:
                callback()


def _request_id(message: Message) -> Any:
    """The id an error about `message` goes under: a request's (or a malformed one's), never an answer's."""
    if isinstance(message, Request) or (isinstance(message, Invalid) and not message.response):
        return message.id
    return None


def _sse(line: bytes) -> bytes:
    return b"event: message\r\ndata: " + line.rstrip(b"\n") + b"\r\n\r\n"


async def _reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [*(headers or _JSON)]})
    await send({"type": "http.response.body", "body": body})


async def _error(
    send: Send,
    status: int,
    code: int,
    message: str,
    request_id: Any = None,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await _reply(send, status, error_line(request_id, code, message).rstrip(b"\n"), [*_JSON, *(extra or [])])


def _accepts(value: str) -> tuple[bool, bool]:
    """(JSON, SSE) acceptable, wildcards included (RFC 9110)."""
    kinds = {part.split(";")[0].strip().lower() for part in value.split(",")}
    anything = "*/*" in kinds
    return (
        anything or bool(kinds & {"application/json", "application/*"}),
        anything or bool(kinds & {"text/event-stream", "text/*"}),
    )


class HttpFront:
    """The ASGI application."""

    def __init__(self, hub: Hub, checks: Checks, path: str = "/mcp", base_url: str = "http://127.0.0.1") -> None:
        self.hub = hub
        self.path = path
        self.checks = checks
        self.sessions = Sessions(hub, hub.loaded.config.hub.http)
        self._stateless_count = 0  # the labels of --stateless requests' sessions
        self.auth = Authenticator(hub)
        # The status page's calls, recorded where the call log is written (the hub is built with them for HTTP).
        recent = hub.recent if hub.recent is not None else Recent()
        self.status = StatusPage(hub, checks, self.auth, recent, self._refuse)
        # Sign-in links of OAuth children (hub.host.http_oauth), at the origin browsers reach the hub at.
        self.sign_ins: SignIns | None = None
        if hub.oauth is not None:
            base = hub.loaded.config.hub.http.public_url or base_url
            hub.oauth.link_base = base
            self.sign_ins = SignIns(hub, hub.oauth, base)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == self.path:
            await self._mcp(scope, receive, send)
        elif path in ("/healthz", "/readyz"):
            await self._health(path, send)
        elif path == "/reload":
            await self._reload(scope, send)
        elif path == "/metrics":
            await self._metrics(scope, send)
        elif path in STATUS_PATHS:
            await self.status(scope, receive, send)
        elif path in (WELL_KNOWN, WELL_KNOWN + self.path):
            await self._metadata(scope, send)
        elif path in (OAUTH_START, OAUTH_CALLBACK) and self.sign_ins is not None:
            await self.sign_ins(scope, receive, send)
        else:
            await _reply(send, 404, b'{"error":"not found"}')

    async def _metadata(self, scope: Scope, send: Send) -> None:
        """RFC 9728 protected-resource metadata: public, and readable by browser-based clients of any origin (the
        SDK's own metadata route does the same)."""
        cors = [(b"access-control-allow-origin", b"*"), (b"access-control-allow-methods", b"GET, OPTIONS")]
        if scope["method"] == "OPTIONS":
            await _reply(send, 204, b"", [*cors, (b"access-control-allow-headers", b"*")])
        elif scope["method"] not in ("GET", "HEAD"):
            await _reply(send, 405, b'{"error":"GET only"}', [*_JSON, (b"allow", b"GET, OPTIONS")])
        else:
            metadata = self.auth.metadata(self._resource(scope))
            await _reply(send, 200, metadata, [*_JSON, *cors, (b"cache-control", b"max-age=300")])

    def _resource(self, scope: Scope) -> str:
        host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "localhost")
        return self.auth.resource(scope.get("scheme", "http"), host, self.path)

    async def _caller(self, scope: Scope, headers: dict[str, str], send: Send) -> Identity | None:
        """Who sent the request; None if it was refused (and answered)."""
        found = await self.auth.identify(headers, scope.get("query_string", b""))
        if isinstance(found, Identity):
            return found
        await self._refuse(scope, send, found)
        return None

    async def _refuse(self, scope: Scope, send: Send, refusal: Refusal) -> None:
        extra = [(b"www-authenticate", self.auth.challenge(self._resource(scope), refusal))]
        if refusal.status != 401:
            extra = []
        await _error(send, refusal.status, INVALID_REQUEST, f"Unauthorized: {refusal.description}", extra=extra)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        refused = await self.checks.refused(scope)
        if refused is not None:
            await refused(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        identity = await self._caller(scope, headers, send)
        if identity is None:
            return
        if method in ("GET", "DELETE") and self.hub.stateless:
            await _error(
                send,
                405,
                INVALID_REQUEST,
                "Method Not Allowed: this hub serves statelessly (--stateless): there are no sessions, so no stream "
                "of the hub's own messages (list_changed, log messages outside a request) and nothing to end",
                extra=[(b"allow", b"POST")],
            )
        elif method == "POST":
            await self._post(scope, headers, identity, receive, send)
        elif method == "GET":
            await self._get(headers, identity, receive, send)
        elif method == "DELETE":
            session = self._session(headers, identity)
            if session is None:
                await _error(send, 404, INVALID_REQUEST, self._not_found(headers))
                return
            self.sessions.close(session.id, "ended by the host (DELETE)")
            await _reply(send, 200, b"")
        else:
            await _error(send, 405, INVALID_REQUEST, "Method Not Allowed", extra=[(b"allow", b"GET, POST, DELETE")])

    # ---- POST -------------------------------------------------------------------------------------------------

    async def _read_body(self, receive: Receive, send: Send) -> bytes | None:
        """The whole body, bounded in size and in time; None if the client was answered already (or left)."""
        limit = self.hub.loaded.config.hub.max_request_bytes
        body = await read_body(receive, limit, self.hub.loaded.config.hub.http.request_timeout)
        if body.problem == "too_large":
            message = f"the request body is over the hub's limit of {limit} bytes (max_request_bytes)"
            await _error(send, 413, INVALID_REQUEST, message, leading_id(body.head))
        elif body.problem == "late":
            await _error(send, 408, INVALID_REQUEST, "the request body did not arrive in time")
        return body.data

    def _not_found(self, headers: dict[str, str]) -> str:
        """Why a session id is not known here: closed or expired, or opened on another replica (named)."""
        owner, dot, _ = headers.get("mcp-session-id", "").partition(".")
        if dot and owner and owner != self.hub.replica:
            return (
                f"Session not found: it was opened on replica {owner[:63]!r} and this is {self.hub.replica!r}; the "
                "load balancer must send a session's requests to the replica that opened it (docs/deploy.md). "
                "Initialize a new session"
            )
        return "Session not found"

    def _session(self, headers: dict[str, str], identity: Identity) -> HttpSession | None:
        """The request's session, if it is one of this caller's: another identity's session id is not found
        (a session id that leaks does not let anyone else act in that session)."""
        session = self.sessions.get(headers.get("mcp-session-id", ""))
        if session is None or session.host.identity != identity:
            return None
        return session

    async def _post(
        self, scope: Scope, headers: dict[str, str], identity: Identity, receive: Receive, send: Send
    ) -> None:
        has_json, has_sse = _accepts(headers.get("accept", ""))
        body = await self._read_body(receive, send)
        if body is None:
            return
        parsed = parse(body)
        if isinstance(parsed, list | Invalid):
            await self._unusable(parsed, headers, identity, send)
            return
        version = headers.get("mcp-protocol-version")
        session_id = headers.get("mcp-session-id")
        modern = (version is not None and version not in revisions.HANDSHAKE_VERSIONS) or (
            session_id is None
            and isinstance(parsed, Request)
            and parsed.method != "initialize"
            and revisions.has_envelope(parsed.params)
        )
        if modern:
            await self._modern(scope, parsed, headers, identity, has_json, has_sse, receive, send)
            return
        if not (has_json and has_sse):
            await _error(
                send,
                406,
                INVALID_REQUEST,
                "Not Acceptable: Client must accept both application/json and text/event-stream",
                _request_id(parsed),
            )
            return
        if self.hub.stateless:
            await self._stateless(parsed, headers, identity, receive, send)
            return
        if session_id is None:
            await self._initialize(scope, parsed, identity, send)
            return
        session = self._session(headers, identity)
        if session is None:
            await _error(send, 404, INVALID_REQUEST, self._not_found(headers), _request_id(parsed))
            return
        if not isinstance(parsed, Request):
            session.touch(used=False)
            session.host.handle(parsed, _NOWHERE)
            await _reply(send, 202, b"", [(b"mcp-session-id", session.id.encode())])
            return
        session.touch()
        session.in_flight += 1
        try:
            stream = PostStream(parsed.id)
            session.host.handle(parsed, stream)
            await self._respond(stream, receive, send, session, None)
        finally:
            session.in_flight -= 1
            session.touch(used=False)

    async def _unusable(
        self, parsed: list[Message] | Invalid, headers: dict[str, str], identity: Identity, send: Send
    ) -> None:
        """A batch (each request in it told), or what is not a message: 400. A host's unusable answer to a request
        of the hub's fails that request (it is not answered back: see `hub.protocol.jsonrpc.Invalid`)."""
        if isinstance(parsed, list):
            answers = [
                error_line(i, INVALID_REQUEST, "JSON-RPC batches are not supported; send one message per request")
                for i in map(_request_id, parsed)
                if i is not None
            ]
            await _reply(send, 400, b"[" + b",".join(a.rstrip(b"\n") for a in answers) + b"]")
            return
        if parsed.response:
            answered = self.sessions.get(headers.get("mcp-session-id", ""))
            if answered is not None and answered.host.identity == identity:
                answered.host.handle(parsed, _NOWHERE)
        await _error(send, 400, parsed.code, parsed.reason, _request_id(parsed))

    async def _stateless(
        self, message: Message, headers: dict[str, str], identity: Identity, receive: Receive, send: Send
    ) -> None:
        """`--stateless`: a handshake-era POST served on its own, by a host session that lives for that one request
        (no Mcp-Session-Id is issued or needed), so that any replica can serve it. The host is taken to have
        declared no capabilities: a child's sampling, elicitation or roots request gets a clear refusal, and
        nothing reaches the host outside the answer to its own request (docs/deploy.md)."""
        if not isinstance(message, Request):  # initialized, a cancellation, an answer: nothing to attach them to
            await _reply(send, 202, b"")
            return
        self._stateless_count += 1
        host = HostSession(
            self.hub, f"{self.hub.replica}.stateless-{self._stateless_count}", None, era="handshake", identity=identity
        )
        try:
            if message.method != "initialize":
                version = headers.get("mcp-protocol-version") or STATELESS_DEFAULT_VERSION
                params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "stateless"}}
                host.handle(Request(0, "initialize", params, b""), _NOWHERE)
            stream = PostStream(message.id)
            host.handle(message, stream)
            await self._respond(stream, receive, send, None, None, handshake=True)
        finally:
            host.close()

    async def _initialize(self, scope: Scope, message: Message, identity: Identity, send: Send) -> None:
        if not isinstance(message, Request) or message.method != "initialize":
            await _error(
                send,
                400,
                INVALID_REQUEST,
                "Bad Request: Missing session ID (send initialize first)",
                _request_id(message),
            )
            return
        if self.hub.draining:
            await _error(
                send, 503, INVALID_REQUEST, "The hub is shutting down; connect again (to another replica)", message.id
            )
            return
        client = (scope.get("client") or ("", 0))[0]
        session = self.sessions.open(client, identity)
        if session is None:
            await _error(
                send,
                503,
                INVALID_REQUEST,
                "Too many open sessions: the hub's session limit is reached (hub.http in servers.yaml)",
                message.id,
            )
            return
        stream = PostStream()
        session.host.handle(message, stream)
        answer = stream.answer or b""
        if session.host.version is None:  # refused: no session comes of it
            self.sessions.close(session.id, "initialize refused")
            await _reply(send, 200, answer.rstrip(b"\n"))
            return
        await _reply(send, 200, answer.rstrip(b"\n"), [*_JSON, (b"mcp-session-id", session.id.encode())])

    async def _modern(
        self,
        scope: Scope,
        message: Message,
        headers: dict[str, str],
        identity: Identity,
        has_json: bool,
        has_sse: bool,
        receive: Receive,
        send: Send,
    ) -> None:
        if isinstance(message, Notification):  # the 2026-07-28 wire has none from the client: acknowledged, dropped
            if headers.get("mcp-protocol-version") not in revisions.MODERN_VERSIONS:
                await _error(send, 400, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version")
            else:
                await _reply(send, 202, b"")
            return
        if not isinstance(message, Request):
            await _error(send, 400, INVALID_REQUEST, "Body must be a single JSON-RPC request or notification object")
            return
        listen = message.method == "subscriptions/listen"
        if not has_json or (listen and not has_sse):
            await _error(
                send,
                406,
                INVALID_REQUEST,
                "Not Acceptable: Client must accept application/json" + (" and text/event-stream" if listen else ""),
                message.id,
            )
            return
        mismatch = self._header_mismatch(scope, message, headers)
        if mismatch is not None:
            await _error(send, 400, HEADER_MISMATCH, mismatch, message.id)
            return
        host = HostSession(self.hub, f"http-{id(message):x}", None, era="modern", identity=identity)
        stream = PostStream()
        host.handle(message, stream)
        await self._respond(stream, receive, send, None, lambda: self._cancelled(host, message))

    def _cancelled(self, host: HostSession, message: Request) -> None:
        host.receive(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": message.id, "reason": "the host closed the request"},
                }
            ).encode(),
            _NOWHERE,
        )

    def _header_mismatch(self, scope: Scope, message: Request, headers: dict[str, str]) -> str | None:
        """What is wrong with a 2026-07-28 request's routing headers, if anything (the SDK's rules)."""
        raw = [k for k, _ in scope["headers"]]
        for name in _ROUTING_HEADERS:
            if raw.count(name) > 1:
                return f"{name.decode()} header appears more than once"
        meta = message.params.get("_meta")
        envelope_version = meta.get(revisions.PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
        if envelope_version is not None and headers.get("mcp-protocol-version") != envelope_version:
            return "mcp-protocol-version header does not match the request envelope's protocol version"
        if headers.get("mcp-method") != message.method:
            return "mcp-method header does not match the request body's method"
        key = _NAMED.get(message.method)
        if key is not None:
            value = message.params.get(key)
            if value is not None and not self.checks.name_matches(headers.get("mcp-name"), value):
                return f"mcp-name header does not match the request body's {key!r} parameter"
        if message.method == "tools/call":
            return self._param_mismatch(message, headers)
        return None

    def _param_mismatch(self, message: Request, headers: dict[str, str]) -> str | None:
        arguments = message.params.get("arguments") or {}
        if not isinstance(arguments, dict) or (not arguments and not any(k.startswith("mcp-param-") for k in headers)):
            return None
        name = message.params.get("name")
        schema = next((t.get("inputSchema") for t in self.hub.catalog.namespace.tools if t.get("name") == name), None)
        if schema is None:
            return None
        return self.checks.param_mismatch(schema, arguments, headers)

    async def _respond(
        self,
        stream: PostStream,
        receive: Receive,
        send: Send,
        session: HttpSession | None,
        cancel: Callable[[], None] | None,
        handshake: bool = False,
    ) -> None:
        """The request's answer as JSON when nothing comes before it; else an SSE stream of all its messages.

        Over 2026-07-28 (`cancel` given) a client that closes the request cancels it. A handshake-era request
        without a session (`handshake`: --stateless) is answered as in a session: status 200, a cancelled answer.
        """
        handshake = handshake or session is not None
        extra = [(b"mcp-session-id", session.id.encode())] if session is not None else []
        await self._wait(stream)
        if not (stream.ended and not stream.events):
            await send({"type": "http.response.start", "status": 200, "headers": [*_SSE, *extra]})
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_disconnect, receive, tg.cancel_scope, cancel)
                await self._events(stream, send, handshake)
                tg.cancel_scope.cancel()
        elif stream.answer is not None:
            status = 200 if handshake else self._status(stream.answer)
            await _reply(send, status, stream.answer.rstrip(b"\n"), [*_JSON, *extra])
        elif handshake:  # cancelled: the handshake era's stream ends with an answer, "cancelled" (the SDK's)
            await _error(send, 200, REQUEST_CANCELLED, "Request cancelled", stream.request_id, extra)
        else:  # 2026-07-28: the host closed the request; nothing is read any more
            await _reply(send, 204, b"", extra)

    @staticmethod
    async def _wait(stream: PostStream) -> None:
        """Until the stream has something to send, or KEEPALIVE has passed."""
        with anyio.move_on_after(KEEPALIVE):
            while not stream.ended and not stream.events:
                stream.wake = anyio.Event()
                await stream.wake.wait()

    async def _events(self, stream: PostStream, send: Send, cancelled_answer: bool) -> None:
        """A committed SSE response: each message as it comes, a keep-alive comment when there is none for long."""
        while True:
            events = [_sse(line) for line in stream.events]
            stream.events.clear()
            if stream.ended and stream.answer is not None:
                events.append(_sse(stream.answer))
            elif stream.ended and cancelled_answer:
                events.append(_sse(error_line(stream.request_id, REQUEST_CANCELLED, "Request cancelled")))
            body = b"".join(events) or b": keepalive\r\n\r\n"
            try:
                await send({"type": "http.response.body", "body": body, "more_body": not stream.ended})
            except OSError:
                return
            if stream.ended:
                return
            await self._wait(stream)

    @staticmethod
    async def _watch_disconnect(receive: Receive, scope: anyio.CancelScope, cancel: Callable[[], None] | None) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        if cancel is not None:
            cancel()
        scope.cancel()

    def _status(self, answer: bytes) -> int:
        """A 2026-07-28 error's HTTP status (the SDK's table); 200 for a result."""
        if b'"error"' not in answer[:200]:
            return 200
        message = parse(answer)
        if isinstance(message, Response) and message.error is not None:
            return self.checks.status(message.error.get("code"))
        return 200

    # ---- GET: a session's own stream ------------------------------------------------------------------------

    async def _get(self, headers: dict[str, str], identity: Identity, receive: Receive, send: Send) -> None:
        if not _accepts(headers.get("accept", ""))[1]:
            await _error(send, 406, INVALID_REQUEST, "Not Acceptable: Client must accept text/event-stream")
            return
        session_id = headers.get("mcp-session-id")
        if session_id is None:
            await _error(send, 400, INVALID_REQUEST, "Bad Request: Missing session ID")
            return
        session = self._session(headers, identity)
        if session is None:
            await _error(send, 404, INVALID_REQUEST, self._not_found(headers))
            return
        stream = session.open_standalone()
        if stream is None:
            await _error(send, 409, INVALID_REQUEST, "Conflict: Only one SSE stream is allowed per session")
            return
        await send(
            {"type": "http.response.start", "status": 200, "headers": [*_SSE, (b"mcp-session-id", session.id.encode())]}
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_disconnect, receive, tg.cancel_scope, None)
                await self._stream(stream, send)
                tg.cancel_scope.cancel()
        finally:
            stream.close()

    @staticmethod
    async def _stream(stream: StandaloneStream, send: Send) -> None:
        while not stream.closed:
            with anyio.move_on_after(KEEPALIVE):
                while not stream.events and not stream.closed:
                    stream.wake = anyio.Event()
                    await stream.wake.wait()
            events = [_sse(line) for line in stream.events]
            stream.events.clear()
            try:
                await send(
                    {
                        "type": "http.response.body",
                        "body": b"".join(events) or b": keepalive\r\n\r\n",
                        "more_body": not stream.closed,
                    }
                )
            except OSError:
                return

    # ---- health ---------------------------------------------------------------------------------------------

    async def _health(self, path: str, send: Send) -> None:
        hub = self.hub
        if path == "/healthz":
            await _reply(send, 200, json.dumps({"status": "ok", "uptime_s": hub.health()["uptime_s"]}).encode())
        else:
            ready, servers = hub.readiness()
            body = {"ready": ready, "servers": servers, **({"draining": True} if hub.draining else {})}
            await _reply(send, 200 if ready else 503, json.dumps(body).encode())

    async def _admitted(self, scope: Scope, send: Send, *groups: str) -> bool:
        """Whether an administrative request may go on (answered if not): with `auth:`, only identities in one of
        `groups`, wherever they connect from (behind a reverse proxy every peer is the proxy); without, loopback
        only."""
        config = self.hub.loaded.config.auth
        if config is None:
            if (scope.get("client") or ("", 0))[0] in ("127.0.0.1", "::1"):
                return True
            await _reply(send, 403, b'{"error":"accepted from loopback only (or configure auth:)"}')
            return False
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        identity = await self._caller(scope, headers, send)
        if identity is None:
            return False
        if identity.in_any(set(groups)):
            return True
        needed = " or ".join(repr(g) for g in groups)
        body = json.dumps({"error": "insufficient_scope", "error_description": f"needs a member of {needed}"})
        challenge = f'Bearer error="insufficient_scope", error_description="needs a member of {needed}"'
        await _reply(send, 403, body.encode(), [*_JSON, (b"www-authenticate", challenge.encode())])
        return False

    async def _metrics(self, scope: Scope, send: Send) -> None:
        """Prometheus text: to anyone without `auth:` (the hub is then on loopback, or told it is safe); with it,
        to members of the metrics or admin group only."""
        auth = self.hub.loaded.config.auth
        if auth is not None and not await self._admitted(scope, send, auth.metrics_group, auth.admin_group):
            return
        assert self.hub.metrics is not None
        body, content_type = self.hub.metrics.render()
        await _reply(send, 200, body, [(b"content-type", content_type.encode())])

    async def _reload(self, scope: Scope, send: Send) -> None:
        hub = self.hub
        if scope["method"] != "POST":
            await _reply(send, 405, b'{"error":"POST /reload"}', [*_JSON, (b"allow", b"POST")])
        elif not await self._admitted(
            scope, send, hub.loaded.config.auth.admin_group if hub.loaded.config.auth else ""
        ):
            return
        else:
            summary = await reload_from_disk(hub, "POST /reload")
            if summary is None:
                await _reply(send, 422, b'{"error":"the new configuration was rejected; see the hub\'s log"}')
            else:
                await _reply(send, 200, json.dumps(summary).encode())


class _Nowhere:
    """The stream of a message that gets no answer on its own POST (a notification, a host's answer)."""

    def send(self, line: bytes) -> None:
        pass

    def end(self, line: bytes | None) -> None:
        pass


_NOWHERE = _Nowhere()
