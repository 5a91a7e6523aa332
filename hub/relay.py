"""Child-to-host traffic that belongs to a host request: sampling, elicitation, roots and log messages.

Nothing on the wire ties a child's `sampling/createMessage` to the `tools/call` that caused it, so the hub
sends it to the host request most recently routed to that child and still in flight (`Child.inflight`).
That is exact while a child serves one host call at a time; docs/protocols.md says what the hub does when
calls to one child overlap.
"""

from __future__ import annotations

import warnings
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata

from hub.child import Child

_NEEDS: dict[type[Any], tuple[types.ClientCapabilities, str]] = {
    types.CreateMessageRequest: (types.ClientCapabilities(sampling=types.SamplingCapability()), "sampling"),
    types.ElicitRequest: (types.ClientCapabilities(elicitation=types.ElicitationCapability()), "elicitation"),
    types.ListRootsRequest: (types.ClientCapabilities(roots=types.RootsCapability()), "roots"),
}


def _result_type(request: types.ServerRequest) -> type[types.Result]:
    if isinstance(request, types.CreateMessageRequest):
        with_tools = request.params.tools is not None or request.params.tool_choice is not None
        return types.CreateMessageResultWithTools if with_tools else types.CreateMessageResult
    return types.ElicitResult if isinstance(request, types.ElicitRequest) else types.ListRootsResult


async def forward_child_request(child: Child, request: types.ServerRequest) -> Any:
    """Ask the host on the child's behalf; an `ErrorData` goes back to the child when that cannot be done."""
    capability, what = _NEEDS[type(request)]
    ctx: ServerRequestContext[Any, Any] | None = child.inflight[-1] if child.inflight else None
    if ctx is None:
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"hub: no host request is in flight to server '{child.name}', so its {what} request has no "
            "host to go to",
        )
    if not ctx.session.check_client_capability(capability):
        message = f"hub: the host did not declare the {what} capability"
        return types.ErrorData(code=types.INVALID_REQUEST, message=message)
    try:
        # On the stream of the host request that caused it, so an HTTP host sees it on that request's SSE stream.
        return await ctx.session.send_request(
            request, _result_type(request), metadata=ServerMessageMetadata(related_request_id=ctx.request_id)
        )
    except NoBackChannelError:
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"hub: the host's connection cannot carry a {what} request (protocol {ctx.protocol_version})",
        )
    except MCPError as exc:
        return exc.error


async def forward_child_log(child: Child, params: types.LoggingMessageNotificationParams, hosts: Any) -> None:
    """A child's log message reaches the host, its logger name prefixed with the child's name."""
    logger = f"{child.name}/{params.logger}" if params.logger else child.name
    ctx: ServerRequestContext[Any, Any] | None = child.inflight[-1] if child.inflight else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if ctx is not None:
            await ctx.session.send_log_message(params.level, params.data, logger, related_request_id=ctx.request_id)
        else:
            await hosts.log(params, logger)
