"""The Streamable HTTP front: a team's hosts at `http://HOST:PORT/mcp`, both protocol eras on one endpoint.

- Handshake era: `initialize` opens a session (its id in `Mcp-Session-Id`; bounded, `hub.host.http_sessions`); its
  requests are POSTs, each answered as JSON or as an SSE stream when something comes before the answer; its
  notifications and answers are POSTs answered 202; a GET opens its stream for what belongs to no request; a DELETE
  ends it. `--stateless`: each POST is served on its own, by a session that lives for that one request.
- 2026-07-28: each POST is one request with its own envelope and no session; closing its response cancels it;
  `subscriptions/listen` is a POST whose response is the stream of change notifications.

Every request is checked before it reaches a session: Host and Origin (DNS rebinding, `hub.host.http_checks`), the
bearer token when `auth:` is configured (`hub.host.http_auth`; a session belongs to the identity that opened it),
`Content-Type`, `Accept`, the body's size and arrival time (`hub.host.http_replies`), and for 2026-07-28 the routing
headers against the body. Then the message takes the same path as over stdio: `HostSession.handle`. An error about
a request carries its id; an answer of the host's is never answered back (`hub.protocol.jsonrpc.Invalid`).

The other routes: RFC 9728 metadata, the status page (`hub.host.http_status`), OAuth sign-in (`hub.host.http_oauth`),
`/healthz`, `/readyz`, `/metrics` and `POST /reload` (who may use each: the table in docs/team.md).
"""

from __future__ import annotations

import itertools
import json

from starlette.types import Receive, Scope, Send

from hub.access.identity import Identity
from hub.host.http_auth import MCP, WELL_KNOWN, Authenticator
from hub.host.http_checks import Checks
from hub.host.http_oauth import CALLBACK as OAUTH_CALLBACK
from hub.host.http_oauth import START as OAUTH_START
from hub.host.http_oauth import SignIns
from hub.host.http_replies import (
    JSON,
    NOWHERE,
    PostStream,
    accepts,
    error,
    headers_of,
    insufficient_scope,
    read_body,
    reply,
    request_id,
    respond,
    stream_standalone,
)
from hub.host.http_sessions import HttpSession, Sessions
from hub.host.http_status import PATHS as STATUS_PATHS
from hub.host.http_status import StatusPage
from hub.host.port import HubPort
from hub.host.session import HostSession
from hub.protocol import revisions
from hub.protocol.jsonrpc import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    error_line,
    leading_id,
    parse,
)

# The revision a --stateless request without MCP-Protocol-Version is taken to speak (the transport spec's rule).
STATELESS_DEFAULT_VERSION = "2025-03-26"


class HttpFront:
    """The ASGI application."""

    def __init__(self, hub: HubPort, checks: Checks, base_url: str = "http://127.0.0.1") -> None:
        self.hub = hub
        self.checks = checks
        self.sessions = Sessions(hub, hub.settings.http)
        self._stateless_labels = itertools.count(1)
        self.auth = Authenticator(hub)
        self.status = StatusPage(hub, checks, self.auth)
        # Sign-in links of OAuth children, at the origin browsers reach the hub at.
        self.sign_ins: SignIns | None = None
        if hub.oauth is not None:
            hub.oauth.link_base = hub.settings.http.public_url or base_url
            self.sign_ins = SignIns(hub, hub.oauth, hub.oauth.link_base)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path = scope["path"]
        if path == MCP:
            await self._mcp(scope, receive, send)
        elif path in ("/healthz", "/readyz"):
            await self._health(path, send)
        elif path == "/reload":
            await self._reload(scope, send)
        elif path == "/metrics":
            await self._metrics(scope, send)
        elif path in STATUS_PATHS:
            await self.status(scope, receive, send)
        elif path in (WELL_KNOWN, WELL_KNOWN + MCP):
            await self._metadata(scope, send)
        elif path in (OAUTH_START, OAUTH_CALLBACK) and self.sign_ins is not None:
            await self.sign_ins(scope, receive, send)
        else:
            await reply(send, 404, b'{"error":"not found"}')

    async def _metadata(self, scope: Scope, send: Send) -> None:
        """RFC 9728 protected-resource metadata: public, and readable by browser-based clients of any origin (the
        SDK's own metadata route does the same)."""
        cors = [(b"access-control-allow-origin", b"*"), (b"access-control-allow-methods", b"GET, OPTIONS")]
        if scope["method"] == "OPTIONS":
            await reply(send, 204, b"", [*cors, (b"access-control-allow-headers", b"*")])
        elif scope["method"] not in ("GET", "HEAD"):
            await reply(send, 405, b'{"error":"GET only"}', [*JSON, (b"allow", b"GET, OPTIONS")])
        else:
            await reply(send, 200, self.auth.metadata(scope), [*JSON, *cors, (b"cache-control", b"max-age=300")])

    async def _caller(self, scope: Scope, headers: dict[str, str], send: Send) -> Identity | None:
        """Who sent the request; None if it was refused (and answered)."""
        found = await self.auth.identify(headers, scope.get("query_string", b""))
        if isinstance(found, Identity):
            return found
        await self.auth.refuse(scope, send, found)
        return None

    # ---- administrative routes -------------------------------------------------------------------------------

    async def _health(self, path: str, send: Send) -> None:
        hub = self.hub
        if path == "/healthz":
            await reply(send, 200, json.dumps({"status": "ok", "uptime_s": hub.health()["uptime_s"]}).encode())
        else:
            ready, servers = hub.readiness()
            body = {"ready": ready, "servers": servers, **({"draining": True} if hub.draining else {})}
            await reply(send, 200 if ready else 503, json.dumps(body).encode())

    async def _admitted(self, scope: Scope, send: Send, *groups: str) -> bool:
        """Whether an administrative request may go on (answered if not): with `auth:`, only identities in one of
        `groups`, wherever they connect from (behind a reverse proxy every peer is the proxy); without, loopback
        only."""
        if self.hub.auth_config is None:
            if (scope.get("client") or ("", 0))[0] in ("127.0.0.1", "::1"):
                return True
            await reply(send, 403, b'{"error":"accepted from loopback only (or configure auth:)"}')
            return False
        identity = await self._caller(scope, headers_of(scope), send)
        if identity is None:
            return False
        if identity.in_any(set(groups)):
            return True
        await insufficient_scope(send, groups)
        return False

    async def _metrics(self, scope: Scope, send: Send) -> None:
        auth = self.hub.auth_config
        if auth is not None and not await self._admitted(scope, send, auth.metrics_group, auth.admin_group):
            return
        assert self.hub.metrics is not None
        body, content_type = self.hub.metrics.render()
        await reply(send, 200, body, [(b"content-type", content_type.encode())])

    async def _reload(self, scope: Scope, send: Send) -> None:
        auth = self.hub.auth_config
        if scope["method"] != "POST":
            await reply(send, 405, b'{"error":"POST /reload"}', [*JSON, (b"allow", b"POST")])
        elif await self._admitted(scope, send, auth.admin_group if auth else ""):
            summary = await self.hub.reload_from_disk("POST /reload")
            if summary is None:
                await reply(send, 422, b'{"error":"the new configuration was rejected; see the hub\'s log"}')
            else:
                await reply(send, 200, json.dumps(summary).encode())

    # ---- /mcp ------------------------------------------------------------------------------------------------

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        if await self.checks.refused(scope, receive, send):
            return
        headers = headers_of(scope)
        identity = await self._caller(scope, headers, send)
        if identity is None:
            return
        if method in ("GET", "DELETE") and self.hub.stateless:
            why = (
                "this hub serves statelessly (--stateless): there are no sessions, so no stream of the hub's own "
                "messages (list_changed, log messages outside a request) and nothing to end"
            )
            await error(send, 405, f"Method Not Allowed: {why}", extra=[(b"allow", b"POST")])
        elif method == "POST":
            await self._post(scope, headers, identity, receive, send)
        elif method == "GET":
            await self._get(headers, identity, receive, send)
        elif method == "DELETE":
            session = await self._session(headers, identity, send)
            if session is not None:
                self.sessions.close(session.id, "ended by the host (DELETE)")
                await reply(send, 200, b"")
        else:
            await error(send, 405, "Method Not Allowed", extra=[(b"allow", b"GET, POST, DELETE")])

    async def _session(
        self, headers: dict[str, str], identity: Identity, send: Send, about: RequestId | None = None
    ) -> HttpSession | None:
        """The request's session, if it is one of this caller's (`Sessions.get`); else None, answered 404 (closed or
        expired, or opened on another replica, named)."""
        session_id = headers.get("mcp-session-id", "")
        session = self.sessions.get(session_id, identity)
        if session is not None:
            return session
        why = "Session not found"
        owner, dot, _ = session_id.partition(".")
        if dot and owner and owner != self.hub.replica:
            why += (
                f": it was opened on replica {owner[:63]!r} and this is {self.hub.replica!r}; the load balancer must "
                "send a session's requests to the replica that opened it (docs/deploy.md). Initialize a new session"
            )
        await error(send, 404, why, about)
        return None

    async def _post(
        self, scope: Scope, headers: dict[str, str], identity: Identity, receive: Receive, send: Send
    ) -> None:
        limit = self.hub.settings.max_request_bytes
        body = await read_body(receive, limit, self.hub.settings.http.request_timeout)
        if body.problem == "too_large":
            message = f"the request body is over the hub's limit of {limit} bytes (max_request_bytes)"
            await error(send, 413, message, leading_id(body.head))
        elif body.problem == "late":
            await error(send, 408, "the request body did not arrive in time")
        if body.data is None:
            return
        parsed = parse(body.data)
        if isinstance(parsed, list | Invalid):
            await self._unusable(parsed, headers, identity, send)
            return
        version = headers.get("mcp-protocol-version")
        session_id = headers.get("mcp-session-id")
        if (version is not None and version not in revisions.HANDSHAKE_VERSIONS) or (
            session_id is None
            and isinstance(parsed, Request)
            and parsed.method != "initialize"
            and revisions.has_envelope(parsed.params)
        ):
            await self._modern(scope, parsed, headers, identity, receive, send)
        elif not all(accepts(headers.get("accept", ""))):
            needed = "Not Acceptable: Client must accept both application/json and text/event-stream"
            await error(send, 406, needed, request_id(parsed))
        elif self.hub.stateless:
            await self._stateless(parsed, headers, identity, receive, send)
        elif session_id is None:
            await self._initialize(scope, parsed, identity, send)
        else:
            session = await self._session(headers, identity, send, request_id(parsed))
            if session is not None:
                await self._in_session(session, parsed, receive, send)

    async def _in_session(self, session: HttpSession, message: Message, receive: Receive, send: Send) -> None:
        if not isinstance(message, Request):
            session.touch(used=False)
            session.host.handle(message, NOWHERE)
            await reply(send, 202, b"", [(b"mcp-session-id", session.id.encode())])
            return
        session.touch()
        session.in_flight += 1
        try:
            stream = PostStream(message.id)
            session.host.handle(message, stream)
            await respond(stream, receive, send, self.checks.status, session_id=session.id)
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
                for i in map(request_id, parsed)
                if i is not None
            ]
            await reply(send, 400, b"[" + b",".join(a.rstrip(b"\n") for a in answers) + b"]")
            return
        if parsed.response:
            answered = self.sessions.get(headers.get("mcp-session-id", ""), identity)
            if answered is not None:
                answered.host.handle(parsed, NOWHERE)
        await error(send, 400, parsed.reason, request_id(parsed), code=parsed.code)

    async def _stateless(
        self, message: Message, headers: dict[str, str], identity: Identity, receive: Receive, send: Send
    ) -> None:
        """`--stateless`: a handshake-era POST served by a host session that lives for that one request (no
        Mcp-Session-Id is issued or needed), so that any replica can serve it. The host is taken to have declared
        no capabilities: a child's sampling, elicitation or roots request gets a clear refusal, and nothing reaches
        the host outside the answer to its own request (docs/deploy.md)."""
        if not isinstance(message, Request):  # initialized, a cancellation, an answer: nothing to attach them to
            await reply(send, 202, b"")
            return
        label = f"{self.hub.replica}.stateless-{next(self._stateless_labels)}"
        host = HostSession(self.hub, label, None, era="handshake", identity=identity)
        try:
            if message.method != "initialize":
                version = headers.get("mcp-protocol-version") or STATELESS_DEFAULT_VERSION
                params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "stateless"}}
                host.handle(Request(0, "initialize", params, b""), NOWHERE)
            stream = PostStream(message.id)
            host.handle(message, stream)
            await respond(stream, receive, send, self.checks.status, handshake=True)
        finally:
            host.close()

    async def _initialize(self, scope: Scope, message: Message, identity: Identity, send: Send) -> None:
        if not isinstance(message, Request) or message.method != "initialize":
            await error(send, 400, "Bad Request: Missing session ID (send initialize first)", request_id(message))
            return
        if self.hub.draining:
            await error(send, 503, "The hub is shutting down; connect again (to another replica)", message.id)
            return
        session = self.sessions.open((scope.get("client") or ("", 0))[0], identity)
        if session is None:
            full = "Too many open sessions: the hub's session limit is reached (hub.http in servers.yaml)"
            await error(send, 503, full, message.id)
            return
        stream = PostStream()
        session.host.handle(message, stream)
        headers = [*JSON, (b"mcp-session-id", session.id.encode())]
        if session.host.version is None:  # refused: no session comes of it
            self.sessions.close(session.id, "initialize refused")
            headers = JSON
        await reply(send, 200, (stream.answer or b"").rstrip(b"\n"), headers)

    async def _modern(
        self, scope: Scope, message: Message, headers: dict[str, str], identity: Identity, receive: Receive, send: Send
    ) -> None:
        if isinstance(message, Notification):  # the 2026-07-28 wire has none from the client: acknowledged, dropped
            if headers.get("mcp-protocol-version") not in revisions.MODERN_VERSIONS:
                await error(send, 400, "Unsupported protocol version", code=UNSUPPORTED_PROTOCOL_VERSION)
            else:
                await reply(send, 202, b"")
            return
        if not isinstance(message, Request):
            await error(send, 400, "Body must be a single JSON-RPC request or notification object")
            return
        listen = message.method == "subscriptions/listen"
        has_json, has_sse = accepts(headers.get("accept", ""))
        if not has_json or (listen and not has_sse):
            sse = " and text/event-stream" if listen else ""
            await error(send, 406, f"Not Acceptable: Client must accept application/json{sse}", message.id)
            return
        raw = [k for k, _ in scope["headers"]]
        mismatch = self.checks.header_mismatch(raw, message, headers, self.hub.namespace.tools)
        if mismatch is not None:
            await error(send, 400, mismatch, message.id, code=HEADER_MISMATCH)
            return
        host = HostSession(self.hub, f"http-{id(message):x}", None, era="modern", identity=identity)
        stream = PostStream()
        host.handle(message, stream)

        def cancel() -> None:  # the host closed the request
            params = {"requestId": message.id, "reason": "the host closed the request"}
            host.handle(Notification("notifications/cancelled", params), NOWHERE)

        await respond(stream, receive, send, self.checks.status, cancel=cancel)

    async def _get(self, headers: dict[str, str], identity: Identity, receive: Receive, send: Send) -> None:
        """A session's own stream."""
        if not accepts(headers.get("accept", ""))[1]:
            await error(send, 406, "Not Acceptable: Client must accept text/event-stream")
        elif "mcp-session-id" not in headers:
            await error(send, 400, "Bad Request: Missing session ID")
        elif (session := await self._session(headers, identity, send)) is not None:
            stream = session.open_standalone()
            if stream is None:
                await error(send, 409, "Conflict: Only one SSE stream is allowed per session")
            else:
                await stream_standalone(stream, session.id, receive, send)
