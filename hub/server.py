"""The host-facing MCP server: the SDK's low-level `Server`, its handlers answered from the hub.

Listings come from the hub's cached namespace (never by asking every child again); everything addressed to
one item goes through the router. One `Server` serves both protocol eras on any transport.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.caching import CacheHint
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ListenHandler
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from hub import __version__
from hub.identity import SERVER_DESCRIPTION, SERVER_NAME, SERVER_TITLE

if TYPE_CHECKING:
    from hub.hub import Hub

# How long logging/setLevel waits for the slowest child before answering the host.
SET_LEVEL_TIMEOUT = 5.0
# 2026-07-28 results of cacheable methods must say how long they stay fresh. The hub's lists change whenever a
# child's do, so they are stale at once (0 ms) and private to the host that asked; a child's own hints win.
NO_CACHE: dict[Any, CacheHint] = {
    method: CacheHint(ttl_ms=0, scope="private")
    for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read")
}

P = TypeVar("P")
Handler = Callable[[ServerRequestContext[Any, Any], P], Awaitable[Any]]


def complete(handler: Handler[P]) -> Handler[P]:
    """Mark the hub's raw-dict results `resultType: complete` unless they say otherwise.

    2026-07-28 requires the field (the SDK's sieve rejects a result without it); a handshake-era child never
    sends it, and the sieve drops it again toward a handshake-era host. Input-required results keep theirs.
    """

    async def wrapped(ctx: ServerRequestContext[Any, Any], params: P) -> Any:
        result = await handler(ctx, params)
        if isinstance(result, dict) and "resultType" not in result:
            result = {**result, "resultType": "complete"}
        return result

    return wrapped


class HubServer(Server[Any]):
    """Advertises listChanged for every list: the SDK's HTTP session manager would otherwise say false."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True),
            experimental_capabilities,
            extensions,
        )


_CACHED_LISTS = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list"})


class ListingCache:
    """Answers a repeated list request with the result already shaped for the host's protocol revision.

    The SDK validates and re-serialises every result against the host's revision; for a merged listing of a few
    hundred tools that is most of the cost of a tools/list. The namespace is immutable and replaced on every
    change, so a cached answer is valid exactly as long as the namespace it was made from.
    """

    def __init__(self, hub: Hub, track: Callable[[ServerRequestContext[Any, Any]], None]) -> None:
        self._hub = hub
        self._track = track
        self._namespace: object = None
        self._answers: dict[tuple[str, str], Any] = {}

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Callable[..., Awaitable[Any]]) -> Any:
        if ctx.method not in _CACHED_LISTS or (ctx.params or {}).get("cursor"):
            return await call_next(ctx)
        self._track(ctx)
        await self._hub.wait_for_start()
        if self._namespace is not self._hub.namespace:
            self._namespace, self._answers = self._hub.namespace, {}
        key = (ctx.method, ctx.protocol_version)
        answer = self._answers.get(key)
        if answer is None:
            answer = self._answers[key] = await call_next(ctx)
        return answer


def build_server(hub: Hub) -> HubServer:
    def track(ctx: ServerRequestContext[Any, Any]) -> None:
        # Handshake-era connections are remembered for notifications sent outside any request.
        connection = ctx.session._connection
        if connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            hub.hosts.add(connection)

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> Any:
        track(ctx)
        return {"tools": hub.tool_listing()}

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> Any:
        track(ctx)
        return {"resources": list(hub.namespace.resources)}

    async def list_templates(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> Any:
        track(ctx)
        return {"resourceTemplates": list(hub.namespace.templates)}

    async def list_prompts(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> Any:
        track(ctx)
        return {"prompts": list(hub.namespace.prompts)}

    async def set_level(ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams) -> Any:
        track(ctx)
        with anyio.move_on_after(SET_LEVEL_TIMEOUT):
            await hub.set_log_level(params.level)
            await hub.lanes.set_log_level(ctx.session._connection, params.level)  # that session's own connections
        return {}

    async def on_initialized(ctx: ServerRequestContext[Any, Any], params: types.NotificationParams | None) -> None:
        track(ctx)

    async def on_roots_changed(ctx: ServerRequestContext[Any, Any], params: types.NotificationParams | None) -> None:
        await hub.roots_changed()
        await hub.lanes.roots_changed(ctx.session._connection)  # that session's own per-host connections

    def input_schema(name: str) -> dict[str, Any] | None:
        route = hub.namespace.tool_routes.get(name)
        if route is None:
            return None
        for tool in hub.namespace.tools:
            if tool.get("name") == name:
                schema = tool.get("inputSchema")
                return schema if isinstance(schema, dict) else None
        return None

    router = hub.router
    server = HubServer(
        SERVER_NAME,
        version=__version__,
        title=SERVER_TITLE,
        description=SERVER_DESCRIPTION,  # hub/first_start.py answers a first start's initialize with these too
        get_tool_input_schema=input_schema,
        on_list_tools=complete(list_tools),
        on_call_tool=complete(router.call_tool),
        on_list_resources=complete(list_resources),
        on_list_resource_templates=complete(list_templates),
        on_read_resource=complete(router.read_resource),
        on_subscribe_resource=router.subscribe,
        on_unsubscribe_resource=router.unsubscribe,
        on_subscriptions_listen=ListenHandler(hub.hosts.bus),
        on_list_prompts=complete(list_prompts),
        on_get_prompt=complete(router.get_prompt),
        on_completion=complete(router.complete),
        cache_hints=NO_CACHE,
    )

    async def track_initialize(ctx: ServerRequestContext[Any, Any], call_next: Callable[..., Awaitable[Any]]) -> Any:
        # Known from its initialize on, not only from its first request or notifications/initialized: after a warm
        # or first start those were held while the SDK loaded, and the stdio pass-through needs the host to take
        # the first call (the SDK commits the initialize before it reads the next message).
        result = await call_next(ctx)
        if ctx.method == "initialize":
            track(ctx)
        return result

    server.middleware.append(track_initialize)
    server.middleware.append(ListingCache(hub, track))
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.add_notification_handler("notifications/initialized", types.NotificationParams, on_initialized)
    server.add_notification_handler("notifications/roots/list_changed", types.NotificationParams, on_roots_changed)
    return server
