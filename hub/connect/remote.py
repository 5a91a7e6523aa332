"""hub connect's side toward the hub: one Streamable HTTP session, made again when the hub has forgotten it.

Each host message is POSTed as written, with the session's headers and the bearer token; a request's answer comes
back as JSON or as an SSE stream of every message about it, each handed on as it comes. Once the host's session is
initialized, a GET holds the session's own stream open (re-opened with backoff, and `Last-Event-ID`, when it drops).

A POST that cannot connect is tried again for up to RECONNECT_LIMIT (it never reached the hub). A 404 for the session
means the hub forgot it: a new one is opened with the host's own `initialize` params, the host's log level and
subscriptions are set again, the host is told its lists may have changed, and the request is sent again. A request
whose connection dropped after it was sent is not (it may have been carried out): the host gets an error.

2026-07-28 requests carry their own envelope and need no session: each is POSTed on its own with that revision's
routing headers (`Mcp-Param-*` as the last `tools/list` showed the tools); closing its response cancels it.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import httpx2
import structlog

from hub.connect.token import Token
from hub.protocol import revisions
from hub.protocol.headers import ToolHeaders, routing_headers
from hub.protocol.jsonrpc import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    Request,
    RequestId,
    Response,
    error_line,
    notification_line,
    parse,
    quote,
    request_line,
)

RECONNECT_LIMIT = 30.0  # a POST that cannot connect (a hub restarting) is tried again this long
RETRY_FIRST = 0.25  # waits between attempts: doubled each time up to the cap (jittered)
RETRY_CAP = 2.0
LISTEN_CAP = 5.0  # the cap for re-opening the session's own stream, which goes on as long as hub connect runs
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 300.0  # a response silent this long is dead (the hub sends a keep-alive every 15 s on a stream)
# Sending a request or waiting for a free connection; and the whole exchange of what the hub answers at once.
SEND_TIMEOUT = 30.0
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # the largest JSON body or SSE event taken from the hub
DELETE_LIMIT = 5.0  # the session's DELETE when the host leaves

_POST_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

Deliver = Callable[[bytes], None]
"""Hands one message from the hub (a JSON-RPC line, without its newline) on to the host."""

_log = structlog.get_logger("hub.connect")


class RemoteError(Exception):
    """A message could not be carried to the hub, or its answer back; the text is for the host and the log."""

    code = CONNECTION_CLOSED

    def line(self, request_id: RequestId) -> bytes:
        """The error the host gets for its request."""
        return error_line(request_id, self.code, str(self))


class Unreachable(RemoteError):
    """No connection to the hub within RECONNECT_LIMIT: the request never reached it."""


class Dropped(RemoteError):
    """The connection ended after the request was sent and before its answer: it may have been carried out."""


class Refused(RemoteError):
    """The hub refused the token (401) or the identity it stands for (403)."""

    code = INVALID_REQUEST


def backoff(first: float, cap: float) -> Iterator[float]:
    """Waits between attempts: `first`, doubling up to `cap`, each cut by up to a quarter at random (a team's
    `hub connect` processes do not all come back to a restarted hub at the same instant)."""
    delay = first
    while True:
        yield delay * random.uniform(0.75, 1.0)
        delay = min(cap, delay * 2)


def new_client(token: Token) -> httpx2.AsyncClient:
    """The HTTP client of one `hub connect`; the token rides on every request (and is in no log line)."""
    timeout = httpx2.Timeout(SEND_TIMEOUT, connect=CONNECT_TIMEOUT, read=READ_TIMEOUT)
    return httpx2.AsyncClient(headers=token.header(), timeout=timeout, follow_redirects=False)


async def _body(response: httpx2.Response) -> bytes:
    """The response's whole body, bounded.

    Raises:
        Dropped: it is over MAX_MESSAGE_BYTES.
    """
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > MAX_MESSAGE_BYTES:
            raise Dropped(f"the hub's response is over hub connect's limit of {MAX_MESSAGE_BYTES} bytes")
    return bytes(body)


def _content_type(response: httpx2.Response) -> str:
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


def _reason(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


def _error_of(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error an HTTP error response carries, if it carries one (its id may be null)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else None


def _said(body: bytes) -> str:
    """What an HTTP error response says: its JSON-RPC error's message, else its text; cut for a message."""
    error = _error_of(body)
    return (str(error.get("message", "")) if error is not None else body.decode("utf-8", "replace"))[:200]


def same_id(found: RequestId | None, wanted: RequestId) -> bool:
    """Whether `found` is the id `wanted` (1 is neither "1" nor 1.0)."""
    return type(found) is type(wanted) and found == wanted


def _discard(line: bytes) -> None:
    """Where the answers to hub connect's own requests go."""


class Remote:
    """One host's session with the hub at `url` (see the module's docstring). `renewed` is called with the hub's
    capabilities each time a new session replaced a forgotten one."""

    def __init__(
        self, url: str, token: Token, http: httpx2.AsyncClient, renewed: Callable[[dict[str, Any]], None]
    ) -> None:
        self.url = url
        self.token = token
        self.http = http
        self._renewed = renewed
        self.session_id: str | None = None
        self.version: str | None = None
        self.capabilities: dict[str, Any] = {}
        self._init_params: dict[str, Any] | None = None
        self._log_level: dict[str, Any] | None = None
        self._subscriptions: set[str] = set()
        self._lock = anyio.Lock()
        self._initialized = anyio.Event()  # the session's own stream may open
        self._renewals = 0
        self._renewal = anyio.Event()  # set (and replaced) each time a session is made
        self._down = False
        self._tool_headers = ToolHeaders()  # the x-mcp-header marks of the tools the hub last listed

    async def request(self, request: Request, deliver: Deliver, modern: bool) -> None:
        """Send the host's `request`; every message of its response goes to `deliver`, the answer last (an error
        status becomes an error answer under the request's id).

        Raises:
            RemoteError: the request could not be sent (`Unreachable`), its answer did not come back (`Dropped`), or
                the hub refused the token (`Refused`).
        """
        if request.method == "initialize":  # a new session; its params are kept for a renewal
            async with self._lock:
                if await self._open(request.raw, request.id, deliver):
                    self._init_params = request.params
            return
        self._remember(request)
        stale = self.session_id
        if modern and request.method == "tools/list":
            deliver = self._tool_headers.reading(deliver)
        elif modern and request.method == "tools/call" and not self._tool_headers.listed(request.params.get("name")):
            await self._list_tools(request.params.get("_meta"))
        headers = self._modern_headers(request) if modern else self._session_headers()
        async with self._post(request.raw, headers) as response:
            if response.status_code != 404 or stale is None:
                await self._answer(request.id, response, deliver)
                return
        await self.renew(stale)
        async with self._post(request.raw, self._session_headers()) as response:  # once more, on the new session
            await self._answer(request.id, response, deliver)

    async def post(self, line: bytes, initialized: bool) -> None:
        """POST a host's notification or answer (the hub says 202). `initialized`: it is the host's
        `notifications/initialized`, after which the session's own stream opens.

        An answer to a request of a session the hub has forgotten goes nowhere; the session is made again.

        Raises:
            RemoteError: it could not be delivered.
        """
        stale = self.session_id
        if await self._message(line) == 404 and stale is not None:
            await self.renew(stale)
        elif initialized:
            self._initialized.set()

    async def _message(self, line: bytes) -> int:
        """POST a notification or an answer; the status, if it is 2xx or 404.

        Raises:
            RemoteError: it could not be delivered, or the hub refused it.
        """
        async with self._post(line, self._session_headers(), prompt=True) as response:
            status = response.status_code
            body = await _body(response)
        if status in (401, 403):
            raise self._refused(status, body)
        if status >= 300 and status != 404:
            raise RemoteError(f"the hub answered HTTP {status}: {_said(body)}")
        return status

    def _remember(self, request: Request) -> None:
        """Keep what the host set on its session (log level, subscriptions), to set it again on a new one."""
        uri = request.params.get("uri")
        if request.method == "logging/setLevel":
            self._log_level = request.params
        elif request.method == "resources/subscribe" and isinstance(uri, str):
            self._subscriptions.add(uri)
        elif request.method == "resources/unsubscribe" and isinstance(uri, str):
            self._subscriptions.discard(uri)

    def _session_headers(self) -> dict[str, str]:
        """The session's id and revision, once there is a session."""
        headers = {"mcp-session-id": self.session_id, "mcp-protocol-version": self.version}
        return {name: value for name, value in headers.items() if value is not None}

    def _modern_headers(self, request: Request) -> dict[str, str]:
        """A 2026-07-28 request's headers: its revision, method, name and x-mcp-header arguments, as the hub checks
        them against the body."""
        meta = request.params.get("_meta")
        version = meta.get(revisions.PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
        tool = request.params.get("name")
        marked = self._tool_headers.known(tool) if request.method == "tools/call" and isinstance(tool, str) else None
        headers = routing_headers(request.method, request.params, marked)
        if isinstance(version, str):
            headers["mcp-protocol-version"] = version
        return headers

    async def _list_tools(self, meta: Any) -> None:
        """A 2026-07-28 host calls a tool the last listing did not have (or before any): the tools, listed again
        under its envelope, say which arguments go in `Mcp-Param-*` headers (if that fails, the call goes as it is)."""
        listing = Request("hub-connect-tools", "tools/list", {"_meta": meta} if isinstance(meta, dict) else {}, b"")
        with suppress(RemoteError):
            await self._own(listing, self._modern_headers(listing), self._tool_headers.reading(_discard))

    async def _own(self, request: Request, headers: dict[str, str], deliver: Deliver = _discard) -> None:
        """A request of hub connect's own, not the host's; its answer goes to `deliver` (by default, nowhere)."""
        body = request_line(request.id, request.method, request.params)
        async with self._post(body, headers, prompt=True) as response:
            await self._answer(request.id, response, deliver)

    @asynccontextmanager
    async def _post(self, body: bytes, headers: dict[str, str], prompt: bool = False) -> AsyncIterator[httpx2.Response]:
        """The hub's response to `body` (`headers`: its own, besides _POST_HEADERS), its body still to be read
        (`prompt`: within SEND_TIMEOUT, else as long as the response keeps coming). A connection refused (the hub
        restarting) is tried again with backoff; anything else that fails the exchange is `Dropped`.

        Raises:
            Unreachable: no connection within RECONNECT_LIMIT.
            Dropped: the connection failed once the request was on its way.
        """
        delays = backoff(RETRY_FIRST, RETRY_CAP)
        deadline = anyio.current_time() + RECONNECT_LIMIT
        headers = {**_POST_HEADERS, **headers}
        timeout = httpx2.Timeout(SEND_TIMEOUT, connect=CONNECT_TIMEOUT) if prompt else httpx2.USE_CLIENT_DEFAULT
        while True:
            try:
                request = self.http.build_request("POST", self.url, content=body, headers=headers, timeout=timeout)
                response = await self.http.send(request, stream=True)
                break
            except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
                delay = next(delays)
                if anyio.current_time() + delay > deadline:
                    raise Unreachable(
                        f"the hub at {self.url} cannot be reached ({_reason(exc)}; tried for {RECONNECT_LIMIT:.0f} s)"
                    ) from None
                self._unreachable(exc)
                await anyio.sleep(delay)
            except httpx2.TransportError as exc:
                raise self._dropped(exc) from None
        self._reachable()
        try:
            yield response
        except httpx2.TransportError as exc:  # reading the body: SSEError (an event over the limit) is one too
            raise self._dropped(exc) from None
        finally:
            await response.aclose()

    def _dropped(self, exc: Exception) -> Dropped:
        return Dropped(
            f"the connection to the hub at {self.url} was lost before the answer ({_reason(exc)}); "
            "the request may or may not have been carried out"
        )

    async def _answer(self, request_id: RequestId, response: httpx2.Response, deliver: Deliver) -> None:
        """Every message of a request's response to `deliver`; an error status as an error answer."""
        status, kind = response.status_code, _content_type(response)
        if status in (401, 403):
            raise self._refused(status, await _body(response))
        if status == 200 and kind == "text/event-stream":
            async for event in httpx2.EventSource(response, max_event_size=MAX_MESSAGE_BYTES):
                if event.data and event.event == "message":
                    deliver(event.data.encode())
            return
        body = await _body(response)
        if status == 200:
            deliver(body)
            return
        error = _error_of(body)
        if error is not None:  # the hub's own error about the request (400, 413, 503...), under the request's id
            code = error.get("code")
            message = str(error.get("message", ""))
            deliver(error_line(request_id, code if type(code) is int else INTERNAL_ERROR, message, error.get("data")))
            return
        said = f": {quote(body.decode('utf-8', 'replace'))}" if body else " and no answer"
        deliver(error_line(request_id, INTERNAL_ERROR, f"the hub at {self.url} answered HTTP {status}{said}"))

    def _refused(self, status: int, body: bytes) -> Refused:
        said = _said(body)
        _log.error("connect_token_refused", status=status, token_source=self.token.source, reason=said)
        why = (
            self.token.refused()
            if status == 401
            else f"the identity of the token from {self.token.source} is not allowed"
        )
        return Refused(f"the hub at {self.url} refused the request: {why} (HTTP {status}: {said})")

    def _unreachable(self, exc: Exception) -> None:
        if not self._down:
            self._down = True
            _log.warning("connect_hub_unreachable", url=self.url, error=_reason(exc))

    def _reachable(self) -> None:
        if self._down:
            self._down = False
            _log.info("connect_hub_reachable", url=self.url)

    async def _open(self, body: bytes, request_id: RequestId, deliver: Deliver) -> bool:
        """POST an `initialize`; the session's id, revision and capabilities from its answer. Whether it opened.

        The session in use stays until the new one is there: a request sent meanwhile on the old one gets its 404
        and waits for the new one (`renew`), rather than going without a session.
        """
        result: dict[str, Any] | None = None

        def watch(line: bytes) -> None:
            nonlocal result
            message = parse(line)
            if isinstance(message, Response) and same_id(message.id, request_id) and message.result is not None:
                result = message.result
            deliver(line)

        async with self._post(body, {}, prompt=True) as response:
            session_id = response.headers.get("mcp-session-id")
            await self._answer(request_id, response, watch)
        if result is None:
            return False
        version, capabilities = result.get("protocolVersion"), result.get("capabilities")
        self.session_id = session_id
        self.version = version if isinstance(version, str) else None
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        self._renewal.set()
        self._renewal = anyio.Event()
        _log.info("connect_session_opened", url=self.url, protocol_version=self.version)
        return True

    async def renew(self, stale: str | None) -> None:
        """A new session in place of `stale`, which the hub has forgotten (see the module's docstring). Nothing is
        done if another task renewed it already.

        Raises:
            RemoteError: the new session could not be made.
        """
        async with self._lock:
            if self.session_id != stale or self._init_params is None:
                return
            _log.info("connect_session_lost", url=self.url, renewals=self._renewals)
            self._renewals += 1
            own = f"hub-connect-{self._renewals}"
            if not await self._open(request_line(own, "initialize", self._init_params), own, _discard):
                raise RemoteError(f"the hub at {self.url} refused to open a new session (see hub connect's log)")
            await self._restore(own)
        _log.info("connect_session_renewed", url=self.url, renewals=self._renewals)
        self._renewed(self.capabilities)

    async def _restore(self, own: str) -> None:
        """Tell the new session what the host told the old one: initialized, its log level, its subscriptions."""
        await self._message(notification_line("notifications/initialized", None))
        self._initialized.set()
        restore = [("logging/setLevel", self._log_level)] if self._log_level is not None else []
        restore += [("resources/subscribe", {"uri": uri}) for uri in sorted(self._subscriptions)]
        for number, (method, params) in enumerate(restore):
            try:
                await self._own(Request(f"{own}-{number}", method, params, b""), self._session_headers())
            except RemoteError as exc:
                _log.warning("connect_session_restore_failed", method=method, error=str(exc))

    async def listen(self, deliver: Deliver) -> None:
        """The session's own stream, for as long as hub connect runs: opened once the host's session is
        initialized, re-opened with backoff whenever it ends; a 404 makes a new session."""
        await self._initialized.wait()
        delays = backoff(RETRY_FIRST, LISTEN_CAP)
        last: tuple[str | None, str | None] = (None, None)  # (session, the last event id it numbered)
        while True:
            session = self.session_id
            if last[0] != session:
                last = (session, None)
            outcome = await self._listen_once(last, deliver)
            if isinstance(outcome, str):  # events came: the next wait starts from the first again
                last = (session, outcome or last[1])
                delays = backoff(RETRY_FIRST, LISTEN_CAP)
            elif outcome == 404:
                try:
                    await self.renew(session)
                    continue
                except RemoteError as exc:
                    _log.warning("connect_stream_failed", url=self.url, error=str(exc))
            elif outcome in (401, 403, 405):  # refused (the POSTs tell the host), or no such stream: next session
                await self._renewal.wait()
                continue
            await anyio.sleep(next(delays))

    async def _listen_once(self, last: tuple[str | None, str | None], deliver: Deliver) -> str | int | None:
        """One GET of the session's stream until it ends: the last event id seen ('' if none) when events came;
        else the HTTP status that refused it, or None if it could not be opened."""
        headers = {"accept": "text/event-stream", **self._session_headers()}
        if last[1] is not None:
            headers["last-event-id"] = last[1]
        seen: str | None = None
        try:
            async with self.http.stream("GET", self.url, headers=headers) as response:
                self._reachable()
                if response.status_code != 200 or _content_type(response) != "text/event-stream":
                    await _body(response)
                    return response.status_code
                async for event in httpx2.EventSource(response, max_event_size=MAX_MESSAGE_BYTES):
                    seen = event.id or seen or ""
                    if event.data and event.event == "message":
                        deliver(event.data.encode())
        except (httpx2.ConnectError, httpx2.ConnectTimeout) as exc:
            self._unreachable(exc)
        except (httpx2.TransportError, RemoteError) as exc:
            _log.info("connect_stream_dropped", url=self.url, error=_reason(exc))
        return seen

    async def close(self) -> None:
        """End the session at the hub (DELETE), in bounded time, whatever cancels the caller."""
        if self.session_id is None:
            return
        headers = self._session_headers()
        self.session_id = None
        with anyio.move_on_after(DELETE_LIMIT, shield=True):
            try:
                response = await self.http.delete(self.url, headers=headers)
                _log.info("connect_session_closed", url=self.url, status=response.status_code)
            except httpx2.TransportError as exc:
                _log.info("connect_session_not_closed", url=self.url, error=_reason(exc))
