"""What the relay needs of the host side, whatever the transport: a host session, and one request of it (its
notifications, requests and answer go back on the stream the transport gives it). `hub.host` implements both."""

from __future__ import annotations

from typing import Any, Protocol

from hub.access.identity import Identity
from hub.protocol.jsonrpc import RequestId


class AskFailed(Exception):
    """A request to the host failed: an error answer, no answer in time, or no way to ask. `error` is the JSON-RPC
    error the child gets for its own request."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message"))
        self.error = error


class SessionPort(Protocol):
    """One host connection: a stdio host, an HTTP session, or a 2026-07-28 request of its own."""

    @property
    def label(self) -> str: ...  # how the call log names it
    @property
    def identity(self) -> Identity: ...  # who it acts for: what policy decides on, what the call log names
    @property
    def modern(self) -> bool: ...  # a 2026-07-28 host: no requests to it, no notifications outside a listen stream
    def declared(self, capability: str) -> bool: ...  # a client capability it declared (sampling, elicitation, roots)
    def log(self, params: dict[str, Any]) -> None: ...  # a child's log message for it, outside any request

    async def ask(self, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        """A request to the host outside any request of its own (a child's roots/list, say); AskFailed if the host
        answered with an error, did not answer in time, or cannot be asked."""


class HostRequest(Protocol):
    """One request of a host's, from its arrival to its one answer."""

    version: str  # the protocol revision of this request

    @property
    def id(self) -> RequestId: ...
    @property
    def method(self) -> str: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def session(self) -> SessionPort: ...
    @property
    def progress_token(self) -> RequestId | None: ...
    @property
    def log_level(self) -> str | None: ...  # a 2026-07-28 request's own log opt-in
    def declared(self, capability: str) -> bool: ...
    def client_capabilities(self) -> dict[str, Any]: ...  # its session's, or a 2026-07-28 request's own envelope
    def respond(self, result: dict[str, Any] | bytes) -> None: ...  # the answer, or its bytes; once: later ones dropped
    def fail(self, error: dict[str, Any]) -> None: ...  # the answer: a JSON-RPC error
    def drop(self) -> None: ...  # no answer: the host cancelled the request (over HTTP its stream is closed)
    def notify(self, method: str, params: dict[str, Any]) -> None: ...  # about this request (progress), on its stream
    def log(self, params: dict[str, Any]) -> None: ...  # a child's log message during it, if the host wants it

    async def ask(self, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        """A request to the host on this request's stream (sampling, elicitation, roots); AskFailed as
        `SessionPort.ask`, or if the request was answered first."""


class StandIn:
    """A stand-in for a host request (`hub_call_tool`'s inner call, a task's creation): the real request in
    everything a subclass does not override, each member spelled out so that the type checker sees them all."""

    def __init__(self, real: HostRequest) -> None:
        self.real = real
        self.params: dict[str, Any] = real.params
        self.version = real.version

    @property
    def id(self) -> RequestId:
        return self.real.id

    @property
    def method(self) -> str:
        return self.real.method

    @property
    def session(self) -> SessionPort:
        return self.real.session

    @property
    def progress_token(self) -> RequestId | None:
        return self.real.progress_token

    @property
    def log_level(self) -> str | None:
        return self.real.log_level

    def declared(self, capability: str) -> bool:
        return self.real.declared(capability)

    def client_capabilities(self) -> dict[str, Any]:
        return self.real.client_capabilities()

    def respond(self, result: dict[str, Any] | bytes) -> None:
        self.real.respond(result)

    def fail(self, error: dict[str, Any]) -> None:
        self.real.fail(error)

    def drop(self) -> None:
        self.real.drop()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.real.notify(method, params)

    def log(self, params: dict[str, Any]) -> None:
        self.real.log(params)

    async def ask(self, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        return await self.real.ask(method, params, limit_s)
