"""Requests between a host and the hub, each with its `Stream` (where the messages about one host request go: the
session's own channel, stdio's wire or an HTTP session's GET stream, or the response of the request it comes during).

- `Received`: one request of a host's until its one answer (what the relay gets); `Listen`: a 2026-07-28 host's
  listen stream. Their session is seen through `RequestOrigin`, so that this module does not import the session's.
- `HostAsks`: requests the hub sends a host (a child's sampling, elicitation or roots request, a confirmation
  question), each waiting, bounded, for the host's answer.
"""

from __future__ import annotations

from typing import Any, Protocol

import anyio

from hub.host.port import HubPort
from hub.protocol import revisions
from hub.protocol.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    REQUEST_TIMEOUT,
    EncodeError,
    Request,
    RequestId,
    Response,
    error_line,
    is_id,
    request_line,
    result_line,
)
from hub.relay import ports
from hub.relay.ports import AskFailed

LOG_RANK = {level: rank for rank, level in enumerate(revisions.LOG_LEVELS)}
# The list_changed notifications a listen stream may ask for, by the key that asks for each.
LIST_CHANGED = {
    f"{kind}ListChanged": f"notifications/{kind}/list_changed" for kind in ("tools", "prompts", "resources")
}


class Stream(Protocol):
    """Where the messages about one request go: the stdio wire, or an HTTP request's response."""

    def send(self, line: bytes) -> None:
        """A message before the answer (a notification, a request to the host)."""

    def end(self, line: bytes | None) -> None:
        """The answer (None: there is none, the request was cancelled); nothing is sent after it."""


def usable(stream: Stream | None) -> bool:
    """Whether a request can be sent on `stream`: it exists and is not closed."""
    return stream is not None and not getattr(stream, "closed", False)


class _Answer:
    def __init__(self) -> None:
        self.done = anyio.Event()
        self.response: Response | None = None
        self.why: str | None = None

    def set(self, response: Response | None, why: str | None = None) -> None:
        if not self.done.is_set():
            self.response, self.why = response, why
            self.done.set()


class HostAsks:
    """One session's requests to its host, by id, until each is answered, fails or times out."""

    def __init__(self) -> None:
        self._ids = 0
        self._waiting: dict[RequestId, _Answer] = {}

    async def send(self, stream: Stream, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        """Send the host a request on `stream` and wait (bounded) for its answer.

        Raises:
            AskFailed: the host answered with an error, did not answer in time, or the session ended first.
        """
        try:
            line = request_line(self._ids + 1, method, params)
        except EncodeError as exc:  # what a child asks for, nested too deeply or with a number out of range
            message = f"hub: the {method} request cannot be relayed: {exc}"
            raise AskFailed({"code": INVALID_PARAMS, "message": message}) from None
        self._ids += 1
        ask_id = self._ids
        answer = _Answer()
        self._waiting[ask_id] = answer
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
            self._waiting.pop(ask_id, None)
        response = answer.response
        if response is None:
            why = answer.why or f"the host did not answer {method} within {limit_s:g}s"
            raise AskFailed(
                {"code": REQUEST_TIMEOUT if answer.why is None else INVALID_REQUEST, "message": f"hub: {why}"}
            )
        if response.error is not None:
            raise AskFailed(response.error)
        return response.result or {}

    def answered(self, response: Response) -> None:
        """The host's answer to one of the requests (an answer to none is dropped)."""
        answer = self._waiting.pop(response.id, None)
        if answer is not None:
            answer.set(response)

    def refused(self, ask_id: RequestId | None, reason: str) -> bool:
        """The host's answer to a request was unusable: that request fails. False if it answers none."""
        answer = self._waiting.pop(ask_id, None) if ask_id is not None else None
        if answer is None:
            return False
        answer.set(None, f"the host's answer was invalid ({reason})")
        return True

    def fail(self, why: str) -> None:
        """Every request waiting fails with `why` (the session ended)."""
        for answer in self._waiting.values():
            answer.set(None, why)


class RequestOrigin(ports.SessionPort, Protocol):
    """The host session a request came on, as its requests and listen streams use it."""

    hub: HubPort
    capabilities: dict[str, Any]  # the client capabilities the host declared at initialize

    def notification_line(self, method: str, params: dict[str, Any]) -> bytes | None:
        """A notification's line; None when it cannot be written (logged)."""

    async def ask_on(self, stream: Stream, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        """Send the host a request on `stream` and wait (bounded) for its answer."""


class Received:
    """One request of a host's, until its one answer (`hub.relay.ports.HostRequest`)."""

    __slots__ = ("answered", "envelope", "request", "session", "stream", "version")

    def __init__(
        self,
        session: RequestOrigin,
        request: Request,
        version: str,
        stream: Stream,
        envelope: revisions.Envelope | None,
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
        return self.client_capabilities().get(capability) is not None

    def client_capabilities(self) -> dict[str, Any]:
        return self.envelope.capabilities if self.envelope is not None else self.session.capabilities

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

    def __init__(self, session: RequestOrigin, received: Received) -> None:
        self.session = session
        self.identity = session.identity
        self.received = received
        notifications = received.params.get("notifications")
        wanted = notifications if isinstance(notifications, dict) else {}
        self.honored = {key: True for key in LIST_CHANGED if wanted.get(key) is True}
        uris = wanted.get("resourceSubscriptions")
        view = session.hub.view(session.identity)  # only what its identity may read, as resources/subscribe
        asked = (u for u in uris if isinstance(u, str)) if isinstance(uris, list) else ()
        self.uris = frozenset(u for u in asked if view.allows(u, writes=False))
        if self.uris:
            self.honored["resourceSubscriptions"] = sorted(self.uris)  # type: ignore[assignment]
        self.meta = {revisions.SUBSCRIPTION_ID_KEY: received.id}

    def start(self) -> None:
        self.received.notify(
            "notifications/subscriptions/acknowledged", {"notifications": self.honored, "_meta": self.meta}
        )
        self.session.hub.hosts.listen(self)

    def wants(self, method: str, uri: str | None) -> bool:
        if method == "notifications/resources/updated":
            return uri in self.uris
        return any(LIST_CHANGED[key] == method for key in self.honored if key in LIST_CHANGED)

    def send(self, method: str, params: dict[str, Any]) -> None:
        if self.received.answered:
            self.stop()
            return
        self.received.notify(method, {**params, "_meta": self.meta})

    def stop(self, final: bool = False) -> None:
        """The stream ends: by the host (no answer) or, with `final`, by the hub (a last result)."""
        self.session.hub.hosts.unlisten(self)
        if final:
            self.received.respond(revisions.stamp({"_meta": self.meta}, "subscriptions/listen"))
        else:
            self.received.drop()
