"""One request of a host's until its one answer (`Received`, what the relay gets), and a 2026-07-28 host's listen
stream (`Listen`). Its session is seen through `RequestOrigin`, so that this module does not import the session's.
"""

from __future__ import annotations

from typing import Any, Protocol

from hub.host.asks import Stream
from hub.host.port import HubPort
from hub.protocol import revisions
from hub.protocol.jsonrpc import INVALID_REQUEST, Request, RequestId, error_line, is_id, result_line
from hub.relay import ports
from hub.relay.ports import AskFailed

LOG_RANK = {level: rank for rank, level in enumerate(revisions.LOG_LEVELS)}
# The list_changed notifications a listen stream may ask for, by the key that asks for each.
LIST_CHANGED = {
    f"{kind}ListChanged": f"notifications/{kind}/list_changed" for kind in ("tools", "prompts", "resources")
}


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
