"""A host on the hub: the SDK's client, over stdio or HTTP, and what the host sees besides responses."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext

from tests.support.paths import REPO
from tests.support.waits import WAIT


@dataclass
class Host:
    """What a host sees of the hub besides responses: notifications, logs, and child-to-host requests."""

    notifications: list[types.ServerNotification] = field(default_factory=list)
    logs: list[types.LoggingMessageNotificationParams] = field(default_factory=list)
    sampled: list[types.CreateMessageRequestParams] = field(default_factory=list)
    elicited: list[types.ElicitRequestParams] = field(default_factory=list)
    changed: anyio.Event = field(default_factory=anyio.Event)
    sampling_answer: str = "host says hi"
    elicit_answer: dict[str, Any] = field(default_factory=lambda: {"name": "Ada"})
    # Awaited before answering a sampling or elicitation request (tests that need requests pending at once).
    hold: Callable[[], Awaitable[None]] | None = None

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            return
        self.notifications.append(message)
        self.changed.set()
        self.changed = anyio.Event()

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self.changed.set()
        self.changed = anyio.Event()

    async def on_sampling(self, ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        self.sampled.append(params)
        self._tell()
        if self.hold is not None:
            await self.hold()
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=self.sampling_answer), model="test-model"
        )

    async def on_elicitation(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        self.elicited.append(params)
        self._tell()
        if self.hold is not None:
            await self.hold()
        return types.ElicitResult(action="accept", content=self.elicit_answer)

    def _tell(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def on_roots(self, ctx: ClientRequestContext) -> Any:
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="project")])

    async def wait_for(self, predicate: Callable[[], bool], what: str, limit: float = WAIT) -> None:
        """Wait until `predicate()` holds, re-checking on every notification or log; bounded."""
        with anyio.fail_after(limit):
            while not predicate():
                await self.changed.wait()


def hub_params(config: Path, log_file: Path, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "hub", "serve", "--config", str(config), "--log-file", str(log_file), *extra],
        cwd=str(REPO),
        env=env,
    )


@asynccontextmanager
async def connect_hub(params: StdioServerParameters | Any, host: Host | None = None) -> AsyncIterator[Client]:
    """The SDK's client, as a host, on a hub: `params` spawns it over stdio, or is any SDK transport."""
    host = host or Host()
    client = Client(
        params,
        mode="legacy",
        message_handler=host.on_message,
        logging_callback=host.on_log,
        sampling_callback=host.on_sampling,
        elicitation_callback=host.on_elicitation,
        list_roots_callback=host.on_roots,
        read_timeout_seconds=WAIT,
    )
    async with client:
        yield client


@asynccontextmanager
async def connect_host(
    target: StdioServerParameters | str,
    host: Host | None = None,
    *,
    mode: str = "legacy",
    log_level: types.LoggingLevel | None = None,
    capabilities: bool = True,
) -> AsyncIterator[Client]:
    """A host of either era on the hub, over stdio (`StdioServerParameters`) or HTTP (a URL).

    `capabilities=False` declares no sampling, elicitation or roots (no callbacks, so no capability).
    """
    host = host or Host()
    callbacks: dict[str, Any] = (
        {
            "sampling_callback": host.on_sampling,
            "elicitation_callback": host.on_elicitation,
            "list_roots_callback": host.on_roots,
        }
        if capabilities
        else {}
    )
    client = Client(
        target,
        mode=mode,
        message_handler=host.on_message,
        logging_callback=host.on_log,
        read_timeout_seconds=WAIT,
        log_level=log_level,
        cache=None,
        **callbacks,
    )
    async with client:
        yield client


def initialize_request(
    request_id: int | str = 1, version: str = "2025-11-25", name: str = "t", capabilities: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A handshake-era host's `initialize`, as a raw JSON-RPC request (for tests that speak HTTP by hand)."""
    info = {"name": name, "version": "1"}
    params = {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": info}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


@asynccontextmanager
async def connect_direct(server: dict[str, Any]) -> AsyncIterator[Client]:
    """The same child the hub runs, connected directly: the reference for pass-through comparisons."""
    params = StdioServerParameters(
        command=server["command"], args=server.get("args", []), cwd=server.get("cwd"), env=server.get("env")
    )
    host = Host()
    async with Client(
        params,
        mode="legacy",
        sampling_callback=host.on_sampling,
        elicitation_callback=host.on_elicitation,
        list_roots_callback=host.on_roots,
    ) as client:
        yield client


async def wait_for_tools(client: Client, host: Host, names: set[str], limit: float = WAIT) -> list[types.Tool]:
    """List tools until every name is there; children start concurrently, and the hub says list_changed."""
    with anyio.fail_after(limit):
        while True:
            changed = host.changed
            tools = (await client.list_tools()).tools
            if names <= {t.name for t in tools}:
                return tools
            await changed.wait()
