"""Shared fixtures: a hub spawned as a real subprocess, driven by the SDK's client over stdio."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import yaml
from anyio.abc import Process
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = REPO / "tests" / "npm" / "node_modules" / ".bin" / "mcp-server-everything"
# Every wait in the tests is bounded by this; a child's cold start (an npm server, an SDK import) fits well inside.
WAIT = 60.0


# Tests under these folders spawn processes (the hub, children): they carry the integration marker, so that
# `pytest -m "not integration"` is the seconds-long suite.
SPAWNING = ("integration", "faults", "conformance", "fuzz")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.relative_to(REPO / "tests").parts[0] in SPAWNING:
            item.add_marker(pytest.mark.integration)


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


def system_tool(name: str) -> str:
    """The path of a program from the system's packages (haproxy, redis-server, ...); the test is skipped when it is
    missing, except under CI, where .ci/run installs it and its absence is a failure."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")
    if found is None:
        message = f"{name} is not installed (.ci/run installs it from Debian's packages)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_http_command(config: Path, port: int, log_file: Path, *extra: str) -> list[str]:
    """The command line of `hub serve --http` on 127.0.0.1:`port`."""
    return [
        sys.executable,
        "-m",
        "hub",
        "serve",
        "--config",
        str(config),
        "--http",
        f"127.0.0.1:{port}",
        "--log-file",
        str(log_file),
        *extra,
    ]


async def run_bounded(argv: list[str], limit: float = 120.0, **options: Any) -> subprocess.CompletedProcess[bytes]:
    """`anyio.run_process(argv, check=False, **options)`, failing the test if it takes over `limit` seconds."""
    with anyio.fail_after(limit):
        return await anyio.run_process(argv, check=False, **options)


async def stop_process(process: Process, grace: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `grace` seconds; the wait for its exit is bounded and
    shielded, so that a test being cancelled still leaves no process behind."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.terminate()
            with anyio.move_on_after(grace):
                await process.wait()
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.kill()
            with anyio.move_on_after(5):
                await process.wait()


async def wait_listening(process: Process, port: int, limit: float = WAIT) -> None:
    """Until something accepts connections on 127.0.0.1:`port`; fails if `process` exits first, or after `limit`."""
    with anyio.fail_after(limit):
        while True:
            assert process.returncode is None, f"the hub exited with {process.returncode} before listening"
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)  # another process binds it; no event exists
                continue
            await stream.aclose()
            return


@asynccontextmanager
async def serve_hub_http(config: Path, log_file: Path, *extra: str, port: int | None = None) -> AsyncIterator[str]:
    """`hub serve --http` as a real subprocess (on `port`, else a free one); yields its /mcp URL once it accepts
    connections (bounded)."""
    port = port or free_port()
    with log_file.with_suffix(".err").open("wb") as err:
        process = await anyio.open_process(
            serve_http_command(config, port, log_file, *extra), cwd=REPO, stdout=subprocess.DEVNULL, stderr=err
        )
        try:
            await wait_listening(process, port)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            await stop_process(process)


def log_events(log_file: Path, event: str) -> list[dict[str, Any]]:
    """The hub's structured log lines of one kind, its rotated files (hub.log.N ... hub.log.1) included."""
    from hub.logfile import rotated_siblings

    files = [*rotated_siblings(log_file), log_file]
    lines = [line for f in files if f.exists() for line in f.read_text().splitlines()]
    return [e for e in (json.loads(line) for line in lines if line.startswith("{")) if e.get("event") == event]


async def wait_for_log(
    log_file: Path, event: str, predicate: Callable[[dict[str, Any]], bool] = lambda e: True, limit: float = WAIT
) -> dict[str, Any]:
    """Bounded wait for a hub log line (another process writes it; no event exists)."""
    with anyio.fail_after(limit):
        while True:
            found = [e for e in log_events(log_file, event) if predicate(e)]
            if found:
                return found[-1]
            await anyio.sleep(0.05)


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


async def wait_for_file(path: Path, limit: float = WAIT) -> None:
    """Bounded wait for a file that a child process writes (its only way to tell us something happened)."""
    with anyio.fail_after(limit):
        while not await anyio.Path(path).exists():  # noqa: ASYNC110 - another process writes it; no event exists
            await anyio.sleep(0.05)
