"""Extensions (`capabilities.extensions`) both ways through `hub serve --http` (decision 016).

The children: `mirror` over Streamable HTTP (2026-07-28), which declares the MCP Apps extension and one the hub does
not relay and answers with the client capabilities it was sent, reached once as a shared connection (`shared`) and
once per identity (`own`); and the recorder (stdio, handshake era, one process per host session), which writes down
the `initialize` it got. The hosts speak raw HTTP, so that what they declare and read is the test's own.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from hub.protocol.extensions import RELAYABLE, UI
from tests.integration.test_http_front import events
from tests.integration.test_url_children import served
from tests.support.children import python_child, write_config
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MODERN = "2026-07-28"
HOST_UI = {"mimeTypes": ["text/html;profile=mcp-app", "text/x-test"]}
HOST_CAPABILITIES = {"extensions": {UI: HOST_UI, "com.example/unrelayable": {"x": 1}}}
JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
TOOLS = {"shared_capabilities", "own_capabilities", "rec_echo"}


class Session:
    """A handshake-era host session over the HTTP front, driven by hand."""

    def __init__(self, http: httpx2.AsyncClient, url: str) -> None:
        self.http, self.url = http, url
        self.headers = dict(JSON_HEADERS)
        self.ids = 0

    async def open(self, capabilities: dict[str, Any]) -> dict[str, Any]:
        """Initialize; the initialize result."""
        info = {"name": "ext-host", "version": "1"}
        params = {"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": info}
        answer = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        assert answer.status_code == 200, answer.text
        self.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        self.headers["mcp-protocol-version"] = "2025-11-25"
        assert (await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
        result: dict[str, Any] = json.loads(answer.content)["result"]
        return result

    async def post(self, message: dict[str, Any]) -> httpx2.Response:
        return await self.http.post(self.url, json=message, headers=self.headers)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The request's answer: its result or its error."""
        self.ids += 1
        answer = await self.post({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params or {}})
        (last,) = [m for m in events(answer) if m.get("id") == self.ids]
        return dict(last)

    async def wait_for_tools(self, names: set[str]) -> None:
        with anyio.fail_after(WAIT):  # the children may still be starting
            while not names <= {t["name"] for t in (await self.request("tools/list"))["result"]["tools"]}:  # noqa: ASYNC110
                await anyio.sleep(0.05)

    async def capabilities_seen_by(self, tool: str) -> dict[str, Any]:
        """What the mirror child says its client declared, called through the hub."""
        answer = await self.request("tools/call", {"name": tool, "arguments": {}})
        seen: dict[str, Any] = json.loads(answer["result"]["content"][0]["text"])
        return seen


@asynccontextmanager
async def ext_hub(tmp_path: Path) -> AsyncIterator[tuple[str, Path, httpx2.AsyncClient]]:
    record = tmp_path / "record.jsonl"
    async with served(tmp_path, "tests.children.mirror", "--transport", "http") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        servers = {
            "shared": {"url": url, "protocol": MODERN},
            "own": {"url": url, "protocol": MODERN, "sessions": "per-identity"},
            "rec": python_child("tests.children.recorder", str(record), sessions="per-host"),
        }
        config = write_config(tmp_path, servers)
        async with serve_hub_http(config, tmp_path / "hub.log") as hub_url, httpx2.AsyncClient(timeout=WAIT) as http:
            yield hub_url, record, http


async def test_a_child_sees_the_extensions_its_host_declared_that_the_hub_relays(tmp_path: Path) -> None:
    async with ext_hub(tmp_path) as (url, record, http):
        host = Session(http, url)
        await host.open(HOST_CAPABILITIES)
        await host.wait_for_tools(TOOLS)
        # A connection of the identity's own (2026-07-28: in each request's envelope): the host's settings, and
        # nothing the hub does not relay.
        assert (await host.capabilities_seen_by("own_capabilities"))["extensions"] == {UI: HOST_UI}
        # The shared connection serves every host: it is told what the hub relays, with the hub's settings.
        assert (await host.capabilities_seen_by("shared_capabilities"))["extensions"] == RELAYABLE
        # A process of the session's own (handshake era): its initialize carries the host's extensions.
        assert (await host.request("tools/call", {"name": "rec_echo", "arguments": {"text": "hi"}}))["result"]
        initializes = [
            m["params"] for m in map(json.loads, record.read_text().splitlines()) if m.get("method") == "initialize"
        ]
        assert {UI: HOST_UI} in [p["capabilities"].get("extensions") for p in initializes]  # the session's own
        assert {UI: RELAYABLE[UI]} in [p["capabilities"].get("extensions") for p in initializes]  # the shared one
        assert all("com.example/unrelayable" not in json.dumps(p) for p in initializes)


async def test_a_host_that_declares_no_extension_gives_its_own_connections_none(tmp_path: Path) -> None:
    async with ext_hub(tmp_path) as (url, _, http):
        host = Session(http, url)
        await host.open({})
        await host.wait_for_tools(TOOLS)
        assert "extensions" not in await host.capabilities_seen_by("own_capabilities")


async def test_a_host_sees_the_relayable_extensions_its_children_declared(tmp_path: Path) -> None:
    async with ext_hub(tmp_path) as (url, _, http):
        first = Session(http, url)
        await first.open({})
        await first.wait_for_tools(TOOLS)  # every child is up: what they declared is known
        initialized = await Session(http, url).open({})
        assert initialized["capabilities"]["extensions"] == {UI: {}}  # mirror's; not com.example/unrelayable
        assert initialized["capabilities"]["tools"] == {"listChanged": True}
        envelope = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        discover = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": envelope}}
        headers = {**JSON_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "server/discover"}
        answer = await http.post(url, json=discover, headers=headers)
        assert answer.status_code == 200, answer.text
        (discovered,) = events(answer)
        assert discovered["result"]["capabilities"]["extensions"] == {UI: {}}


async def test_a_method_of_an_extension_the_hub_does_not_serve_is_refused_naming_it(tmp_path: Path) -> None:
    async with ext_hub(tmp_path) as (url, _, http):
        host = Session(http, url)
        await host.open(HOST_CAPABILITIES)
        error = (await host.request("ui/initialize"))["error"]
        assert error["code"] == -32601
        assert UI in error["message"] and "never reaches a server" in error["message"]
        error = (await host.request("com.example/frobnicate"))["error"]
        assert error["code"] == -32601 and "extension the hub does not relay" in error["message"]
