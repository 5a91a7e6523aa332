"""URL-mode elicitation (2025-11-25) through the hub: the request, its completion, and error -32042.

`@modelcontextprotocol/server-everything` (npm, pinned) asks in URL mode and fails with -32042, but never completes
an elicitation; our `tests.children.browserflow` does (`notifications/elicitation/complete`), so that its completion
can be seen to reach only the host session that was asked.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError

from tests.support.children import everything_server, python_child, write_config
from tests.support.mcp_client import Host, connect_host, hub_params, wait_for_tools
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

URL_ELICITATION_REQUIRED = -32042


class BrowserHost(Host):
    """A host that 'opens' every URL it is asked to (accepts), and keeps what it was asked."""

    async def on_elicitation(self, ctx: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        self.elicited.append(params)
        self._tell()
        return types.ElicitResult(action="accept")

    def completed(self) -> list[str]:
        return [n.params.elicitation_id for n in self.notifications if isinstance(n, types.ElicitCompleteNotification)]


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def required(client: Client, tool: str, arguments: dict[str, Any]) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await client.call_tool(tool, arguments)
    return caught.value


async def test_over_http_a_completion_reaches_only_the_session_that_was_asked(tmp_path: Path) -> None:
    """Two HTTP sessions share the child. Ada is asked to open a URL; Bob's call then finishes that flow (Bob's call
    is the one in flight when the completion comes): only Ada is told. The same for a flow named by Bob's -32042."""
    config = write_config(tmp_path, {"flow": python_child("tests.children.browserflow")})
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        ada, bob = BrowserHost(), BrowserHost()
        async with connect_host(url, ada) as a, connect_host(url, bob) as b:
            await wait_for_tools(a, ada, {"flow_sign_in", "flow_finish"})
            await wait_for_tools(b, bob, {"flow_finish"})
            assert text_of(await a.call_tool("flow_sign_in", {"id": "ada-1"})) == "sign_in ada-1: accept"
            (asked,) = ada.elicited
            assert isinstance(asked, types.ElicitRequestURLParams), asked
            assert (asked.elicitation_id, asked.url) == ("ada-1", "https://auth.example.com/flow/ada-1")
            assert bob.elicited == []
            assert text_of(await b.call_tool("flow_finish", {"id": "ada-1"})) == "finished ada-1"
            await ada.wait_for(lambda: ada.completed() == ["ada-1"], "ada's completion")
            # Bob's call fails -32042 naming a flow; Ada's call finishes it: only Bob is told.
            error = await required(b, "flow_needs_sign_in", {"id": "bob-1"})
            assert error.error.code == URL_ELICITATION_REQUIRED
            assert error.error.data["elicitations"][0]["elicitationId"] == "bob-1"
            assert text_of(await a.call_tool("flow_finish", {"id": "bob-1"})) == "finished bob-1"
            await bob.wait_for(lambda: bob.completed() == ["bob-1"], "bob's completion")
            # Neither is told of the other's: a request of each after the other's completion has come.
            await a.list_tools()
            await b.list_tools()
            assert ada.completed() == ["ada-1"]


async def test_over_stdio_the_error_names_the_elicitation_and_its_completion_reaches_the_host(tmp_path: Path) -> None:
    """-32042 reaches the host with its code and data; the flow it names completes later, outside any call the hub
    relayed a request for: the one host session is told."""
    config = write_config(tmp_path, {"flow": python_child("tests.children.browserflow")})
    host = BrowserHost()
    async with connect_host(hub_params(config, tmp_path / "hub.log"), host) as client:
        await wait_for_tools(client, host, {"flow_needs_sign_in", "flow_finish"})
        error = await required(client, "flow_needs_sign_in", {"id": "e-1"})
        assert error.error.code == URL_ELICITATION_REQUIRED
        assert error.error.data == {
            "elicitations": [
                {
                    "mode": "url",
                    "elicitationId": "e-1",
                    "url": "https://auth.example.com/flow/e-1",
                    "message": "Sign in first",
                }
            ]
        }
        await client.call_tool("flow_finish", {"id": "e-1"})
        await host.wait_for(lambda: host.completed() == ["e-1"], "the completion")


@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_server_everythings_url_elicitation_and_its_error_pass_through(tmp_path: Path, front: str) -> None:
    config = write_config(tmp_path, {"ev": everything_server()})
    host = BrowserHost()
    async with AsyncExitStack() as stack:
        if front == "http":
            target: Any = await stack.enter_async_context(serve_hub_http(config, tmp_path / "hub.log"))
        else:
            target = hub_params(config, tmp_path / "hub.log")
        client = await stack.enter_async_context(connect_host(target, host))
        await wait_for_tools(client, host, {"ev_trigger-url-elicitation"}, limit=WAIT)
        flow = {"url": "https://example.com/consent", "elicitationId": f"ev-{front}"}
        result = await client.call_tool("ev_trigger-url-elicitation", flow)
        assert "User completed the URL elicitation flow" in text_of(result), result
        (asked,) = host.elicited
        assert isinstance(asked, types.ElicitRequestURLParams), asked
        assert (asked.elicitation_id, asked.url) == (f"ev-{front}", "https://example.com/consent")
        error = await required(client, "ev_trigger-url-elicitation", {**flow, "errorPath": True})
        assert error.error.code == URL_ELICITATION_REQUIRED
        (prerequisite,) = error.error.data["elicitations"]
        assert prerequisite["mode"] == "url" and prerequisite["url"] == "https://modelcontextprotocol.io"
