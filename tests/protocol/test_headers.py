"""The 2026-07-28 request headers the hub mirrors from a body (hub.protocol.headers), checked against the spec's
examples and against the SDK's own server-side validation."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from mcp.shared.inbound import validate_mcp_param_headers

from hub.protocol.headers import MARK, ToolHeaders, header_maps, routing_headers
from hub.protocol.jsonrpc import result_line

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
        "query": {"type": "string"},
    },
}
INVALID: dict[str, Any] = {"type": "object", "properties": {"ratio": {"type": "number", "x-mcp-header": "Ratio"}}}
TOOLS = [
    {"name": "execute_sql", "inputSchema": SCHEMA},
    {"name": "plain", "inputSchema": {"type": "object"}},
    {"name": "broken", "inputSchema": INVALID},
]


def test_method_and_name_are_mirrored_and_a_name_no_header_can_carry_is_base64_wrapped() -> None:
    assert routing_headers("tools/call", {"name": "get_weather"}) == {
        "mcp-method": "tools/call",
        "mcp-name": "get_weather",
    }
    assert routing_headers("resources/read", {"uri": "file:///a b.txt"})["mcp-name"] == "file:///a b.txt"
    assert routing_headers("prompts/get", {"name": "grüß"})["mcp-name"] == "=?base64?Z3LDvMOf?="
    assert routing_headers("tools/list", {}) == {"mcp-method": "tools/list"}
    assert routing_headers("tools/call", {"name": 7}) == {"mcp-method": "tools/call"}  # not a name: no header


def test_marked_arguments_become_mcp_param_headers_encoded_as_the_spec_says() -> None:
    maps = header_maps(TOOLS)
    assert set(maps) == {"execute_sql"}  # no marks, or invalid marks (a number): nothing to mirror
    arguments = {"region": "Hello, 世界", "count": 42, "dry": False, "nested": {"zone": " padded "}, "query": "x"}
    headers = routing_headers("tools/call", {"name": "execute_sql", "arguments": arguments}, maps["execute_sql"])
    assert headers == {
        "mcp-method": "tools/call",
        "mcp-name": "execute_sql",
        "Mcp-Param-Region": "=?base64?SGVsbG8sIOS4lueVjA==?=",
        "Mcp-Param-Count": "42",
        "Mcp-Param-Dry-Run": "false",
        "Mcp-Param-Zone": "=?base64?IHBhZGRlZCA=?=",
    }
    lowered = {name.lower(): value for name, value in headers.items()}
    assert validate_mcp_param_headers(SCHEMA, arguments, lowered) is None  # what a 2026-07-28 server accepts


def test_an_absent_or_null_argument_sends_no_header_and_the_sentinel_itself_is_wrapped() -> None:
    maps = header_maps(TOOLS)["execute_sql"]
    arguments = {"region": None, "count": 1, "dry": True, "query": "=?base64?literal?="}
    headers = routing_headers("tools/call", {"name": "execute_sql", "arguments": arguments}, maps)
    assert "Mcp-Param-Region" not in headers and "Mcp-Param-Zone" not in headers
    assert headers["Mcp-Param-Dry-Run"] == "true"
    sentinel = routing_headers(
        "tools/call", {"name": "execute_sql", "arguments": {"region": "=?base64?literal?="}}, maps
    )
    assert sentinel["Mcp-Param-Region"] == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
    assert "Mcp-Param-Region" not in routing_headers("tools/call", {"name": "x", "arguments": "no"}, maps)


def test_tool_headers_follow_the_listing_object_and_learn_from_a_tools_list_answer() -> None:
    headers = ToolHeaders()
    listing = tuple(TOOLS)
    assert headers.of(listing, "execute_sql") == header_maps(TOOLS)["execute_sql"]
    assert headers.of((), "execute_sql") is None  # another listing: read again
    delivered: list[bytes] = []
    line = result_line(3, {"tools": TOOLS})
    headers.reading(delivered.append)(line)
    assert delivered == [line]
    assert headers.known("execute_sql") == header_maps(TOOLS)["execute_sql"]
    assert headers.known("plain") is None


def test_a_tasks_request_names_its_task_in_mcp_name() -> None:
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        assert routing_headers(method, {"taskId": "hub-task:1"}) == {"mcp-method": method, "mcp-name": "hub-task:1"}


def test_tool_headers_know_which_tools_the_last_listing_had() -> None:
    headers = ToolHeaders()
    assert not headers.listed("plain")
    headers.learn(TOOLS)
    assert headers.listed("plain") and headers.listed("execute_sql") and not headers.listed("new_tool")
    assert headers.listed({"not": "a name"})  # nothing a listing could teach


def test_the_mark_the_hub_looks_for_is_the_sdks_key() -> None:
    from mcp.shared.inbound import X_MCP_HEADER_KEY

    assert MARK == X_MCP_HEADER_KEY


def test_schemas_without_the_mark_are_checked_without_loading_the_sdk() -> None:
    """The SDK's package loads its client and server whole: a hub whose tools have no `x-mcp-header` (most) must
    not pay for it on its first listing. A schema with the mark is still checked by the SDK, and refused."""
    code = (
        "import sys\n"
        "from hub.protocol.headers import header_maps, header_problem\n"
        "plain = {'type': 'object', 'properties': {'q': {'type': 'string', 'description': 'x-mcp-head'}}}\n"
        "assert header_problem(plain) is None and header_maps([{'name': 't', 'inputSchema': plain}]) == {}\n"
        "assert 'mcp' not in sys.modules, 'the SDK was loaded for a schema without the mark'\n"
        f"assert header_problem({INVALID!r}) is not None\n"
        "assert 'mcp' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
