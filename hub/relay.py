"""Child-to-host traffic that belongs to a host request: sampling, elicitation, roots and log messages.

Nothing on the wire ties a child's `sampling/createMessage` to the `tools/call` that caused it. Each connection
to a child (the shared one, `Child`, or a host session's own, `Lane`) keeps the host requests now routed through
it (`inflight`, oldest first), and a child's request goes to the host *session* those requests belong to:

- all in-flight requests come from one host session: that session is asked, on the stream of its newest request;
- none: there is nobody to ask; the child gets an error;
- several host sessions: the hub cannot tell which one caused it, so it refuses (the child gets an error naming
  the fix, `sessions: per-host`) rather than ask the wrong person. A `Lane` only ever carries one session.

The hub's own input-required driver (`ask_host`) knows the exact host request and skips the guessing.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import mcp_types as types
import structlog
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from hub.child import Child

HostRequest = ServerRequestContext[Any, Any]

_NEEDS: dict[type[Any], tuple[types.ClientCapabilities, str]] = {
    types.CreateMessageRequest: (types.ClientCapabilities(sampling=types.SamplingCapability()), "sampling"),
    types.ElicitRequest: (types.ClientCapabilities(elicitation=types.ElicitationCapability()), "elicitation"),
    types.ListRootsRequest: (types.ClientCapabilities(roots=types.RootsCapability()), "roots"),
}

_log = structlog.get_logger("hub.relay")


class Waiting:
    """An in-flight entry that is not a host request: a child call parked for a 2026 host (bridge.py).

    It takes the child's requests itself (as input-required rounds) and names the host request now waiting
    on it, if any, for log messages.
    """

    current: HostRequest | None = None

    async def ask(self, request: types.ServerRequest) -> Any:
        raise NotImplementedError


class Unattached:
    """An in-flight host request that reached the child around the SDK (hub/passthrough.py).

    It has no request context, only the host connection it arrived on: a child's request during it goes to that
    connection's standalone channel. Over stdio there is no other; over HTTP the request's own stream carries it
    (hub/http_passthrough.py overrides `ask` and `log`).
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def ask(self, request: types.ServerRequest, server: str) -> Any:
        """A child's request during the host request; an `ErrorData` goes back to the child."""
        return await ask_connection(self.connection, request, server)

    async def log(self, level: types.LoggingLevel, data: Any, logger: str) -> None:
        """A child's log message during the request."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await self.connection.log(level, data, logger)


InFlight = HostRequest | Waiting | Unattached


class Ambiguous:
    """Requests of several host sessions are in flight on one connection: no single owner."""

    def __init__(self, sessions: int) -> None:
        self.sessions = sessions


def session_of(ctx: HostRequest) -> Connection:
    """The host session (the SDK's per-client `Connection`) a host request arrived on."""
    connection: Connection = ctx.session._connection
    return connection


def _session_key(entry: InFlight) -> int:
    if isinstance(entry, Unattached):
        return id(entry.connection)
    return id(entry) if isinstance(entry, Waiting) else id(session_of(entry))


def owner_of(inflight: Sequence[InFlight]) -> InFlight | Ambiguous | None:
    """What a child's request is attributed to: the newest in-flight entry, if one host session owns them all.

    A parked call (`Waiting`) counts as a session of its own.
    """
    if not inflight:
        return None
    sessions = {_session_key(entry) for entry in inflight}
    if len(sessions) > 1:
        return Ambiguous(len(sessions))
    return inflight[-1]


def result_type(request: types.ServerRequest) -> type[types.Result]:
    if isinstance(request, types.CreateMessageRequest):
        with_tools = request.params.tools is not None or request.params.tool_choice is not None
        return types.CreateMessageResultWithTools if with_tools else types.CreateMessageResult
    return types.ElicitResult if isinstance(request, types.ElicitRequest) else types.ListRootsResult


def needed_capability(request: types.ServerRequest) -> tuple[types.ClientCapabilities, str]:
    """The host capability a child's request needs, and its name for messages."""
    return _NEEDS[type(request)]


def what(request: types.ServerRequest) -> str:
    return _NEEDS[type(request)][1]


async def ask_host(ctx: HostRequest, request: types.ServerRequest, server: str) -> Any:
    """Send one child-to-host request on the stream of host request `ctx`; an `ErrorData` if that cannot be done."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        # Reached only for requests that cannot carry input-required rounds (tools/call, prompts/get and
        # resources/read are bridged by bridge.py), e.g. a sampling request during completion/complete.
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"hub: server '{server}' sent a {what(request)} request during a {ctx.method} request of a host "
            f"that speaks {ctx.protocol_version}, which has no server-to-client requests and no input-required round "
            f"for {ctx.method}",
        )
    # On the stream of the host request that caused it, so an HTTP host sees it on that request's SSE stream.
    metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
    return await ask_if_declared(
        ctx.session.check_client_capability,
        lambda: ctx.session.send_request(request, result_type(request), metadata=metadata),
        request,
        server,
        ctx.protocol_version,
    )


async def ask_connection(connection: Connection, request: types.ServerRequest, server: str) -> Any:
    """Send one child-to-host request on a handshake-era host connection's standalone channel."""
    return await ask_if_declared(
        connection.check_capability,
        lambda: connection.send_request(request, result_type=result_type(request)),
        request,
        server,
        connection.protocol_version,
    )


async def ask_if_declared(
    declared: Callable[[types.ClientCapabilities], bool],
    send: Callable[[], Awaitable[Any]],
    request: types.ServerRequest,
    server: str,
    protocol: str,
) -> Any:
    """Send if the host declared the capability the request needs; an `ErrorData` for the child otherwise."""
    capability, kind = _NEEDS[type(request)]
    if not declared(capability):
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"hub: the host did not declare the {kind} capability, so server '{server}' cannot use {kind}",
        )
    try:
        return await send()
    except NoBackChannelError:
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"hub: the host's connection cannot carry a {kind} request (protocol {protocol})",
        )
    except MCPError as exc:
        return exc.error


async def route_child_request(server: str, inflight: Sequence[InFlight], request: types.ServerRequest) -> Any:
    """Ask the host session that owns `inflight` on the child's behalf; an `ErrorData` goes back to the child."""
    kind = what(request)
    owner = owner_of(inflight)
    if owner is None:
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"hub: no host request is in flight to server '{server}', so its {kind} request has no host "
            "to go to",
        )
    if isinstance(owner, Ambiguous):
        _log.warning("child_request_ambiguous", child=server, kind=kind, host_sessions=owner.sessions)
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"hub: requests of {owner.sessions} host sessions are in flight to server '{server}', so the hub "
            f"cannot tell which one its {kind} request belongs to and refuses it rather than ask the wrong one; "
            "set 'sessions: per-host' for this server in servers.yaml",
        )
    if isinstance(owner, Waiting):
        return await owner.ask(request)
    if isinstance(owner, Unattached):
        return await owner.ask(request, server)
    return await ask_host(owner, request, server)


async def forward_child_request(child: Child, request: types.ServerRequest) -> Any:
    """A request from the shared connection of `child`."""
    return await route_child_request(child.name, child.inflight, request)


async def send_log(ctx: HostRequest, params: types.LoggingMessageNotificationParams, logger: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await ctx.session.send_log_message(params.level, params.data, logger, related_request_id=ctx.request_id)


def logger_name(server: str, params: types.LoggingMessageNotificationParams) -> str:
    return f"{server}/{params.logger}" if params.logger else server


async def forward_child_log(child: Child, params: types.LoggingMessageNotificationParams, hosts: Any) -> None:
    """A child's log message reaches the host session it belongs to, its logger prefixed with the child's name.

    In flight for one session: that session. None in flight: every handshake-era host (a shared child belongs
    to all). Several sessions: nobody (a log line must not leak into another user's session); the hub logs it.
    """
    logger = logger_name(child.name, params)
    owner = owner_of(child.inflight)
    if isinstance(owner, Waiting):
        owner = owner.current  # the host request now waiting on a parked call, if any
        if owner is None:
            _log.info("child_log_unrouted", child=child.name, level=params.level, reason="between rounds")
            return
    if isinstance(owner, Ambiguous):
        _log.info("child_log_unrouted", child=child.name, level=params.level, host_sessions=owner.sessions)
    elif isinstance(owner, Unattached):
        await owner.log(params.level, params.data, logger)
    elif owner is not None:
        await send_log(owner, params, logger)
    else:
        await hosts.log(params, logger)
