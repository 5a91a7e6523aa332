"""The protocol-revision matrix through `hub serve --http`: a 2025-11-25 host and a 2026-07-28 host, each against a
handshake-era child (`k25`, `protocol: legacy`) and a 2026-07-28 child (`k26`, `protocol: 2026-07-28`).

Every cell is checked for: list, call, list_changed, progress, logs, cancellation, and the child asking the host
for input (sampling / elicitation as real requests, or as input-required rounds). docs/protocols.md has the
matrix with what the hub does in each cell.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from pydantic import TypeAdapter

from tests.support.children import python_child, write_config
from tests.support.mcp_client import Host, connect_host, hub_params, wait_for_tools
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT, wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

RAW: Any = TypeAdapter(dict[str, Any])
MODERN = "2026-07-28"
SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@dataclass
class Hub:
    """One hub for the module: over HTTP (a new host session per test) or stdio (one host process per era)."""

    front: str
    url: str | None
    log_file: Path
    tmp: Path
    stdio_hosts: dict[str, tuple[Client, Host]] = field(default_factory=dict)


@dataclass
class Cell:
    host_mode: str
    child: str
    client: Client
    host: Host

    @property
    def modern_host(self) -> bool:
        return self.host_mode != "legacy"

    @property
    def modern_child(self) -> bool:
        return self.child == "k26"

    def tool(self, name: str) -> str:
        return f"{self.child}_{name}"

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """tools/call as the raw JSON the hub sent (no client-side driving of input-required rounds)."""
        params = types.CallToolRequestParams(name=self.tool(name), arguments=arguments or {})
        result: dict[str, Any] = await self.client.session.send_request(types.CallToolRequest(params=params), RAW)
        return result


@pytest.fixture(scope="module", params=["http", "stdio"])
async def hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Hub]:
    front: str = request.param
    tmp = tmp_path_factory.mktemp(f"revisions-{front}")
    servers = {
        "k25": {**python_child("tests.children.kitchen", "--name", "k25"), "protocol": "legacy"},
        "k26": {**python_child("tests.children.kitchen", "--name", "k26"), "protocol": MODERN},
    }
    config = write_config(tmp, servers)
    log_file = tmp / "hub.log"
    expected = {"k25_echo", "k26_echo"}
    if front == "http":
        async with serve_hub_http(config, log_file) as url:
            watcher = Host()
            async with connect_host(url, watcher) as probe:
                await wait_for_tools(probe, watcher, expected)
            yield Hub(front, url, log_file, tmp)
        return
    old, new = Host(), Host()
    async with (
        connect_host(hub_params(config, log_file), old, mode="legacy") as old_client,
        connect_host(hub_params(config, tmp / "hub-2026.log"), new, mode=MODERN, log_level="debug") as new_client,
    ):
        await wait_for_tools(old_client, old, expected)
        await wait_for_tools_listening(new_client, expected)
        yield Hub(front, None, log_file, tmp, {"legacy": (old_client, old), MODERN: (new_client, new)})


async def wait_for_tools_listening(client: Client, names: set[str]) -> None:
    """A 2026 host's wait_for_tools: it hears list_changed only on subscriptions/listen."""
    with anyio.fail_after(WAIT):
        async with client.listen(tools_list_changed=True) as subscription:
            if names <= {t.name for t in (await client.list_tools()).tools}:
                return
            async for _event in subscription:
                if names <= {t.name for t in (await client.list_tools()).tools}:
                    return


CELLS = [("legacy", "k25"), ("legacy", "k26"), (MODERN, "k25"), (MODERN, "k26")]
IDS = ["host2025-child2025", "host2025-child2026", "host2026-child2025", "host2026-child2026"]


@pytest.fixture(params=CELLS, ids=IDS)
async def cell(request: pytest.FixtureRequest, hub: Hub) -> AsyncIterator[Cell]:
    host_mode, child = request.param
    answer = f"sampled for {host_mode}/{child}"
    if hub.url is None:  # stdio: the module's host of that era, its records cleared
        client, host = hub.stdio_hosts[host_mode]
        for records in (host.notifications, host.logs, host.sampled, host.elicited):
            records.clear()
        host.sampling_answer = answer
        yield Cell(host_mode, child, client, host)
        return
    host = Host(sampling_answer=answer)
    # A 2026 host opts in to logs per request; a 2025 host uses logging/setLevel (in test_logs).
    log_level: types.LoggingLevel | None = "debug" if host_mode != "legacy" else None
    async with connect_host(hub.url, host, mode=host_mode, log_level=log_level) as client:
        assert (client.protocol_version == MODERN) == (host_mode != "legacy")
        yield Cell(host_mode, child, client, host)


def text_of(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


async def test_list_and_call(cell: Cell) -> None:
    names = {t.name for t in (await cell.client.list_tools()).tools}
    assert {cell.tool("echo"), cell.tool("sample"), "hub_health"} <= names
    result = await cell.call("echo", {"text": "héllo"})
    assert text_of(result) == "héllo"
    state = await cell.call("state")
    assert state["structuredContent"]["protocol_version"] == ("2025-11-25" if cell.child == "k25" else MODERN)
    if cell.modern_host:  # the hub stamps its own identity, not the child's
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-hub"
    else:
        assert "resultType" not in result and "io.modelcontextprotocol/serverInfo" not in (result.get("_meta") or {})


async def test_list_changed(cell: Cell) -> None:
    name = f"new_{cell.host_mode.replace('-', '')}_{cell.child}"
    exposed = cell.tool(name)
    if not cell.modern_host:
        await cell.call("add_tool", {"name": name})
        await wait_for_tools(cell.client, cell.host, {exposed})
        assert any(isinstance(n, types.ToolListChangedNotification) for n in cell.host.notifications)
    else:
        async with cell.client.listen(tools_list_changed=True) as subscription:
            await cell.call("add_tool", {"name": name})
            with anyio.fail_after(WAIT):
                async for event in subscription:
                    names = {t.name for t in (await cell.client.list_tools()).tools}
                    if isinstance(event, ToolsListChanged) and exposed in names:
                        break
    assert text_of(await cell.call(name)) == f"dynamic {name}"


async def test_progress(cell: Cell) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    result = await cell.client.call_tool(cell.tool("progress"), {"steps": 3}, progress_callback=on_progress)
    assert isinstance(result.content[0], types.TextContent) and result.content[0].text == "done 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_logs(cell: Cell) -> None:
    if not cell.modern_host:
        await cell.client.set_logging_level("debug")  # toward a 2026 child the hub turns it into the opt-in
    message = f"log for {cell.host_mode}/{cell.child}"
    await cell.call("log", {"level": "warning", "message": message})
    await cell.host.wait_for(lambda: any(e.data == message for e in cell.host.logs), "log")
    entry = next(e for e in cell.host.logs if e.data == message)
    assert entry.level == "warning" and entry.logger == f"{cell.child}/kitchen"


async def test_cancellation(cell: Cell, hub: Hub) -> None:
    marker = hub.tmp / f"cancel-{cell.host_mode}-{cell.child}-{len(list(hub.tmp.iterdir()))}"
    async with anyio.create_task_group() as tg:
        tg.start_soon(cell.call, "wait_for_cancel", {"marker": str(marker), "seconds": WAIT})
        await wait_for_file(Path(f"{marker}.started"))
        tg.cancel_scope.cancel()
    await wait_for_file(marker)
    assert marker.read_text() == "cancelled"
    assert text_of(await cell.call("echo", {"text": "after"})) == "after"


async def test_sampling_and_elicitation(cell: Cell) -> None:
    """Real requests (2025 host), input-required rounds (2026 host); the host's SDK client answers either."""
    sampled = await cell.client.call_tool(cell.tool("sample"), {"prompt": "hi"})
    assert isinstance(sampled.content[0], types.TextContent)
    assert sampled.content[0].text == cell.host.sampling_answer
    elicited = await cell.client.call_tool(cell.tool("elicit"), {"message": "who?"})
    assert isinstance(elicited.content[0], types.TextContent) and elicited.content[0].text == "accept:{'name': 'Ada'}"
    both = await cell.client.call_tool(cell.tool("both"), {"prompt": "p", "message": "m"})
    assert isinstance(both.content[0], types.TextContent)
    assert both.content[0].text == f"{cell.host.sampling_answer}|accept:{json.dumps({'name': 'Ada'})}"
    # The host was asked (for real or in rounds) and saw the child's requestedSchema unchanged.
    assert len(cell.host.sampled) == 2 and len(cell.host.elicited) == 2
    assert all(
        isinstance(e, types.ElicitRequestFormParams) and e.requested_schema == SCHEMA for e in cell.host.elicited
    )


async def test_how_the_input_request_travels(cell: Cell) -> None:
    """The first answer a host gets when the child needs input, seen raw (no client-side driving)."""
    if not cell.modern_host:
        # 2025 host: a real sampling request, whichever era the child speaks (the hub drives a 2026 child's round).
        first = await cell.call("sample", {"prompt": "hi"})
        assert text_of(first) == cell.host.sampling_answer
        assert len(cell.host.sampled) == 1
        return
    first = await cell.call("sample", {"prompt": "hi"})
    assert first["resultType"] == "input_required" and not cell.host.sampled
    ((key, request),) = first["inputRequests"].items()
    assert request["method"] == "sampling/createMessage"
    assert request["params"]["messages"][0]["content"]["text"] == "hi"
    if cell.modern_child:  # passed through as the child sent it
        assert key == "sample" and "requestState" not in first
    else:  # a 2025 child's parked request, parked in a round by the hub
        assert first["requestState"].startswith("hub-round:")
    answer = types.CreateMessageResult(role="assistant", content=types.TextContent(text="by hand"), model="m")
    params = types.CallToolRequestParams(
        name=cell.tool("sample"),
        arguments={"prompt": "hi"},
        input_responses={key: answer},
        request_state=first.get("requestState"),
    )
    final: dict[str, Any] = await cell.client.session.send_request(types.CallToolRequest(params=params), RAW)
    assert text_of(final) == "by hand"


async def test_an_unknown_round_is_refused_clearly(cell: Cell) -> None:
    if not cell.modern_host:
        pytest.skip("only a 2026 host retries rounds")
    params = types.CallToolRequestParams(
        name=cell.tool("sample"), arguments={"prompt": "hi"}, input_responses={}, request_state="hub-round:nope"
    )
    if cell.modern_child:
        pytest.skip("a 2026 child's requestState is its own to judge")
    with pytest.raises(MCPError) as raised:
        await cell.client.session.send_request(types.CallToolRequest(params=params), RAW)
    assert "unknown or expired" in raised.value.error.message
    # A real round's state resumes only its own call, not another tool's.
    first = await cell.call("sample", {"prompt": "hi"})
    other = types.CallToolRequestParams(
        name=cell.tool("echo"), arguments={"text": "x"}, input_responses={}, request_state=first["requestState"]
    )
    with pytest.raises(MCPError) as raised:
        await cell.client.session.send_request(types.CallToolRequest(params=other), RAW)
    assert "unknown or expired" in raised.value.error.message
    # Finish the parked call (it would otherwise stay in flight on the shared connection until its timeout).
    (key,) = first["inputRequests"]
    answer = types.CreateMessageResult(role="assistant", content=types.TextContent(text="done"), model="m")
    own = types.CallToolRequestParams(
        name=cell.tool("sample"),
        arguments={"prompt": "hi"},
        input_responses={key: answer},
        request_state=first["requestState"],
    )
    assert text_of(await cell.client.session.send_request(types.CallToolRequest(params=own), RAW)) == "done"


async def test_a_host_without_the_capability_is_not_asked(cell: Cell, hub: Hub) -> None:
    """The child gets a clear error instead (a 2026 host gets a 2026 child's round and refuses it itself)."""
    if hub.url is None:
        pytest.skip("one HTTP session per capability set is enough")
    if cell.modern_host and cell.modern_child:
        pytest.skip("the round passes through; the host's own SDK refuses what it cannot do")
    async with connect_host(hub.url, mode=cell.host_mode, capabilities=False) as bare:
        params = types.CallToolRequestParams(name=cell.tool("sample"), arguments={"prompt": "hi"})
        with pytest.raises(MCPError) as raised:
            await bare.session.send_request(types.CallToolRequest(params=params), RAW)
    assert "did not declare the sampling capability" in raised.value.error.message
