"""The 2026-07-28 Streamable HTTP request headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) through the hub.

On the front (`hub serve --http`): a 2026-07-28 request whose headers are missing or do not match its body is refused
with HTTP 400 and -32020 (HeaderMismatch). Toward an HTTP child: the mirror child answers with the headers it got,
and, being the SDK's 2026-07-28 server, refuses a `tools/call` whose `x-mcp-header` argument has no matching header.
Through `hub connect`: the hub's front would refuse the same.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.integration.test_connect import bridge
from tests.integration.test_url_children import served
from tests.support.children import write_config
from tests.support.mcp_client import Host, connect_host, wait_for_tools
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
REGION = "Hello, 世界"
ENCODED = "=?base64?" + base64.b64encode(REGION.encode()).decode() + "?="


@asynccontextmanager
async def headers_hub(tmp_path: Path) -> AsyncIterator[str]:
    """The hub over HTTP, with the mirror child over HTTP spoken to in 2026-07-28 (`web`)."""
    async with served(tmp_path, "tests.children.mirror", "--transport", "http") as port:
        config = write_config(tmp_path, {"web": {"url": f"http://127.0.0.1:{port}/mcp", "protocol": MODERN}})
        async with serve_hub_http(config, tmp_path / "hub.log") as url:
            yield url


def modern(method: str, params: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**params, "_meta": ENVELOPE}}


async def post(http: httpx2.AsyncClient, url: str, body: dict[str, Any], **headers: str) -> httpx2.Response:
    sent = {**JSON_HEADERS, "mcp-protocol-version": MODERN, **{k.replace("_", "-"): v for k, v in headers.items()}}
    return await http.post(url, json=body, headers=sent)


def mirrored(result: Any) -> dict[str, str]:
    """The headers the mirror child got, from a tool's result or a resource's contents (dicts or SDK models)."""
    if not isinstance(result, dict):
        result = result.model_dump(mode="json", by_alias=True)
    blocks = result.get("content") or result.get("contents")
    headers: dict[str, str] = json.loads(blocks[0]["text"])
    return headers


async def test_a_2026_request_whose_headers_do_not_match_its_body_is_refused_400(tmp_path: Path) -> None:
    async with headers_hub(tmp_path) as url, httpx2.AsyncClient(timeout=WAIT) as http:
        call = modern("tools/call", {"name": "web_headers", "arguments": {}})
        ok = await post(http, url, call, mcp_method="tools/call", mcp_name="web_headers")
        assert ok.status_code == 200, ok.text
        cases = [
            ({"mcp_method": "tools/list", "mcp_name": "web_headers"}, 'Mcp-Method header value "tools/list" does not'),
            ({"mcp_name": "web_headers"}, "the Mcp-Method header is missing"),
            ({"mcp_method": "tools/call"}, "the Mcp-Name header is missing"),
            ({"mcp_method": "tools/call", "mcp_name": "web_regional"}, 'Mcp-Name header value "web_regional" does not'),
        ]
        for headers, said in cases:
            answer = await post(http, url, call, **headers)
            assert answer.status_code == 400, (headers, answer.text)
            error = json.loads(answer.content)["error"]
            assert error["code"] == -32020 and said in error["message"], (headers, error)
        read = modern("resources/read", {"uri": "web+mirror://headers"})
        answer = await post(http, url, read, mcp_method="resources/read", mcp_name="web+mirror://other")
        assert answer.status_code == 400 and json.loads(answer.content)["error"]["code"] == -32020
        # A marked argument without its Mcp-Param header: refused on the front, as the child would refuse it.
        regional = modern("tools/call", {"name": "web_regional", "arguments": {"region": "eu"}})
        answer = await post(http, url, regional, mcp_method="tools/call", mcp_name="web_regional")
        assert answer.status_code == 400 and json.loads(answer.content)["error"]["code"] == -32020
        answer = await post(
            http, url, regional, mcp_method="tools/call", mcp_name="web_regional", **{"mcp-param-region": "eu"}
        )
        assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("host_mode", ["legacy", MODERN])
async def test_an_http_child_gets_mcp_method_name_and_param_headers(tmp_path: Path, host_mode: str) -> None:
    async with headers_hub(tmp_path) as url:
        host = Host()
        async with connect_host(url, host, mode=host_mode) as client:
            if host_mode == "legacy":
                await wait_for_tools(client, host, {"web_regional"})
            plain = mirrored(await client.call_tool("web_headers", {}))
            assert (plain["mcp-method"], plain["mcp-name"]) == ("tools/call", "headers")  # the child's own name
            assert plain["mcp-protocol-version"] == MODERN
            regional = mirrored(await client.call_tool("web_regional", {"region": REGION, "text": "x"}))
            assert (regional["mcp-name"], regional["mcp-param-region"]) == ("regional", ENCODED)
            assert "mcp-param-region" not in mirrored(await client.call_tool("web_regional", {"text": "x"}))
            read = mirrored(await client.read_resource("web+mirror://headers"))
            assert (read["mcp-method"], read["mcp-name"]) == ("resources/read", "mirror://headers")


@pytest.mark.parametrize("lists_first", [True, False])
async def test_hub_connect_sends_a_2026_hosts_mcp_param_headers(tmp_path: Path, lists_first: bool) -> None:
    async with headers_hub(tmp_path) as url:
        watcher = Host()
        async with connect_host(url, watcher) as direct:  # the child is up: the hub's front knows the tool's marks
            await wait_for_tools(direct, watcher, {"web_regional"})
        env = {k: v for k, v in os.environ.items() if k != "HUB_TOKEN"}
        async with connect_host(bridge(url, tmp_path / "bridge.log", env), Host(), mode=MODERN) as client:
            if lists_first:
                await client.list_tools()  # the bridge reads the marks from the answer on its way
            # else the bridge lists on its own before a call to a tool it has not seen listed
            result = await client.call_tool("web_regional", {"region": REGION})
            assert not result.is_error, result  # without the header, the hub's front answers 400 (-32020)
            assert mirrored(result)["mcp-param-region"] == ENCODED
