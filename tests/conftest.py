"""Shared fixtures: a hub spawned as a real subprocess, driven by the SDK's client over stdio."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = REPO / "tests" / "npm" / "node_modules" / ".bin" / "mcp-server-everything"
# Every wait in the tests is bounded by this; a child's cold start (an npm server, an SDK import) fits well inside.
WAIT = 60.0


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def everything_server() -> dict[str, Any]:
    """The pinned reference server from npm (installed by .ci/run from tests/npm/package.json)."""
    if not EVERYTHING.exists():
        message = f"{EVERYTHING} is missing: run `npm ci --prefix tests/npm` (as .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return {"command": str(EVERYTHING), "args": ["stdio"]}


def python_child(module: str, *args: str, **extra: Any) -> dict[str, Any]:
    """A child of our own under tests/children, run with this interpreter."""
    return {"command": sys.executable, "args": ["-m", module, *args], "cwd": str(REPO), **extra}


def write_config(directory: Path, servers: dict[str, Any], hub: dict[str, Any] | None = None) -> Path:
    path = directory / "servers.yaml"
    path.write_text(yaml.safe_dump({"hub": hub or {}, "servers": servers}, sort_keys=False))
    return path


@dataclass
class Host:
    """What a host sees of the hub besides responses: notifications, logs, and child-to-host requests."""

    notifications: list[types.ServerNotification] = field(default_factory=list)
    logs: list[types.LoggingMessageNotificationParams] = field(default_factory=list)
    sampled: list[types.CreateMessageRequestParams] = field(default_factory=list)
    elicited: list[types.ElicitRequestParams] = field(default_factory=list)
    changed: anyio.Event = field(default_factory=anyio.Event)
    sampling_answer: str = "host says hi"

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
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=self.sampling_answer), model="test-model"
        )

    async def on_elicitation(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        self.elicited.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

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
async def connect_direct(server: dict[str, Any]) -> AsyncIterator[Client]:
    """The same child the hub runs, connected directly: the reference for pass-through comparisons."""
    params = StdioServerParameters(
        command=server["command"], args=server.get("args", []), cwd=server.get("cwd"), env=server.get("env")
    )
    host = Host()
    async with Client(params, mode="legacy", sampling_callback=host.on_sampling,
                      elicitation_callback=host.on_elicitation, list_roots_callback=host.on_roots) as client:
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


async def wait_for_file(path: Path, limit: float = WAIT) -> None:
    """Bounded wait for a file that a child process writes (its only way to tell us something happened)."""
    with anyio.fail_after(limit):
        while not await anyio.Path(path).exists():  # noqa: ASYNC110 - another process writes it; no event exists
            await anyio.sleep(0.05)
