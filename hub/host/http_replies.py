"""How the HTTP front reads a request's body (bounded in size and in time, for every endpoint that takes one) and
writes a response: JSON when the answer is all there is, else an SSE stream of every message about the request and
then its answer, kept alive while quiet; a session's own GET stream; and JSON-RPC errors. A client that disconnects
ends the response; over 2026-07-28 it also cancels the request.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import structlog
from starlette.types import Receive, Scope, Send

from hub.host.http_sessions import StandaloneStream
from hub.platform.pipes import EDGE
from hub.protocol.jsonrpc import (
    INVALID_REQUEST,
    REQUEST_CANCELLED,
    Invalid,
    Message,
    Request,
    Response,
    error_line,
    parse,
)

# Once an SSE response has started, a comment line this often keeps proxies from closing a quiet stream; a request
# still silent after this long commits to SSE for the same reason.
KEEPALIVE = 15.0
SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache, no-transform")]
JSON = [(b"content-type", b"application/json")]
POST_BACKLOG = 1000

_log = structlog.get_logger("hub.http")


@dataclass(frozen=True)
class Body:
    """What arrived: the whole body (`data`), or why not, with the first bytes seen (for an answer's id)."""

    data: bytes | None
    problem: Literal["none", "left", "too_large", "late"] = "none"
    head: bytes = b""


async def read_body(receive: Receive, limit: int, seconds: float) -> Body:
    """The body, if it is at most `limit` bytes and arrives within `seconds`; reading stops at the first excess."""
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(seconds):
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return Body(None, "left")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return Body(None, "too_large", (chunks[0] if chunks else chunk)[:EDGE])
            chunks.append(chunk)
            if not message.get("more_body", False):
                return Body(b"".join(chunks))
    return Body(None, "late")


class PostStream:
    """One POST's response: the messages about its request, then the answer (`hub.host.received.Stream`).

    What comes before the answer waits here while the client is slow to read; past POST_BACKLOG messages, more are
    dropped (logged), so that a child that floods a call cannot grow the hub while its host does not read.
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


class _Nowhere:
    """The stream of a message that gets no answer on its own POST (a notification, a host's answer)."""

    def send(self, line: bytes) -> None:
        pass

    def end(self, line: bytes | None) -> None:
        pass


NOWHERE = _Nowhere()


def request_id(message: Message) -> Any:
    """The id an error about `message` goes under: a request's (or a malformed one's), never an answer's."""
    if isinstance(message, Request) or (isinstance(message, Invalid) and not message.response):
        return message.id
    return None


def headers_of(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}


def accepts(value: str) -> tuple[bool, bool]:
    """(JSON, SSE) acceptable, wildcards included (RFC 9110)."""
    kinds = {part.split(";")[0].strip().lower() for part in value.split(",")}
    anything = "*/*" in kinds
    return (
        anything or bool(kinds & {"application/json", "application/*"}),
        anything or bool(kinds & {"text/event-stream", "text/*"}),
    )


def _sse(line: bytes) -> bytes:
    return b"event: message\r\ndata: " + line.rstrip(b"\n") + b"\r\n\r\n"


async def reply(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [*(headers or JSON)]})
    await send({"type": "http.response.body", "body": body})


async def error(
    send: Send,
    status: int,
    message: str,
    about: Any = None,
    extra: list[tuple[bytes, bytes]] | None = None,
    code: int = INVALID_REQUEST,
) -> None:
    """A JSON-RPC error as the whole response; `about` is the id of the request it answers, if any."""
    await reply(send, status, error_line(about, code, message).rstrip(b"\n"), [*JSON, *(extra or [])])


async def insufficient_scope(send: Send, groups: tuple[str, ...], headers: list[tuple[bytes, bytes]] = JSON) -> None:
    """403 (RFC 6750) for an identity that is a member of none of `groups`."""
    needed = " or ".join(repr(g) for g in groups)
    body = json.dumps({"error": "insufficient_scope", "error_description": f"needs a member of {needed}"})
    challenge = f'Bearer error="insufficient_scope", error_description="needs a member of {needed}"'
    await reply(send, 403, body.encode(), [*headers, (b"www-authenticate", challenge.encode())])


async def respond(
    stream: PostStream,
    receive: Receive,
    send: Send,
    status_of: Callable[[Any], int],
    session_id: str | None = None,
    cancel: Callable[[], None] | None = None,
    handshake: bool = False,
) -> None:
    """The request's answer as JSON when nothing comes before it; else an SSE stream of all its messages.

    Over 2026-07-28 (no `session_id`, not `handshake`) a client that closes the request calls `cancel`, and an
    error's HTTP status is `status_of` its code. A handshake-era request without a session (`handshake`:
    --stateless) is answered as in a session: status 200, a cancelled answer.
    """
    handshake = handshake or session_id is not None
    extra = [(b"mcp-session-id", session_id.encode())] if session_id is not None else []
    cancelled = error_line(stream.request_id, REQUEST_CANCELLED, "Request cancelled") if handshake else None
    await _wait(stream)
    answer = stream.answer or cancelled  # the handshake era's stream ends with an answer, "cancelled" (the SDK's)
    if stream.events or not stream.ended:
        await _sse_response(stream, receive, send, extra, cancel, cancelled)
    elif answer is None:  # 2026-07-28: the host closed the request; nothing is read any more
        await reply(send, 204, b"", extra)
    else:
        status = 200 if handshake else _status(answer, status_of)
        await reply(send, status, answer.rstrip(b"\n"), [*JSON, *extra])


async def stream_standalone(stream: StandaloneStream, session_id: str, receive: Receive, send: Send) -> None:
    """A session's own GET stream, until it closes or the client leaves: what belongs to no request."""
    try:
        await _sse_response(stream, receive, send, [(b"mcp-session-id", session_id.encode())], None, None)
    finally:
        stream.close()


async def _wait(stream: PostStream | StandaloneStream) -> None:
    """Until the stream has something to send, or KEEPALIVE has passed."""
    with anyio.move_on_after(KEEPALIVE):
        while not stream.ended and not stream.events:
            stream.wake = anyio.Event()
            await stream.wake.wait()


async def _sse_response(
    stream: PostStream | StandaloneStream,
    receive: Receive,
    send: Send,
    extra: list[tuple[bytes, bytes]],
    cancel: Callable[[], None] | None,
    cancelled: bytes | None,
) -> None:
    """An SSE response: each message as it comes, a keep-alive comment when there is none for long, until the
    stream ends (with its answer, else `cancelled` if given) or the client leaves (then `cancel`, if given)."""
    await send({"type": "http.response.start", "status": 200, "headers": [*SSE, *extra]})
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_disconnect, receive, tg.cancel_scope, cancel)
        with suppress(OSError):  # the client is gone
            while True:
                events = [_sse(line) for line in stream.events]
                stream.events.clear()
                answer = stream.answer or cancelled
                if stream.ended and answer is not None:
                    events.append(_sse(answer))
                body = b"".join(events) or b": keepalive\r\n\r\n"
                await send({"type": "http.response.body", "body": body, "more_body": not stream.ended})
                if stream.ended:
                    break
                await _wait(stream)
        tg.cancel_scope.cancel()


async def watch_disconnect(receive: Receive, scope: anyio.CancelScope, cancel: Callable[[], None] | None) -> None:
    """Until the client disconnects; then `cancel` (if given) and the response's `scope` end."""
    while (await receive())["type"] != "http.disconnect":
        pass
    if cancel is not None:
        cancel()
    scope.cancel()


def _status(answer: bytes, status_of: Callable[[Any], int]) -> int:
    """A 2026-07-28 error's HTTP status (the SDK's table); 200 for a result."""
    message = parse(answer) if b'"error"' in answer[:200] else None
    if isinstance(message, Response) and message.error is not None:
        return status_of(message.error.get("code"))
    return 200
