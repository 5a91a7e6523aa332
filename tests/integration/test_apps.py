"""MCP Apps through the hub, against the real ext-apps example `@modelcontextprotocol/server-basic-vanillajs`
(pinned in tests/npm), over the stdio and HTTP fronts, for a 2025-11-25 host and a 2026-07-28 host.

The server's tool `get-time` points at its app `ui://get-time/mcp-app.html`. Through the hub (server `app`):
- the tool advertises `ui://app+get-time/mcp-app.html` (both `_meta.ui.resourceUri` and `_meta["ui/resourceUri"]`),
  the resource is listed under that URI, and reading it answers the app's HTML under that URI;
- the app's own call, `get-time` (the server's name), reaches the server;
- with two servers that both have `get-time` (`app` and `twin`), that call is refused, naming both; the hub's names
  still work.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from tests.support.children import write_config
from tests.support.mcp_client import Host, connect_host, hub_params
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

RAW: Any = TypeAdapter(dict[str, Any])
MODERN = "2026-07-28"
PROGRAM = REPO / "tests" / "npm" / "node_modules" / ".bin" / "mcp-server-basic-vanillajs"
APP = {"command": str(PROGRAM), "args": ["--stdio"]}
OWN_URI = "ui://get-time/mcp-app.html"
EXPOSED_URI = "ui://app+get-time/mcp-app.html"
ERAS = ["legacy", MODERN]

if not PROGRAM.exists():
    pytest.skip(f"{PROGRAM} is missing: run `npm ci --prefix tests/npm`", allow_module_level=True)


@dataclass
class Front:
    """One front, and how to reach a hub with `app` alone (`single`) and one with `app` and `twin` (`pair`)."""

    name: str
    targets: dict[str, StdioServerParameters | str]


@pytest.fixture(scope="module", params=["http", "stdio"])
async def front(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Front]:
    tmp: Path = tmp_path_factory.mktemp(f"apps-{request.param}")
    hub = {"startup_listing_wait": 60}  # a first listing waits (bounded) for the children, on a loaded machine too
    configs = {}
    for name, servers in (("single", {"app": APP}), ("pair", {"app": APP, "twin": APP})):
        (tmp / name).mkdir()
        configs[name] = write_config(tmp / name, servers, hub)
    if request.param == "stdio":
        yield Front("stdio", {name: hub_params(c, tmp / name / "hub.log") for name, c in configs.items()})
        return
    async with (
        serve_hub_http(configs["single"], tmp / "single" / "hub.log") as single,
        serve_hub_http(configs["pair"], tmp / "pair" / "hub.log") as pair,
    ):
        yield Front("http", {"single": single, "pair": pair})


@asynccontextmanager
async def host(front: Front, hub: str, era: str) -> AsyncIterator[Client]:
    async with connect_host(front.targets[hub], Host(), mode=era) as client:
        assert (client.protocol_version == MODERN) == (era == MODERN)
        yield client


async def raw(client: Client, request: Any) -> dict[str, Any]:
    answer: dict[str, Any] = await client.session.send_request(request, RAW)
    return answer


async def call(client: Client, name: str) -> dict[str, Any]:
    return await raw(client, types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments={})))


@pytest.mark.parametrize("era", ERAS)
async def test_the_uri_a_tool_advertises_reads_its_app(front: Front, era: str) -> None:
    async with host(front, "single", era) as client:
        tools = (await raw(client, types.ListToolsRequest()))["tools"]
        (tool,) = [t for t in tools if t["name"] == "app_get-time"]
        assert tool["_meta"]["ui"]["resourceUri"] == EXPOSED_URI
        assert tool["_meta"]["ui/resourceUri"] == EXPOSED_URI
        resources = (await raw(client, types.ListResourcesRequest()))["resources"]
        assert EXPOSED_URI in [r["uri"] for r in resources]
        assert f"app+{OWN_URI}" not in [r["uri"] for r in resources], "never outside the ui:// scheme"
        params = types.ReadResourceRequestParams(uri=tool["_meta"]["ui"]["resourceUri"])
        (content,) = (await raw(client, types.ReadResourceRequest(params=params)))["contents"]
        assert content["uri"] == EXPOSED_URI
        assert content["mimeType"] == "text/html;profile=mcp-app"
        assert "<html" in content["text"].lower()


@pytest.mark.parametrize("era", ERAS)
async def test_an_apps_call_by_its_servers_own_tool_name_reaches_the_server(front: Front, era: str) -> None:
    async with host(front, "single", era) as client:
        own = await call(client, "get-time")
        by_hub_name = await call(client, "app_get-time")
        assert own.get("isError") is not True, own
        assert own["content"][0]["type"] == "text" and own["content"][0]["text"]
        assert own.keys() == by_hub_name.keys()


@pytest.mark.parametrize("era", ERAS)
async def test_an_own_name_two_servers_have_is_refused_never_guessed(front: Front, era: str) -> None:
    async with host(front, "pair", era) as client:
        with pytest.raises(MCPError) as refused:
            await call(client, "get-time")
        assert refused.value.error.code == -32602
        message = refused.value.error.message
        assert "Ambiguous tool" in message and "app_get-time" in message and "twin_get-time" in message
        assert (await call(client, "twin_get-time")).get("isError") is not True
