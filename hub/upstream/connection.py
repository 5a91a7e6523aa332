"""One connection to a child: the hub's JSON-RPC client session over a `Wire`, in either protocol era.

The hub's own rather than the SDK's client, so that a request and everything the child sends for it meet in one
object, the `Exchange` that sent it, with no task per request and no re-encoding of what is forwarded unchanged. A
request's id is also its progress token. A line that is not JSON-RPC is logged (throttled) and skipped; one that
answers a request badly, or is over the size limit, fails that request saying what was wrong.
"""

from __future__ import annotations

import re
import time
from typing import Any, Protocol

import anyio
import structlog

from hub.logs import Throttle
from hub.protocol import errors, extensions, jsonrpc
from hub.protocol.jsonrpc import Message, Notification, Request, Response
from hub.protocol.revisions import (
    CLIENT_INFO,
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE,
    MODERN_VERSIONS,
    envelope_meta,
    is_modern,
)
from hub.upstream.denials import SandboxWatch

_ID_AT_START = re.compile(rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d{1,19})\s*[,}]')
_ANSWER_AT_START = re.compile(
    rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d{1,19})\s*,\s*"(?:result|error)"'
)
_ID_AT_END = re.compile(rb'"id"\s*:\s*(-?\d{1,19})\s*\}\s*$')
NOISE_LOGS_PER_SECOND = 20  # lines that are not JSON-RPC logged at most, per child
# How long a request whose write found the wire broken waits for the connection's own end, and its reason.
BROKEN_WIRE_GRACE = 2.0
_log = structlog.get_logger("hub.child")


class Wire(Protocol):
    """Carries messages to a child; what the child sends comes back through `Connection.receive`."""

    def send(self, message: dict[str, Any], line: bytes) -> None:
        """`message` and its strict UTF-8 JSON (`line`, without a newline), already checked by the connection.
        Raises `hub.platform.pipes.Broken` if the child can no longer be written to."""

    def negotiated(self, version: str) -> None:
        """The protocol revision the handshake settled on (a URL child's requests carry it as a header)."""


class Exchange(Protocol):
    """One request the hub sent a child, told what becomes of it. Called from the wire's reader: never waits."""

    def answered(self, response: Response) -> None: ...

    def progress(self, params: dict[str, Any]) -> None: ...

    def failed(self, error: errors.HubError) -> None:
        """No answer will come: the connection ended, or the answer was unusable (too large, malformed)."""


class Events(Protocol):
    """What a connection reports that answers nothing the hub sent."""

    def notified(self, connection: Connection, notification: Notification) -> None: ...

    def asked(self, connection: Connection, request: Request) -> None:
        """A request of the child's (sampling, elicitation, roots); answered later with `connection.respond`."""

    def elicitations_required(self, connection: Connection, exchange: Exchange, data: Any) -> None:
        """`exchange`'s answer is error -32042 (URL elicitation required): the elicitations its `data` names will
        complete later (`notifications/elicitation/complete`), for whoever made that request."""


class Connection:
    """The hub's session with one child over one wire (a process's pipes, or an HTTP transport)."""

    def __init__(self, name: str, wire: Wire, events: Events, watch: SandboxWatch | None = None) -> None:
        self.name = name
        self.wire = wire
        self.events = events
        self.watch = watch  # a sandboxed child's: it reads each answer for a denial of its sandbox
        self.protocol_version: str | None = None
        self.capabilities: dict[str, Any] = {}
        self.server_info: dict[str, Any] = {}
        self.instructions: str | None = None
        # What the hub declares to the child on it (its handshake, a 2026-07-28 request's envelope): the relayed
        # requests, and the extensions of the host it belongs to (hub.protocol.extensions; set by `handshake`).
        self.client_capabilities: dict[str, Any] = extensions.client_capabilities(None)
        # The host requests now in flight on this connection, oldest first (a dict for its order and its O(1)
        # removal): a child's own request is attributed by them (hub/relay/attribution.py).
        self.inflight: dict[Any, None] = {}
        # The host session this connection belongs to (`sessions: per-host`), or None (the shared connection).
        self.owner: Any = None
        # The identity it was opened for (`sessions: per-identity`): what it hears goes to that identity's sessions.
        self.identity: Any = None
        self.last_active = time.monotonic()  # the last request sent on it (idle per-identity connections close)
        self.closed: str | None = None  # why, once the wire has ended
        self.done = anyio.Event()  # set when it has
        self._ids = 0
        self._pending: dict[int, Exchange] = {}
        self._noise = Throttle(NOISE_LOGS_PER_SECOND)  # lines that are not JSON-RPC
        self._faults = Throttle()  # faults of the hub's own

    def __repr__(self) -> str:
        return f"<Connection {self.name} {self.protocol_version} pending={len(self._pending)}>"

    @property
    def modern(self) -> bool:
        return is_modern(self.protocol_version)

    # ---- to the child ---------------------------------------------------------------------------------------

    def send(
        self,
        method: str,
        params: dict[str, Any],
        exchange: Exchange,
        *,
        progress: bool = False,
        log_level: str | None = None,
    ) -> int:
        """Send a request; `exchange` is told what becomes of it. Returns its id on this connection.

        Raises:
            errors.Unavailable: the connection has ended.
        """
        if self.closed is not None:
            raise errors.Unavailable(self.closed)
        self._ids += 1
        request_id = self._ids
        meta = params.get("_meta")
        stamped: dict[str, Any] | None = dict(meta) if type(meta) is dict else None
        if progress:
            stamped = {**(stamped or {}), "progressToken": request_id}
        if self.modern:
            stamped = {**(stamped or {}), **envelope_meta(log_level, self.client_capabilities)}
        if stamped is not None:
            params = {**params, "_meta": stamped}
        self._pending[request_id] = exchange
        self.last_active = time.monotonic()
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        except jsonrpc.LoneSurrogate as unwritable:  # the host's own input: refused, and nothing was written
            del self._pending[request_id]
            raise errors.BadRequest(
                f"invalid params: {unwritable}; nothing was sent to server '{self.name}'", {"field": unwritable.path}
            ) from None
        except Exception as exc:  # Broken, or a value that cannot be encoded: this request fails, not the hub
            del self._pending[request_id]
            raise errors.Unavailable(f"server '{self.name}': cannot send the request: {exc}") from None
        return request_id

    def _write(self, message: dict[str, Any]) -> None:
        """The one way anything reaches the child: strict UTF-8 JSON, or nothing (raises `jsonrpc.LoneSurrogate`,
        `jsonrpc.EncodeError`, `hub.platform.pipes.Broken`)."""
        self.wire.send(message, jsonrpc.encode_strict(message))

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification; nothing happens if the connection has ended."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._send_quietly(message, "child_notification_lost", method=method)

    def respond(
        self, request_id: jsonrpc.RequestId, result: dict[str, Any] | None = None, error: dict[str, Any] | None = None
    ) -> None:
        """Answer one of the child's own requests; nothing happens if the connection has ended."""
        if self.closed is not None:
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result if result is not None else {}
        try:
            self._write(message)
        except jsonrpc.LoneSurrogate as unwritable:  # the host's answer cannot be relayed: the child is told so
            refusal = {"code": jsonrpc.INTERNAL_ERROR, "message": f"the host's answer cannot be relayed: {unwritable}"}
            self._send_quietly({"jsonrpc": "2.0", "id": request_id, "error": refusal}, "child_answer_lost")
        except Exception as exc:
            _log.info("child_answer_lost", child=self.name, error=str(exc))

    def _send_quietly(self, message: dict[str, Any], lost: str, **fields: Any) -> None:
        if self.closed is None:
            try:
                self._write(message)
            except Exception as exc:
                _log.info(lost, child=self.name, error=str(exc), **fields)

    def cancel(self, request_id: int, reason: str) -> None:
        """Give up on a request: the child is told, and its answer, if one still comes, is dropped."""
        if self._pending.pop(request_id, None) is not None:
            # The host's reason may hold a lone surrogate: the child is still told, with it replaced.
            text = reason.encode("utf-8", "replace").decode()
            self.notify("notifications/cancelled", {"requestId": request_id, "reason": text})

    def forget(self, request_id: int) -> None:
        """Stop waiting for a request without telling the child (its answer is already in)."""
        self._pending.pop(request_id, None)

    # ---- from the child -------------------------------------------------------------------------------------

    def receive(self, line: bytes) -> None:
        message = jsonrpc.parse_answer(line)
        for item in message if isinstance(message, list) else (message,):
            self.handle(item, line)

    def handle(self, message: Message, line: bytes = b"") -> None:
        """One message from the child, already decoded. Never raises: a fault of the hub's own in handling it is
        logged, so that one line cannot stop the reader nor drop the lines after it."""
        try:
            self._handle(message, line)
        except Exception as exc:
            if self._faults.tick():
                _log.error(
                    "child_message_failed",
                    child=self.name,
                    kind=type(message).__name__,
                    error=f"{type(exc).__name__}: {exc}"[:200],
                    failed=self._faults.count,
                    exc_info=exc,
                )

    def _handle(self, message: Message, line: bytes) -> None:
        if isinstance(message, Response):
            exchange = self._pending.pop(message.id, None) if type(message.id) is int else None
            if exchange is not None:
                error = message.error
                if error is not None and error.get("code") == jsonrpc.URL_ELICITATION_REQUIRED:
                    self.events.elicitations_required(self, exchange, error.get("data"))
                if self.watch is not None:
                    self.watch.answer(message)
                exchange.answered(message)
        elif isinstance(message, Notification):
            if message.method == "notifications/progress":
                token = message.params.get("progressToken")
                exchange = self._pending.get(token) if type(token) is int else None
                if exchange is not None:
                    exchange.progress(message.params)
                return
            self.events.notified(self, message)
        elif isinstance(message, Request):
            if message.method == "ping":
                self.respond(message.id, {})
            else:
                self.events.asked(self, message)
        else:
            self._invalid(message, line)

    def _invalid(self, invalid: jsonrpc.Invalid, line: bytes) -> None:
        """A line that is not a usable message. An answer to a request of the hub's (by its shape) fails that
        request with the reason; a request of the child's with a usable id gets the error; the rest is noise."""
        request_id = None if invalid.request else invalid.id
        if invalid.id is None and invalid.code == jsonrpc.PARSE_ERROR:  # cut short, say: an answer if it starts as one
            found = _ANSWER_AT_START.match(line)
            request_id = int(found.group(1)) if found is not None else None
        exchange = self._pending.pop(request_id, None) if type(request_id) is int else None
        if exchange is not None:
            exchange.failed(errors.Unavailable(f"server '{self.name}' sent an invalid answer: {invalid.reason}"))
            return
        if invalid.id is not None and invalid.request:
            self.respond(invalid.id, error={"code": invalid.code, "message": invalid.reason})
            return
        if self._noise.tick():
            _log.warning(
                "child_stdout_not_jsonrpc",
                child=self.name,
                reason=invalid.reason,
                line=line[:200].decode("utf-8", "replace"),
                seen=self._noise.count,
            )

    def oversized(self, head: bytes, tail: bytes, size: int, limit: int) -> None:
        """A line over `limit` bytes was discarded as it arrived: the request it answered, if any, fails."""
        found = _ID_AT_START.match(head) or _ID_AT_END.search(tail)
        exchange = self._pending.pop(int(found.group(1)), None) if found is not None else None
        _log.warning("child_result_too_large", child=self.name, bytes=size, limit=limit, answered=exchange is not None)
        if exchange is not None:
            exchange.failed(
                errors.TooLarge(
                    f"server '{self.name}' sent a result of {size} bytes, more than its max_result_bytes ({limit}); "
                    "raise max_result_bytes in servers.yaml or ask for less",
                    {"reason": "result_too_large", "bytes": size},
                )
            )

    def ended(self, reason: str) -> None:
        """The wire has ended: every request still in flight fails with `reason`."""
        if self.closed is not None:
            return
        self.closed = reason
        self.done.set()
        pending, self._pending = self._pending, {}
        for exchange in pending.values():
            exchange.failed(errors.Unavailable(reason))

    # ---- the hub's own requests -----------------------------------------------------------------------------

    async def request(self, method: str, params: dict[str, Any] | None = None, limit_s: float = 30.0) -> dict[str, Any]:
        """Send a request and wait (bounded) for its result.

        Raises:
            errors.ChildError: the child answered with an error.
            errors.HubError: the connection ended, or the answer was unusable.
            TimeoutError: no answer within `limit_s` (the child is told the request is cancelled).
        """
        waiter = _Waiter(self.name)
        try:
            request_id = self.send(method, params or {}, waiter)
        except errors.Unavailable:
            # The child is most likely exiting: its own end (exit code, last stderr) says more than a broken pipe.
            with anyio.move_on_after(BROKEN_WIRE_GRACE):
                await self.done.wait()
            if self.closed is not None:
                raise errors.Unavailable(self.closed) from None
            raise
        try:
            with anyio.fail_after(limit_s):
                await waiter.done.wait()
        finally:
            if not waiter.done.is_set():
                self.cancel(request_id, "the hub stopped waiting")
        return waiter.result()

    async def handshake(self, protocol: str, limit_s: float, capabilities: dict[str, Any] | None = None) -> None:
        """Open the session in the era `protocol` asks for ("legacy", "auto" or "2026-07-28"), declaring
        `capabilities` (default: the shared connection's, `extensions.client_capabilities`).

        Raises:
            errors.HubError, TimeoutError: the child did not complete the handshake.
            RuntimeError: the child does not speak the era `protocol` requires.
        """
        if capabilities is not None:
            self.client_capabilities = capabilities
        if protocol != "legacy" and await self._discover(limit_s, required=protocol != "auto"):
            return
        result = await self.request(
            "initialize",
            {"protocolVersion": LATEST_HANDSHAKE, "capabilities": self.client_capabilities, "clientInfo": CLIENT_INFO},
            limit_s,
        )
        version = result.get("protocolVersion")
        if version not in HANDSHAKE_VERSIONS:
            raise RuntimeError(
                f"the server answered initialize with protocol version {jsonrpc.quote(version)}, "
                "which the hub does not speak"
            )
        self._opened(version, result)
        self.notify("notifications/initialized")

    async def _discover(self, limit_s: float, required: bool) -> bool:
        self.protocol_version = MODERN_VERSIONS[-1]  # so that `send` puts the envelope on server/discover
        try:
            result = await self.request("server/discover", {}, limit_s)
        except errors.ChildError:
            refusal = "the server does not answer server/discover; use 'protocol: auto' or 'legacy'"
        else:
            supported = result.get("supportedVersions")
            if isinstance(supported, list) and MODERN_VERSIONS[-1] in supported:
                self._opened(MODERN_VERSIONS[-1], result)
                return True
            refusal = f"the server supports {jsonrpc.quote(supported)}, not {MODERN_VERSIONS[-1]}"
        self.protocol_version = None
        if required:
            raise RuntimeError(refusal)
        return False

    def _opened(self, version: str, result: dict[str, Any]) -> None:
        self.protocol_version = version
        capabilities = result.get("capabilities")
        self.capabilities = capabilities if type(capabilities) is dict else {}
        info = result.get("serverInfo")
        self.server_info = info if type(info) is dict else {}
        instructions = result.get("instructions")
        self.instructions = instructions if type(instructions) is str else None
        self.wire.negotiated(version)


class _Waiter:
    """The exchange of one of the hub's own requests."""

    def __init__(self, child: str) -> None:
        self._child = child
        self.done = anyio.Event()
        self._response: Response | None = None
        self._error: errors.HubError | None = None

    def answered(self, response: Response) -> None:
        self._response = response
        self.done.set()

    def progress(self, params: dict[str, Any]) -> None:
        pass

    def failed(self, error: errors.HubError) -> None:
        self._error = error
        self.done.set()

    def result(self) -> dict[str, Any]:
        if self._error is not None:
            raise self._error
        assert self._response is not None
        if self._response.error is not None:
            raise errors.child_error(self._child, self._response.error)
        return self._response.result or {}
