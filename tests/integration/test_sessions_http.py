"""Many host sessions on one `hub serve --http`: shared children, and child-to-host requests that reach the
session whose call caused them (and no other).

Children: `lane` is the kitchen child with `sessions: per-host` (each host session gets its own connection,
so routing is exact), `shared` is the kitchen child on one connection for everybody (routing by the host
requests in flight; refused when several sessions are in flight), and `remote` is the kitchen child served
over Streamable HTTP, also per-host.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from tests.support.children import python_child, write_config
from tests.support.logs import log_events, wait_for_log
from tests.support.mcp_client import Host, connect_host, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http, stop_process
from tests.support.waits import WAIT, wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

RAW: Any = TypeAdapter(dict[str, Any])
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@dataclass
class Hub:
    url: str
    log_file: Path
    tmp: Path


@pytest.fixture(scope="module")
async def hub(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Hub]:
    tmp = tmp_path_factory.mktemp("sessions")
    port_file = tmp / "remote.port"
    remote_args = [
        sys.executable,
        "-m",
        "tests.children.kitchen",
        "--name",
        "remote",
        "--transport",
        "http",
        "--port",
        "0",
        "--port-file",
        str(port_file),
    ]
    async with await anyio.open_process(remote_args, cwd=REPO) as remote:
        try:
            await wait_for_file(port_file)
            servers = {
                "lane": {**python_child("tests.children.kitchen"), "sessions": "per-host", "max_sessions": 4},
                "shared": python_child("tests.children.kitchen"),
                "remote": {"url": f"http://127.0.0.1:{port_file.read_text()}/mcp", "sessions": "per-host"},
            }
            config = write_config(tmp, servers)
            log_file = tmp / "hub.log"
            async with serve_hub_http(config, log_file) as url:
                watcher = Host()
                async with connect_host(url, watcher) as probe:
                    await wait_for_tools(probe, watcher, {"lane_both", "shared_both", "remote_both"})
                yield Hub(url, log_file, tmp)
        finally:
            await stop_process(remote, grace=10)


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments or {}))
    result: dict[str, Any] = await client.session.send_request(request, RAW)
    return result


def text_of(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


def pending_together(hosts: list[Host]) -> Any:
    """A `Host.hold` that answers only once every host has both its sampling and elicitation request pending."""
    everyone = anyio.Event()

    async def hold() -> None:
        if all(h.sampled and h.elicited for h in hosts):
            everyone.set()
        with anyio.fail_after(WAIT):
            await everyone.wait()

    return hold


@pytest.mark.parametrize("server", ["lane", "remote"])
async def test_two_sessions_asked_at_once_each_get_their_own_answers(hub: Hub, server: str) -> None:
    ada = Host(sampling_answer="from ada", elicit_answer={"name": "Ada"})
    bob = Host(sampling_answer="from bob", elicit_answer={"name": "Bob"})
    ada.hold = bob.hold = pending_together([ada, bob])
    results: dict[str, dict[str, Any]] = {}
    async with connect_host(hub.url, ada) as a, connect_host(hub.url, bob) as b:

        async def run(name: str, client: Client) -> None:
            results[name] = await call(client, f"{server}_both", {"prompt": f"hi {name}", "message": "who?"})

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "ada", a)
                tg.start_soon(run, "bob", b)
    assert text_of(results["ada"]) == 'from ada|accept:{"name": "Ada"}'
    assert text_of(results["bob"]) == 'from bob|accept:{"name": "Bob"}'
    # Each session saw exactly its own call's requests, the elicitation schema exactly as the child sent it.
    for host, name in ((ada, "ada"), (bob, "bob")):
        assert [m.content.text for p in host.sampled for m in p.messages] == [f"hi {name}"]  # type: ignore[union-attr]
        assert len(host.elicited) == 1
        elicited = host.elicited[0]
        assert isinstance(elicited, types.ElicitRequestFormParams) and elicited.requested_schema == SCHEMA


async def test_each_session_gets_its_own_connection_closed_when_it_ends(hub: Hub) -> None:
    async with connect_host(hub.url) as client:
        assert text_of(await call(client, "lane_echo", {"text": "x"})) == "x"
        opened = await wait_for_log(hub.log_file, "session_connection_opened", lambda e: e["child"] == "lane")
    label = opened["host_session"]
    closed = await wait_for_log(hub.log_file, "session_connection_closed", lambda e: e["host_session"] == label)
    assert closed["child"] == "lane" and closed["error"] is None


async def test_a_shared_child_refuses_a_request_it_cannot_attribute(hub: Hub) -> None:
    busy, asker = Host(), Host()
    marker = hub.tmp / "busy"
    async with connect_host(hub.url, busy) as b, connect_host(hub.url, asker) as a:
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, b, "shared_wait_for_cancel", {"marker": str(marker), "seconds": WAIT})
            await wait_for_file(Path(f"{marker}.started"))
            with pytest.raises(MCPError) as raised:
                await call(a, "shared_sample", {"prompt": "whose?"})
            tg.cancel_scope.cancel()
        # The hub answers the cancelled POST; the SDK's client fails if it is closed before that answer arrives.
        await wait_for_log(hub.log_file, "call", lambda e: e["name"] == "shared_wait_for_cancel")
        await b.send_ping()
    assert "2 host sessions" in raised.value.error.message and "per-host" in raised.value.error.message
    assert not busy.sampled and not asker.sampled, "nobody was asked on a guess"
    assert log_events(hub.log_file, "child_request_ambiguous")


async def test_a_shared_child_asks_the_only_session_in_flight(hub: Hub) -> None:
    ada, bob = Host(sampling_answer="ada here"), Host()
    async with connect_host(hub.url, ada) as a, connect_host(hub.url, bob):
        assert text_of(await call(a, "shared_both", {"prompt": "p", "message": "m"})) == (
            'ada here|accept:{"name": "Ada"}'
        )
    assert not bob.sampled and not bob.elicited


async def test_a_host_without_the_capability_is_not_asked_and_the_child_is_told(hub: Hub) -> None:
    async with connect_host(hub.url, capabilities=False) as client:
        for server in ("shared", "lane"):
            with pytest.raises(MCPError) as raised:
                await call(client, f"{server}_sample", {"prompt": "p"})
            assert "did not declare the sampling capability" in raised.value.error.message


async def test_list_changed_reaches_every_session(hub: Hub) -> None:
    ada, bob = Host(), Host()
    async with connect_host(hub.url, ada) as a, connect_host(hub.url, bob) as b:
        await call(a, "shared_add_tool", {"name": "everyone"})
        for host, client in ((ada, a), (bob, b)):
            await wait_for_tools(client, host, {"shared_everyone"})
            assert any(isinstance(n, types.ToolListChangedNotification) for n in host.notifications)


async def test_progress_and_logs_reach_only_their_own_session(hub: Hub) -> None:
    ada, bob = Host(), Host()
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with connect_host(hub.url, ada) as a, connect_host(hub.url, bob) as b:
        await a.set_logging_level("debug")
        for server in ("shared", "lane"):
            result = await a.call_tool(f"{server}_progress", {"steps": 2}, progress_callback=on_progress)
            assert not result.is_error
            await call(a, f"{server}_log", {"level": "info", "message": f"for ada via {server}"})
            await ada.wait_for(lambda s=server: any(e.data == f"for ada via {s}" for e in ada.logs), "log")  # type: ignore[misc]
        # bob's own call proves his stream works and that nothing of ada's was queued for him
        await call(b, "shared_echo", {"text": "bob"})
    assert seen == [1, 2, 1, 2]
    assert not bob.logs
    assert not [n for n in bob.notifications if isinstance(n, types.ProgressNotification)]


async def test_a_log_read_just_before_its_result_still_finds_its_session(hub: Hub) -> None:
    # The child writes the log line and then the result; the result is taken around the SDK session while the
    # log goes through it, so without care the call is over (and the log has no owner) when the log is handled.
    ada, bob = Host(), Host()
    async with connect_host(hub.url, ada) as a, connect_host(hub.url, bob) as b:
        await a.set_logging_level("debug")
        for i in range(60):
            await call(a, "shared_log", {"level": "info", "message": f"race {i}"})
        await ada.wait_for(lambda: sum(str(e.data).startswith("race ") for e in ada.logs) == 60, "all 60 logs")
        await call(b, "shared_echo", {"text": "bob"})  # bob's stream works; anything misrouted came before this
    assert not [e.data for e in bob.logs if str(e.data).startswith("race ")]


async def test_a_hosts_roots_list_changed_reaches_the_children(hub: Hub) -> None:
    async with connect_host(hub.url) as client:
        await call(client, "lane_echo", {"text": "open my lane"})
        before = {s: json.loads(text_of(await call(client, f"{s}_state")))["roots_changed"] for s in ("shared", "lane")}
        await client.send_roots_list_changed()
        with anyio.fail_after(WAIT):
            for server in ("shared", "lane"):
                # The child's only way to tell: its state tool (a notification has no reply to wait for).
                while json.loads(text_of(await call(client, f"{server}_state")))["roots_changed"] <= before[server]:  # noqa: ASYNC110 - the child process is the only witness
                    await anyio.sleep(0.05)
        roots = await call(client, "lane_roots")
        assert text_of(roots) == "file:///work/project"


async def test_max_sessions_bounds_the_connections_of_a_per_host_child(hub: Hub) -> None:
    async with connect_host(hub.url) as probe:
        await call(probe, "lane_echo", {"text": "x"})

    def lanes_of_ended_sessions_closed(_: dict[str, Any]) -> bool:
        opened = {
            e["host_session"] for e in log_events(hub.log_file, "session_connection_opened") if e["child"] == "lane"
        }
        closed = {
            e["host_session"] for e in log_events(hub.log_file, "session_connection_closed") if e["child"] == "lane"
        }
        return opened <= closed

    await wait_for_log(hub.log_file, "session_connection_closed", lanes_of_ended_sessions_closed)
    # Four (max_sessions) at once are served; a fifth is told why it is not.
    async with (
        connect_host(hub.url) as c1,
        connect_host(hub.url) as c2,
        connect_host(hub.url) as c3,
        connect_host(hub.url) as c4,
        connect_host(hub.url) as c5,
    ):
        for client in (c1, c2, c3, c4):
            assert text_of(await call(client, "lane_echo", {"text": "in"})) == "in"
        refused = await call(c5, "lane_echo", {"text": "out"})
    assert refused["isError"] is True and "max_sessions" in text_of(refused)


async def test_a_sessions_log_level_reaches_its_own_connection(hub: Hub) -> None:
    async with connect_host(hub.url) as client:
        await call(client, "lane_echo", {"text": "open my lane"})
        await client.set_logging_level("error")
        state = await call(client, "lane_state")
        assert state["structuredContent"]["log_level"] == "error"
