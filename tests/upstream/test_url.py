"""A URL child's request headers (hub.upstream.url.UrlWire): the revision always, and for a 2026-07-28 request its
method, its name and the arguments its listed tool marks `x-mcp-header`."""

from __future__ import annotations

from typing import Any

from hub.upstream.url import UrlWire

SCHEMA = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def test_a_2026_tools_call_carries_method_name_and_the_marked_arguments_of_the_tool_as_listed_now() -> None:
    listing: list[tuple[dict[str, Any], ...]] = [({"name": "sql", "inputSchema": SCHEMA},)]
    wire = UrlWire("db", lambda: listing[0])
    wire.negotiated("2026-07-28")
    assert wire._headers(call("sql", {"region": "eu"})) == {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "sql",
        "Mcp-Param-Region": "eu",
    }
    listing[0] = ({"name": "sql", "inputSchema": {"type": "object"}},)  # the child listed again: no mark now
    assert "Mcp-Param-Region" not in wire._headers(call("sql", {"region": "eu"}))


def test_a_handshake_era_request_and_a_notification_carry_only_the_revision() -> None:
    wire = UrlWire("db", lambda: ({"name": "sql", "inputSchema": SCHEMA},))
    wire.negotiated("2025-11-25")
    assert wire._headers(call("sql", {"region": "eu"})) == {"mcp-protocol-version": "2025-11-25"}
    wire.negotiated("2026-07-28")
    notice = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert wire._headers(notice) == {"mcp-protocol-version": "2026-07-28"}
