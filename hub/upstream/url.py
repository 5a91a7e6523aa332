"""A URL child's wire: the SDK's client transports (Streamable HTTP, SSE) carry the hub's own session (the same
`Connection` as a stdio child's); messages cross as the SDK's models at this edge only. Each request names its
protocol revision in the `MCP-Protocol-Version` header, and a 2026-07-28 request also its method and name
(`Mcp-Method`, `Mcp-Name`) and a `tools/call` the arguments its tool marks `x-mcp-header` (`Mcp-Param-*`, read from
the child's listing as it is now): hub.protocol.headers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from hub.config.schema import ServerConfig
from hub.platform.pipes import Broken
from hub.protocol.headers import ToolHeaders, routing_headers
from hub.protocol.jsonrpc import classify
from hub.protocol.revisions import is_modern
from hub.upstream.connection import Connection, Events

# Bytes beyond max_result_bytes allowed for one SSE event (its framing).
EVENT_MARGIN = 4096
SSE_READ_TIMEOUT = 300.0
# The child's tools as last listed (raw dicts, the child's own names): where `x-mcp-header` marks are read.
ListedTools = Callable[[], tuple[dict[str, Any], ...]]


class UrlWire:
    """Queues the hub's messages for the transport's write stream, in order, from any caller."""

    def __init__(self, name: str, tools: ListedTools) -> None:
        self.name = name
        self._tools = tools
        self._tool_headers = ToolHeaders()
        self._queue: deque[dict[str, Any]] = deque()
        self._wake = anyio.Event()
        self._version: str | None = None
        self._closed = False

    def send(self, message: dict[str, Any], line: bytes) -> None:
        if self._closed:
            raise Broken("the connection is closed")
        self._queue.append(message)
        self._wake.set()

    def negotiated(self, version: str) -> None:
        self._version = version

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    async def write_all(self, stream: Any) -> None:
        from mcp.shared.message import ClientMessageMetadata, SessionMessage
        from mcp_types import jsonrpc_message_adapter

        while not self._closed:
            while not self._queue and not self._closed:
                self._wake = anyio.Event()
                await self._wake.wait()
            while self._queue:
                message = self._queue.popleft()
                headers = self._headers(message)
                metadata = ClientMessageMetadata(headers=headers) if headers else None
                model = jsonrpc_message_adapter.validate_python(message, by_name=False)
                await stream.send(SessionMessage(model, metadata=metadata))

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        version = self._version
        if version is None:
            params = message.get("params")
            meta = params.get("_meta") if isinstance(params, dict) else None
            version = meta.get("io.modelcontextprotocol/protocolVersion") if isinstance(meta, dict) else None
        if version is None:
            return {}
        headers = {"mcp-protocol-version": version}
        method = message.get("method")
        if is_modern(version) and isinstance(method, str) and "id" in message:
            params = message["params"]  # a request of the hub's (Connection.send) always has its params
            tool = params.get("name")
            param_map = None
            if method == "tools/call" and isinstance(tool, str):
                param_map = self._tool_headers.of(self._tools(), tool)
            headers.update(routing_headers(method, params, param_map))
        return headers


# Builds the `httpx.Auth` of a connection (an OAuth child's, hub.upstream.oauth), told how to end that connection.
AuthFor = Callable[[Callable[[str], None]], Awaitable[Any]]


@asynccontextmanager
async def open_url(
    name: str,
    config: ServerConfig,
    events: Events,
    tg: TaskGroup,
    auth_for: AuthFor | None,
    tools: ListedTools,
) -> AsyncIterator[Connection]:
    """Connect to the child's URL and yield its connection; leaving closes the transport. `tools`: the child's
    listing as it is now, for the `Mcp-Param-*` headers of a 2026-07-28 `tools/call`.

    Raises:
        SignInRequired: (from `auth_for`) an OAuth child this identity has not signed in to.
    """
    wire = UrlWire(name, tools)
    connection = Connection(name, wire, events)
    auth = await auth_for(connection.ended) if auth_for is not None else None
    async with _transport(config, auth) as (read, write):
        tg.start_soon(_read_all, read, connection)
        tg.start_soon(wire.write_all, write)
        try:
            yield connection
        finally:
            wire.close()
            connection.ended(f"server '{name}': the connection to {config.url} was closed")


async def _read_all(read: Any, connection: Connection) -> None:
    log = structlog.get_logger("hub.child").bind(child=connection.name)
    try:
        async for item in read:
            if isinstance(item, Exception):
                log.warning("child_transport_error", error=str(item)[:500])
                continue
            connection.handle(classify(item.message.model_dump(by_alias=True, mode="json", exclude_none=True), b""))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        pass
    connection.ended(f"server '{connection.name}': the connection ended")


@asynccontextmanager
async def _transport(config: ServerConfig, auth: Any = None) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's transport for the child's URL; its headers (and `auth`'s tokens) may carry secrets and are never
    logged."""
    import httpx2
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    assert config.url is not None
    headers = dict(config.headers) or None
    if config.kind == "sse":
        async with sse_client(config.url, headers=headers, timeout=config.connect_timeout) as streams:
            yield streams
        return
    # Read: a request's stream may stay silent as long as its deadline allows; the standalone stream longer.
    timeout = httpx2.Timeout(config.connect_timeout, read=max(SSE_READ_TIMEOUT, config.max_timeout + 30))
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth) as http,
        streamable_http_client(
            config.url, http_client=http, max_sse_event_size=config.max_result_bytes + EVENT_MARGIN
        ) as streams,
    ):
        yield streams
