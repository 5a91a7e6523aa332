"""A host's roots reach a child behind the hub: `@modelcontextprotocol/server-filesystem` (npm, pinned).

That server asks its client for roots right after its initialization and again on `notifications/roots/list_changed`,
and replaces its allowed directories with them. Behind the hub over stdio it may start before the host connects,
so that its first `roots/list` has nobody to go to; the hub tells it to ask again once a host that declared roots has
initialized, and relays a host's own `roots/list_changed`. Its allowed directories must then be the host's roots,
and follow them. Over HTTP the same holds for the one session connected, and, with `sessions: per-host`, for each
session's own process of the server.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import stdio_client

from tests.support.children import write_config
from tests.support.logs import wait_for_log
from tests.support.mcp_client import Host, hub_params, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

FILESYSTEM = REPO / "tests" / "npm" / "node_modules" / ".bin" / "mcp-server-filesystem"
# How often the server's allowed directories are asked for while they change (the server updates them after it
# has the host's answer, on its own time: there is no event to wait for).
POLL = 0.05


def filesystem_server(*directories: Path) -> dict[str, Any]:
    if not FILESYSTEM.exists():
        message = f"{FILESYSTEM} is missing: run `npm ci --prefix tests/npm` (as .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return {"command": str(FILESYSTEM), "args": [str(d) for d in directories]}


class RootsHost(Host):
    """A host whose roots the test sets; counts how often it was asked for them."""

    def __init__(self, roots: list[Path]) -> None:
        super().__init__()
        self.roots = roots
        self.asked = 0

    async def on_roots(self, ctx: ClientRequestContext) -> Any:
        self.asked += 1
        self._tell()
        return types.ListRootsResult(roots=[types.Root(uri=p.as_uri(), name=p.name) for p in self.roots])


async def allowed(client: Client) -> set[Path]:
    result = await client.call_tool("fs_list_allowed_directories", {})
    text = "".join(block.text for block in result.content if isinstance(block, types.TextContent))
    return {Path(line) for line in text.splitlines()[1:] if line.strip()}


async def wait_allowed(client: Client, host: RootsHost, asked: int, expected: set[Path]) -> None:
    """Once the host has been asked for its roots `asked` times, the server's directories become `expected`."""
    await host.wait_for(lambda: host.asked >= asked, f"roots/list number {asked} from the server")
    with anyio.fail_after(WAIT):
        while (found := await allowed(client)) != expected:
            assert found, "the server lost every allowed directory"
            await anyio.sleep(POLL)  # the server applies the answer on its own time


async def read(client: Client, path: Path) -> types.CallToolResult:
    return await client.call_tool("fs_read_text_file", {"path": str(path)})


@asynccontextmanager
async def after_the_childs_first_ask(params: StdioServerParameters, log_file: Path) -> AsyncIterator[Any]:
    """The hub over stdio, but the host says nothing until the child's first roots request was refused."""
    async with stdio_client(params) as streams:
        await wait_for_log(log_file, "child_stderr", lambda e: "Failed to request initial roots" in e["line"])
        yield streams


def directories(base: Path, *names: str) -> list[Path]:
    """Directories with a note.txt each, by their real path (the server names directories so)."""
    found = []
    for name in names:
        directory = base.resolve() / name
        directory.mkdir()
        (directory / "note.txt").write_text(f"in {name}\n")
        found.append(directory)
    return found


def http_host(url: str, host: RootsHost) -> Client:
    return Client(
        url,
        mode="legacy",
        message_handler=host.on_message,
        list_roots_callback=host.on_roots,
        read_timeout_seconds=WAIT,
    )


@pytest.mark.parametrize("host_arrives", ["at once", "after the child asked"])
async def test_the_servers_allowed_directories_follow_the_hosts_roots(tmp_path: Path, host_arrives: str) -> None:
    first, second, third, initial = directories(tmp_path, "first", "second", "third", "initial")
    config = write_config(tmp_path, {"fs": filesystem_server(initial)})
    host = RootsHost([first, second])
    log_file = tmp_path / "hub.log"
    params = hub_params(config, log_file)
    client = Client(
        params if host_arrives == "at once" else after_the_childs_first_ask(params, log_file),
        mode="legacy",
        message_handler=host.on_message,
        list_roots_callback=host.on_roots,
        read_timeout_seconds=WAIT,
    )
    async with client:
        await wait_for_tools(client, host, {"fs_list_allowed_directories", "fs_read_text_file"})
        # Started before the host, the server was refused its first roots/list (nobody to ask); it is told to ask
        # again once the host has initialized. Started with the host there, its first one goes to the host.
        await wait_allowed(client, host, 1, {first, second})
        inside = await read(client, second / "note.txt")
        assert not inside.is_error, inside
        assert "in second" in str(inside.content[0])
        outside = await read(client, initial / "note.txt")  # its command line's directory no longer counts
        assert outside.is_error, outside
        assert "access denied" in str(outside.content[0]).lower()

        asked = host.asked
        host.roots = [third]
        await client.send_roots_list_changed()
        await wait_allowed(client, host, asked + 1, {third})
        assert not (await read(client, third / "note.txt")).is_error
        assert (await read(client, first / "note.txt")).is_error


async def test_over_http_the_one_session_connected_is_asked(tmp_path: Path) -> None:
    """A shared child's roots/list outside any call goes to the one HTTP session there is (on its GET stream)."""
    mine, later, initial = directories(tmp_path, "mine", "later", "initial")
    config = write_config(tmp_path, {"fs": filesystem_server(initial)})
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        host = RootsHost([mine])
        async with http_host(url, host) as client:
            await wait_for_tools(client, host, {"fs_list_allowed_directories"})
            await wait_allowed(client, host, 1, {mine})
            asked = host.asked
            host.roots = [later]
            await client.send_roots_list_changed()
            await wait_allowed(client, host, asked + 1, {later})


async def test_with_per_host_sessions_each_host_gets_its_own_roots(tmp_path: Path) -> None:
    """`sessions: per-host`: each HTTP session's own process of the child asks that session, and only it."""
    ada_dir, bob_dir, initial = directories(tmp_path, "ada", "bob", "initial")
    config = write_config(tmp_path, {"fs": {**filesystem_server(initial), "sessions": "per-host"}})
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        ada, bob = RootsHost([ada_dir]), RootsHost([bob_dir])
        async with http_host(url, ada) as a, http_host(url, bob) as b:
            for host, client, directory in ((ada, a, ada_dir), (bob, b, bob_dir)):
                await wait_for_tools(client, host, {"fs_list_allowed_directories"})
                await allowed(client)  # a session's own process starts with its first call
                await wait_allowed(client, host, 1, {directory})
            assert (await read(a, bob_dir / "note.txt")).is_error
            assert not (await read(b, bob_dir / "note.txt")).is_error


@asynccontextmanager
async def slow_read(client: Client, fifo: Path) -> AsyncIterator[Any]:
    """A `read_text_file` of a named pipe, in flight at the server until the block ends: then the pipe gets a line
    and is closed, and the call is answered. Yields once the server has the pipe open (the call is in flight)."""
    os.mkfifo(fifo)
    answer: dict[str, types.CallToolResult] = {}

    async def call() -> None:
        answer["result"] = await read(client, fifo)

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        with anyio.fail_after(WAIT):
            while True:  # opening the write end without blocking succeeds once the server has opened the read end
                try:
                    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                    break
                except OSError:
                    await anyio.sleep(POLL)
        try:
            yield answer
        finally:
            os.write(writer, b"slow answer\n")
            os.close(writer)
    result = answer["result"]
    assert not result.is_error and "slow answer" in str(result.content[0]), result


async def roots_change_during_calls(client: Client, host: RootsHost, base: Path, rounds: int = 20) -> None:
    """`rounds` times: a call to the server is in flight as the host's roots change, and ends just then; the
    server's new roots/list is the session's, not the call's, and its directories are the new roots every time."""
    for n in range(rounds):
        (new,) = directories(base.parent, f"round-{n}")
        async with slow_read(client, base / f"pipe-{n}"):
            asked = host.asked
            host.roots = [base, new]
            await client.send_roots_list_changed()
        await wait_allowed(client, host, asked + 1, {base, new})


async def test_roots_changed_while_a_call_is_in_flight_reach_the_server_every_time(tmp_path: Path) -> None:
    (base, initial) = directories(tmp_path, "base", "initial")
    config = write_config(tmp_path, {"fs": filesystem_server(initial)})
    host = RootsHost([base])
    client = Client(
        hub_params(config, tmp_path / "hub.log"),
        mode="legacy",
        message_handler=host.on_message,
        list_roots_callback=host.on_roots,
        read_timeout_seconds=WAIT,
    )
    async with client:
        await wait_for_tools(client, host, {"fs_list_allowed_directories", "fs_read_text_file"})
        await wait_allowed(client, host, 1, {base})
        await roots_change_during_calls(client, host, base)


@pytest.mark.parametrize("sessions", ["shared", "per-host"])
async def test_over_http_roots_changed_while_a_call_is_in_flight_reach_the_server_every_time(
    tmp_path: Path, sessions: str
) -> None:
    (base, initial) = directories(tmp_path, "base", "initial")
    config = write_config(tmp_path, {"fs": {**filesystem_server(initial), "sessions": sessions}})
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        host = RootsHost([base])
        async with http_host(url, host) as client:
            await wait_for_tools(client, host, {"fs_list_allowed_directories"})
            await allowed(client)  # a per-host session's own process starts with its first call
            await wait_allowed(client, host, 1, {base})
            await roots_change_during_calls(client, host, base)
