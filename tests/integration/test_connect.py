"""`hub connect URL`: a host that only starts local processes, bridged over stdio to `hub serve --http` with auth.

A real HTTP hub with a token file and the kitchen child; the SDK's client as the host, once over stdio through
`python -m hub connect` and once directly over HTTP with the same token: both must see the same listings, results,
progress, log messages, list_changed and sampling / elicitation / roots round trips. Then the HTTP hub is killed
and started again on the same port while the bridge stays up.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import yaml
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import StdioServerParameters
from mcp.client import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.integration.test_team import create_token
from tests.support.children import python_child
from tests.support.keyring import keyring_package
from tests.support.logs import log_events, wait_for_log
from tests.support.mcp_client import Host, connect_host, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import serve_http_command, serve_hub_http, stop_process, wait_listening
from tests.support.system import free_port
from tests.support.waits import WAIT, wait_for_file

pytestmark = pytest.mark.anyio

TOKEN_ENV = "HUB_TEST_TOKEN"


def team_config(directory: Path) -> Path:
    path = directory / "servers.yaml"
    document = {
        "hub": {"startup_listing_wait": 60},  # a first listing waits (bounded) for kitchen on a loaded machine too
        "auth": {"tokens": "tokens.json"},
        "servers": {"kitchen": python_child("tests.children.kitchen")},
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def bridge_command(url: str, log_file: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "hub", "connect", url, "--log-file", str(log_file), *extra]


def bridge(url: str, log_file: Path, env: dict[str, str], *extra: str) -> StdioServerParameters:
    """The host's config entry for the bridge: `hub connect URL`, the token in the environment."""
    command = bridge_command(url, log_file, *extra)
    return StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO), env=env)


@asynccontextmanager
async def direct(url: str, token: str, host: Host) -> AsyncIterator[Client]:
    """The reference: the SDK's client straight to the hub over HTTP, with the same token."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, connect_host(streamable_http_client(url, http_client=http), host) as client:
        yield client


def dumped(items: list[Any]) -> list[dict[str, Any]]:
    return [item.model_dump(mode="json", exclude_none=True) for item in items]


async def listings(client: Client) -> dict[str, Any]:
    return {
        "tools": dumped((await client.list_tools()).tools),
        "prompts": dumped((await client.list_prompts()).prompts),
        "resources": dumped((await client.list_resources()).resources),
        "templates": dumped((await client.list_resource_templates()).resource_templates),
    }


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments or {}, **kwargs)
    return result.model_dump(mode="json", exclude_none=True)


async def exercise(client: Client, host: Host) -> dict[str, Any]:
    """Everything a host does with the kitchen child through the hub, and what it saw, for comparison."""
    seen: dict[str, Any] = {"listings": await listings(client)}
    seen["echo"] = await call(client, "kitchen_echo", {"text": "hello"})
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    seen["progress"] = await call(client, "kitchen_progress", {"steps": 3}, progress_callback=on_progress)
    seen["progress_notifications"] = progress
    await client.set_logging_level("debug")
    seen["log"] = await call(client, "kitchen_log", {"level": "warning", "message": "careful"})
    await host.wait_for(lambda: any(entry.data == "careful" for entry in host.logs), "log")
    seen["logs"] = [(e.level, e.logger, e.data) for e in host.logs if e.data == "careful"]
    seen["sample"] = await call(client, "kitchen_sample", {"prompt": "say hi"})
    seen["sampled"] = dumped(host.sampled)
    seen["elicit"] = await call(client, "kitchen_elicit", {"message": "who?"})
    seen["elicited"] = dumped(host.elicited)
    seen["roots"] = await call(client, "kitchen_roots")
    return seen


async def test_a_host_through_the_bridge_sees_what_a_direct_http_client_sees(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    token = create_token(config, "alice")
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        direct_host, bridged_host = Host(), Host()
        async with (
            direct(url, token, direct_host) as reference,
            connect_host(
                bridge(url, tmp_path / "bridge.log", {TOKEN_ENV: token}, "--token-env", TOKEN_ENV), bridged_host
            ) as bridged,
        ):
            await wait_for_tools(reference, direct_host, {"kitchen_echo"})
            expected = await exercise(reference, direct_host)
            got = await exercise(bridged, bridged_host)
            assert got == expected
            assert got["sample"]["content"][0]["text"] == bridged_host.sampling_answer
            assert got["roots"]["content"][0]["text"] == "file:///work/project"
            assert [value for value, _, _ in got["progress_notifications"]] == [1, 2, 3]

            # list_changed: a tool added through the bridge reaches both hosts, and both list it
            assert (await call(bridged, "kitchen_add_tool", {"name": "fresh"}))["content"][0]["text"] == "added"
            for host in (bridged_host, direct_host):
                await host.wait_for(
                    lambda h=host: any(isinstance(n, types.ToolListChangedNotification) for n in h.notifications),
                    "tools/list_changed",
                )
            await wait_for_tools(bridged, bridged_host, {"kitchen_fresh"})
            await wait_for_tools(reference, direct_host, {"kitchen_fresh"})
            assert await listings(bridged) == await listings(reference)

        # A 2026-07-28 host (no initialize; each request carries its envelope) passes through too.
        async with connect_host(
            bridge(url, tmp_path / "bridge-2026.log", {TOKEN_ENV: token}, "--token-env", TOKEN_ENV),
            mode="2026-07-28",
        ) as modern:
            names = {tool.name for tool in (await modern.list_tools()).tools}
            assert {"kitchen_echo", "kitchen_fresh"} <= names
            assert (await call(modern, "kitchen_echo", {"text": "now"}))["content"][0]["text"] == "now"

    log_text = (tmp_path / "bridge.log").read_text()
    assert token not in log_text
    assert log_events(tmp_path / "bridge.log", "connect_session_closed"), "the session is ended when the host leaves"


async def start_hub(config: Path, port: int, log: Path, err: Any) -> Process:
    process = await anyio.open_process(
        serve_http_command(config, port, log), cwd=REPO, stdout=subprocess.DEVNULL, stderr=err
    )
    try:
        await wait_listening(process, port)
    except BaseException:
        await stop_process(process)
        raise
    return process


async def test_the_bridge_survives_the_hub_restarting(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    token = create_token(config, "alice")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    host = Host()
    with (tmp_path / "hub.err").open("wb") as err:
        first = await start_hub(config, port, tmp_path / "hub.log", err)
        second: Process | None = None
        try:
            async with connect_host(
                bridge(url, tmp_path / "bridge.log", {TOKEN_ENV: token}, "--token-env", TOKEN_ENV), host
            ) as client:
                await wait_for_tools(client, host, {"kitchen_echo"})
                await client.set_logging_level("debug")
                assert (await call(client, "kitchen_echo", {"text": "before"}))["content"][0]["text"] == "before"

                # A call in flight when the hub dies is answered with an error, not left waiting.
                marker = tmp_path / "marker"
                failed: list[MCPError] = []

                async def in_flight() -> None:
                    with pytest.raises(MCPError) as lost:
                        await client.call_tool("kitchen_wait_for_cancel", {"marker": str(marker), "seconds": 60})
                    failed.append(lost.value)

                with anyio.fail_after(WAIT):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(in_flight)
                        await wait_for_file(Path(f"{marker}.started"))
                        first.kill()
                assert "lost" in str(failed[0]), failed[0]
                with anyio.fail_after(WAIT):
                    await first.wait()

                # A call made while the hub is down: the bridge retries it until the hub is back, finds its session
                # forgotten, makes a new one with the host's own initialize, and sends the call again.
                seen = len(host.notifications)
                answers: list[dict[str, Any]] = []

                async def meanwhile() -> None:
                    answers.append(await call(client, "kitchen_echo", {"text": "after"}))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(meanwhile)
                    await wait_for_log(tmp_path / "bridge.log", "connect_hub_unreachable")
                    second = await start_hub(config, port, tmp_path / "hub.log", err)
                assert answers[0]["content"][0]["text"] == "after"
                await host.wait_for(
                    lambda: any(isinstance(n, types.ToolListChangedNotification) for n in host.notifications[seen:]),
                    "tools/list_changed after the restart",
                )
                # The host's log level was set again on the new session: the child's log messages still come.
                await call(client, "kitchen_log", {"level": "info", "message": "still here"})
                await host.wait_for(lambda: any(e.data == "still here" for e in host.logs), "log after the restart")
        finally:
            await stop_process(first)
            if second is not None:
                await stop_process(second)
    renewed = await wait_for_log(tmp_path / "bridge.log", "connect_session_renewed")
    assert renewed["renewals"] == 1


async def initialize_error(params: StdioServerParameters) -> MCPError:
    """The error the host's `initialize` got through the bridge (the SDK raises it inside exception groups)."""
    try:
        async with connect_host(params):
            pass
    except Exception as exc:
        error: BaseException = exc
        while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
            error = error.exceptions[0]
        assert isinstance(error, MCPError), exc
        return error
    raise AssertionError("initialize succeeded")


async def test_a_refused_token_is_a_clear_error_naming_where_it_came_from(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    token = create_token(config, "alice")
    wrong = "hub_not-a-token-of-this-hub-0123456789"
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        log = tmp_path / "wrong.log"
        refused = await initialize_error(bridge(url, log, {TOKEN_ENV: wrong}, "--token-env", TOKEN_ENV))
        assert f"the token from ${TOKEN_ENV} was refused" in refused.message
        assert "401" in refused.message
        assert wrong not in log.read_text()
        assert log_events(log, "connect_token_refused")[0]["token_source"] == f"${TOKEN_ENV}"

        # Without --token-env, $HUB_TOKEN; unset, no token is sent, and the error says so.
        missing = await initialize_error(bridge(url, tmp_path / "none.log", {}))
        assert "no token was sent ($HUB_TOKEN is not set)" in missing.message

        # The token from the OS keyring (a stand-in `keyring` module: the package is optional).
        env = keyring_package(tmp_path, {"team-hub:token": token})
        async with connect_host(bridge(url, tmp_path / "keyring.log", env, "--keyring", "team-hub")) as client:
            assert "kitchen_echo" in {tool.name for tool in (await client.list_tools()).tools}
        with anyio.fail_after(WAIT):
            absent = await anyio.run_process(
                bridge_command(url, tmp_path / "x.log", "--keyring", "other-hub"),
                env={**os.environ, **env},
                cwd=REPO,
                check=False,
            )
        assert absent.returncode == 2
        assert "keyring set other-hub token" in absent.stderr.decode()

    if importlib.util.find_spec("keyring") is None:  # optional, and not a test dependency: when it is not there,
        # --keyring is a clear error before anything starts
        with anyio.fail_after(WAIT):
            no_keyring = await anyio.run_process(
                bridge_command("http://127.0.0.1:9/mcp", tmp_path / "y.log", "--keyring", "team-hub"),
                cwd=REPO,
                check=False,
            )
        assert no_keyring.returncode == 2
        said = no_keyring.stderr.decode()
        assert "needs the 'keyring' package" in said and "pip install keyring" in said


async def read_until(reader: BufferedByteReceiveStream, wanted: set[Any]) -> dict[Any, dict[str, Any]]:
    """Lines from the bridge's stdout until each id in `wanted` has its answer; every line must be JSON-RPC."""
    found: dict[Any, dict[str, Any]] = {}
    with anyio.fail_after(WAIT):
        while not wanted <= set(found):
            message = json.loads(await reader.receive_until(b"\n", 1 << 20))
            assert message["jsonrpc"] == "2.0"
            if "id" in message and "method" not in message:
                found[message["id"]] = message
    return found


def line(message: dict[str, Any] | str) -> bytes:
    return (message if isinstance(message, str) else json.dumps(message)).encode() + b"\n"


async def test_bad_lines_are_answered_and_closing_stdin_ends_the_session(tmp_path: Path) -> None:
    config = team_config(tmp_path)
    token = create_token(config, "alice")
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        process = await anyio.open_process(
            bridge_command(url, tmp_path / "bridge.log", "--token-env", TOKEN_ENV),
            env={**os.environ, TOKEN_ENV: token},
            cwd=REPO,
        )
        try:
            assert process.stdin is not None and process.stdout is not None
            reader = BufferedByteReceiveStream(process.stdout)
            initialize = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            }
            await process.stdin.send(
                line("this is not JSON")  # no id to answer: logged, and the bridge goes on
                + line('{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":NaN}}')
                + line('[{"jsonrpc":"2.0","id":8,"method":"ping"}]')
                + line({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": [1]})
                + line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
            )
            answers = await read_until(reader, {1, 7, 8, 9})
            assert answers[7]["error"]["code"] == -32700
            assert "batches are not supported" in answers[8]["error"]["message"]
            assert answers[9]["error"]["code"] == -32602
            assert answers[1]["result"]["serverInfo"]["name"] == "mcp-hub"
            await process.stdin.send(
                line({"jsonrpc": "2.0", "method": "notifications/initialized"})
                + line(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": "kitchen_echo", "arguments": {"text": "hi"}},
                    }
                )
            )
            answer = (await read_until(reader, {2}))[2]
            assert answer["result"]["content"][0]["text"] == "hi"
            await process.stdin.aclose()
            with anyio.fail_after(WAIT):
                assert await process.wait() == 0
        finally:
            await stop_process(process)
        closed = await wait_for_log(tmp_path / "hub.log", "http_session_closed")
        assert "DELETE" in closed["reason"]
    assert log_events(tmp_path / "bridge.log", "connect_host_message_dropped")


async def test_at_end_of_input_the_answers_to_what_was_sent_still_come(tmp_path: Path) -> None:
    """`printf '<initialize>\\n...' | hub connect URL`: stdin is closed at once, after the lines; as `hub serve` does,
    hub connect prints the answer to each request before it exits 0."""
    config = team_config(tmp_path)
    token = create_token(config, "alice")
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    echo = {"name": "kitchen_echo", "arguments": {"text": "hi"}}
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        with anyio.fail_after(WAIT):
            done = await anyio.run_process(
                bridge_command(url, tmp_path / "bridge.log", "--token-env", TOKEN_ENV),
                input=line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
                + line({"jsonrpc": "2.0", "method": "notifications/initialized"})
                + line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": echo}),
                env={**os.environ, TOKEN_ENV: token},
                cwd=REPO,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()
    answers = {m["id"]: m for m in map(json.loads, done.stdout.decode().splitlines()) if "id" in m}
    assert answers[1]["result"]["serverInfo"]["name"] == "mcp-hub"
    assert answers[2].get("result", {}).get("content", [{}])[0].get("text") == "hi", answers[2]
