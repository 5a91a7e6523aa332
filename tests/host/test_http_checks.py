"""The 2026-07-28 routing-header rules of the HTTP front (hub.host.http_checks): what a missing or mismatched
Mcp-Method, Mcp-Name or Mcp-Param-* header is answered with (-32020, HTTP 400 at the front)."""

from __future__ import annotations

from typing import Any

import pytest

from hub.host.http_checks import Checks, allowed
from hub.protocol.jsonrpc import Request

pytestmark = pytest.mark.anyio

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
TOOLS = [
    {
        "name": "sql",
        "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}},
    }
]


def request(method: str, **params: Any) -> Request:
    return Request(1, method, {**params, "_meta": ENVELOPE}, b"")


async def mismatch(message: Request, **headers: str) -> str | None:
    checks = Checks(allowed("127.0.0.1", 8080, []))
    await checks.load()
    sent = {"mcp-protocol-version": "2026-07-28", **{k.replace("_", "-"): v for k, v in headers.items()}}
    return checks.header_mismatch([k.encode() for k in sent], message, sent, TOOLS)


async def test_matching_headers_pass_and_a_base64_name_is_decoded_first() -> None:
    assert await mismatch(request("tools/call", name="sql"), mcp_method="tools/call", mcp_name="sql") is None
    grüß = request("prompts/get", name="grüß")
    assert await mismatch(grüß, mcp_method="prompts/get", mcp_name="=?base64?Z3LDvMOf?=") is None
    assert await mismatch(request("tools/list"), mcp_method="tools/list") is None


async def test_a_missing_header_and_a_different_value_are_told_apart() -> None:
    call = request("tools/call", name="sql")
    assert await mismatch(call, mcp_name="sql") == (
        'Header mismatch: the Mcp-Method header is missing; it must carry the body\'s method, "tools/call"'
    )
    assert await mismatch(call, mcp_method="tools/call") == (
        "Header mismatch: the Mcp-Name header is missing; it must carry the body's 'name', \"sql\""
    )
    assert await mismatch(call, mcp_method="tools/call", mcp_name="other") == (
        'Header mismatch: Mcp-Name header value "other" does not match the body\'s \'name\', "sql"'
    )
    read = request("resources/read", uri="a://b")
    assert "does not match the body's 'uri'" in str(await mismatch(read, mcp_method="resources/read", mcp_name="a://c"))


async def test_a_marked_argument_needs_its_mcp_param_header() -> None:
    call = request("tools/call", name="sql", arguments={"region": "eu"})
    assert await mismatch(call, mcp_method="tools/call", mcp_name="sql") is not None
    assert await mismatch(call, mcp_method="tools/call", mcp_name="sql", **{"mcp-param-region": "eu"}) is None


async def test_a_tasks_mcp_name_is_checked_against_the_task_id_when_it_is_sent() -> None:
    get = request("tasks/get", taskId="t-1")
    assert await mismatch(get, mcp_method="tasks/get") is None  # not sent: the SDK's clients do not send it yet
    assert await mismatch(get, mcp_method="tasks/get", mcp_name="t-1") is None
    assert "does not match the body's 'taskId'" in str(await mismatch(get, mcp_method="tasks/get", mcp_name="t-2"))
