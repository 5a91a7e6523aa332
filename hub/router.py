"""Routing of host requests to the owning child, and the one call-log line each of them produces.

Results pass through as the child's raw JSON (content blocks, structuredContent, isError, `_meta`), with
only the URIs it hands out renamed into the hub's namespace. Failures map to what a host can act on:

- unknown name -> JSON-RPC INVALID_PARAMS naming it;
- child down, timed out or gone mid-call -> for tools an `isError` result naming the child (the model can
  read it and move on), for other requests a JSON-RPC INTERNAL_ERROR naming the child;
- the child's own JSON-RPC error -> same code and data, message prefixed with the child's name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from hub.child import Child, ChildBusy, ChildState, ChildUnavailable, RequestTimedOut
from hub.eras import child_log_level, drive_input_rounds, is_input_required, is_modern, strip_child_stamp
from hub.lanes import Lane
from hub.naming import expose_uri, map_uris
from hub.relay import ask_host, session_of

if TYPE_CHECKING:
    from hub.hub import Hub

RESERVED_META_PREFIX = "io.modelcontextprotocol/"


def forward_meta(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The host's `_meta` as the child should see it: vendor keys kept; progress token and protocol keys dropped.

    The child gets its own progress token from the SDK (the hub re-emits progress under the host's), and
    the reserved protocol keys describe the host's connection, not the hub's connection to the child.
    """
    if not meta:
        return None
    kept = {k: v for k, v in meta.items() if k != "progress_token" and not k.startswith(RESERVED_META_PREFIX)}
    return kept or None


def json_size(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON (the call log's bytes_in and bytes_out); 0 for None."""
    if value is None:
        return 0
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode())


@dataclass
class _Call:
    """What the call log records about one routed request."""

    method: str
    exposed: str
    child: str | None = None
    original: str | None = None
    outcome: str = "ok"
    error_code: int | None = None
    error_message: str | None = None
    bytes_in: int = 0
    bytes_out: int = 0
    arguments: Any = None


class Router:
    def __init__(self, hub: Hub) -> None:
        self._hub = hub

    # ---- tools ----------------------------------------------------------------------------------------

    async def call_tool(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> Any:
        call = _Call("tools/call", params.name, bytes_in=json_size(params.arguments))
        with self._logged(ctx, call):
            route = self._hub.namespace.tool_routes.get(params.name)
            builtin = self._hub.builtin_tool(params.name) if route is None else None
            if builtin is not None:
                call.child = "hub"
                return await builtin(params.arguments or {})
            if route is None and await self._hub.wait_for_owner(params.name):
                route = self._hub.namespace.tool_routes.get(params.name)
            if route is None:
                down = [c for c in self._hub.possible_owners(params.name) if c.state is not ChildState.READY]
                if down:  # the host may know the name from before (a warm start's listing): say why it is gone
                    call.child, call.outcome, call.error_code = down[0].name, "unavailable", types.INTERNAL_ERROR
                    call.error_message = f"tool {params.name!r} is not available: {down[0].unavailable_reason()}"
                    return {"content": [{"type": "text", "text": call.error_message}], "isError": True}
                call.outcome, call.error_code = "error", types.INVALID_PARAMS
                call.error_message = f"Unknown tool: {params.name!r}"
                raise MCPError(code=types.INVALID_PARAMS, message=call.error_message)
            child = self._hub.children[route.child]
            call.child, call.original = child.name, route.original
            if self._hub.log_arguments(child):
                call.arguments = params.arguments
            request = types.CallToolRequest(
                params=params.model_copy(update={"name": route.original, "meta": forward_meta(params.meta)})
            )
            try:
                result, call.bytes_out = await self._forward(
                    ctx, child, request, timeout_s=child.config.timeout_for(route.original)
                )
            except _Failure as failure:
                call.outcome, call.error_code, call.error_message = failure.outcome, failure.code, failure.message
                if failure.own_error:  # the child's own protocol error keeps its code
                    raise MCPError(code=failure.code, message=failure.message, data=failure.data) from None
                return {"content": [{"type": "text", "text": failure.message}], "isError": True}
            if result.get("isError"):
                call.outcome = "tool_error"
            return map_uris(result, lambda uri: expose_uri(child.prefix, uri))

    # ---- resources, prompts, completion ----------------------------------------------------------------

    async def read_resource(self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams) -> Any:
        call = _Call("resources/read", str(params.uri))
        with self._logged(ctx, call):
            child, uri = self._resource_owner(call, str(params.uri))
            request = types.ReadResourceRequest(
                params=params.model_copy(update={"uri": uri, "meta": forward_meta(params.meta)})
            )
            result = await self._forward_or_raise(ctx, child, request, call)
            return map_uris(result, lambda u: expose_uri(child.prefix, u))

    async def subscribe(self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> Any:
        return await self._subscription(ctx, str(params.uri), subscribe=True)

    async def unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams) -> Any:
        return await self._subscription(ctx, str(params.uri), subscribe=False)

    async def _subscription(self, ctx: ServerRequestContext[Any, Any], exposed: str, *, subscribe: bool) -> Any:
        """The child is told only on a URI's first subscription and last unsubscription among all hosts."""
        call = _Call("resources/subscribe" if subscribe else "resources/unsubscribe", exposed)
        with self._logged(ctx, call):
            child, uri = self._resource_owner(call, exposed)
            hosts = self._hub.hosts
            if subscribe and hosts.subscribe(ctx.session._connection, exposed):
                request: Any = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
            elif not subscribe and hosts.unsubscribe(ctx.session._connection, exposed):
                request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
            else:
                return {}
            # On the shared connection: a subscription outlives any one host session's lane.
            await self._forward_or_raise(ctx, child, request, call, shared=True)
            return {}

    async def get_prompt(self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams) -> Any:
        call = _Call("prompts/get", params.name, bytes_in=json_size(params.arguments))
        with self._logged(ctx, call):
            route = self._hub.namespace.prompt_routes.get(params.name)
            if route is None:
                self._unknown(call, "prompt", params.name)
            child = self._hub.children[route.child]
            call.child, call.original = child.name, route.original
            request = types.GetPromptRequest(
                params=params.model_copy(update={"name": route.original, "meta": forward_meta(params.meta)})
            )
            result = await self._forward_or_raise(ctx, child, request, call)
            return map_uris(result, lambda u: expose_uri(child.prefix, u))

    async def complete(self, ctx: ServerRequestContext[Any, Any], params: types.CompleteRequestParams) -> Any:
        ref = params.ref
        namespace = self._hub.namespace
        if isinstance(ref, types.PromptReference):
            call = _Call("completion/complete", ref.name)
            route = namespace.prompt_routes.get(ref.name)
            new_ref: Any = ref.model_copy(update={"name": route.original}) if route else None
        else:
            call = _Call("completion/complete", ref.uri)
            route = namespace.template_routes.get(ref.uri) or namespace.route_uri(ref.uri)
            new_ref = ref.model_copy(update={"uri": route.original}) if route else None
        with self._logged(ctx, call):
            if route is None:
                self._unknown(call, "prompt or resource template", call.exposed)
            child = self._hub.children[route.child]
            call.child, call.original = child.name, route.original
            request = types.CompleteRequest(
                params=params.model_copy(update={"ref": new_ref, "meta": forward_meta(params.meta)})
            )
            return await self._forward_or_raise(ctx, child, request, call)

    # ---- shared machinery -----------------------------------------------------------------------------

    def _resource_owner(self, call: _Call, exposed: str) -> tuple[Child, str]:
        route = self._hub.namespace.route_uri(exposed)
        if route is None or route.child not in self._hub.children:
            self._unknown(call, "resource", exposed)
        child = self._hub.children[route.child]
        call.child, call.original = child.name, route.original
        return child, route.original

    @staticmethod
    def _unknown(call: _Call, kind: str, name: str) -> NoReturn:
        call.outcome, call.error_code = "error", types.INVALID_PARAMS
        call.error_message = f"Unknown {kind}: {name!r}"
        raise MCPError(code=types.INVALID_PARAMS, message=call.error_message)

    async def _forward_or_raise(
        self, ctx: ServerRequestContext[Any, Any], child: Child, request: Any, call: _Call, *, shared: bool = False
    ) -> dict[str, Any]:
        try:
            result, call.bytes_out = await self._forward(ctx, child, request, shared=shared)
            return result
        except _Failure as failure:
            call.outcome, call.error_code, call.error_message = failure.outcome, failure.code, failure.message
            raise MCPError(code=failure.code, message=failure.message, data=failure.data) from None

    async def _forward(
        self,
        ctx: ServerRequestContext[Any, Any],
        child: Child,
        request: Any,
        *,
        timeout_s: float | None = None,
        shared: bool = False,
    ) -> tuple[dict[str, Any], int]:
        """Send a host request to the child on the right connection and bridge the eras on the way.

        Returns the child's raw result and its size in bytes (for the call log and max_result_bytes).
        `shared` forces the child's shared connection (subscriptions, which outlive any one session's lane).
        """
        progress = _progress_relay(ctx)
        data = {"server": child.name}
        try:
            target: Child | Lane = child if shared else await self._target(ctx, child)
        except ChildUnavailable as exc:
            raise _Failure("unavailable", types.INTERNAL_ERROR, str(exc), data) from None
        if is_modern(target.protocol_version):
            level = child_log_level(ctx.protocol_version, ctx.meta, child.log_level)
            if level is not None:
                request = _with_params(request, meta={**(request.params.meta or {}), types.LOG_LEVEL_META_KEY: level})
        bridged = is_modern(ctx.protocol_version) and not is_modern(target.protocol_version) and _takes_input(request)
        if not bridged:
            target.inflight.append(ctx)
        try:
            if bridged:
                # A 2026 host, a handshake-era child: the child's requests become input-required rounds.
                plain = _with_params(request, input_responses=None, request_state=None)

                async def send(progress_fn: ProgressFnT) -> dict[str, Any]:
                    return await target.request(plain, progress=progress_fn, timeout_s=timeout_s)

                result = await self._hub.bridges.call(
                    ctx, child.name, target.inflight, request.params, child.config.timeout, send
                )
            else:
                result = await target.request(request, progress=progress, timeout_s=timeout_s)
                if is_input_required(result) and not is_modern(ctx.protocol_version):
                    # A handshake-era host cannot take an input-required result: the hub asks it for real.
                    async def ask(input_request: types.ServerRequest) -> Any:
                        return await ask_host(ctx, input_request, child.name)

                    async def resend(responses: dict[str, Any], state: str | None) -> dict[str, Any]:
                        again = _with_params(request, input_responses=responses, request_state=state)
                        return await target.request(again, progress=progress, timeout_s=timeout_s)

                    result = await drive_input_rounds(result, ask, resend)
                if progress is not None:
                    await progress.drain()
                result = strip_child_stamp(result)
        except (ChildUnavailable, ChildBusy) as exc:
            raise _Failure("unavailable", types.INTERNAL_ERROR, str(exc), data) from None
        except RequestTimedOut as exc:
            raise _Failure("timeout", types.REQUEST_TIMEOUT, str(exc), data) from None
        except MCPError as exc:
            error = exc.error
            if error.code == types.REQUEST_TIMEOUT:
                raise _Failure("timeout", types.REQUEST_TIMEOUT, f"{child.name}: {error.message}", data) from None
            if error.code == types.CONNECTION_CLOSED:
                await child.settle_exit()
                raise _Failure("unavailable", types.INTERNAL_ERROR, child.connection_lost_reason(), data) from None
            if isinstance(error.data, dict) and error.data.get("reason") == "result_too_large":
                raise _Failure("too_large", error.code, error.message, data) from None
            raise _Failure("error", error.code, f"{child.name}: {error.message}", error.data) from None
        finally:
            if not bridged:
                target.inflight.remove(ctx)
        size = json_size(result)
        if size > child.config.max_result_bytes:
            message = (
                f"server '{child.name}' sent a result of {size} bytes, more than its max_result_bytes "
                f"({child.config.max_result_bytes}); raise max_result_bytes in servers.yaml or ask for less"
            )
            raise _Failure("too_large", types.INTERNAL_ERROR, message, data)
        return result, size

    async def _target(self, ctx: ServerRequestContext[Any, Any], child: Child) -> Child | Lane:
        """The connection for this host request: the host session's own lane for `sessions: per-host` children.

        2026-07-28 hosts have no session (every request stands alone) and cannot receive child requests, so
        they use the shared connection; so does every request while the child is not ready (it fails there).
        """
        if (
            child.config.sessions == "per-host"
            and child.state is ChildState.READY
            and not is_modern(ctx.protocol_version)
        ):
            return await self._hub.lanes.lane_for(child, session_of(ctx))
        return child

    @contextmanager
    def _logged(self, ctx: ServerRequestContext[Any, Any], call: _Call) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        except anyio.get_cancelled_exc_class():
            call.outcome = "cancelled"
            raise
        except MCPError as exc:
            if call.outcome == "ok":
                call.outcome, call.error_code, call.error_message = "error", exc.error.code, exc.error.message
            raise
        except Exception as exc:
            call.outcome, call.error_message = "error", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            fields: dict[str, Any] = {
                "method": call.method,
                "host_session": _session_id(ctx),
                "request_id": ctx.request_id,
                "child": call.child,
                "name": call.exposed,
                "original": call.original,
                "duration_ms": round((time.perf_counter() - began) * 1000, 2),
                "outcome": call.outcome,
                "bytes_in": call.bytes_in,
                "bytes_out": call.bytes_out,
            }
            if call.error_code is not None or call.error_message is not None:
                fields["error_code"], fields["error_message"] = call.error_code, call.error_message
            if call.arguments is not None:
                fields["arguments"] = call.arguments
            self._hub.call_log(fields)


class _Failure(Exception):
    """A request the hub could not complete; `outcome` is the call log's ("too_large" is logged as "error")."""

    def __init__(self, outcome: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.outcome = "error" if outcome == "too_large" else outcome
        self.own_error = outcome == "error"  # the child's own JSON-RPC error, passed on as one
        self.code, self.message, self.data = code, message, data


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str:
    connection = ctx.session._connection
    return connection.session_id or f"conn-{id(connection):x}"


def _takes_input(request: Any) -> bool:
    """Requests whose result may be input-required (2026-07-28): tools/call, prompts/get, resources/read."""
    return isinstance(request.params, types.InputResponseRequestParams)


def _with_params(request: Any, **update: Any) -> Any:
    """A copy of `request` with some of its params replaced (the original stays as the host sent it)."""
    return request.model_copy(update={"params": request.params.model_copy(update=update)})


# Upper bound on waiting for progress notifications still being relayed when the child's result arrives.
PROGRESS_DRAIN = 1.0


class _ProgressRelay:
    """Progress from the child, re-emitted under the host's own token.

    The SDK handles each incoming notification in a task of its own, so the child's last progress can still
    be on its way to the host when the child's result (read after it) is already back. `drain` lets it land
    first (bounded), else a host may get the result before the last progress, or lose it when the response
    closes the request's stream.
    """

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self._ctx = ctx
        self._busy = 0
        self._idle = anyio.Event()
        self._idle.set()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        if self._busy == 0:
            self._idle = anyio.Event()
        self._busy += 1
        try:
            await self._ctx.session.report_progress(progress, total, message)
        finally:
            self._busy -= 1
            if self._busy == 0:
                self._idle.set()

    async def drain(self) -> None:
        await anyio.lowlevel.checkpoint()  # a notification read before the result has its task scheduled by now
        with anyio.move_on_after(PROGRESS_DRAIN):
            await self._idle.wait()


def _progress_relay(ctx: ServerRequestContext[Any, Any]) -> _ProgressRelay | None:
    """A relay if the host asked for progress (it sent a token), else None: the child then gets no token."""
    if not ctx.meta or ctx.meta.get("progress_token") is None:
        return None
    return _ProgressRelay(ctx)
