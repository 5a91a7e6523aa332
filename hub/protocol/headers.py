"""The headers a 2026-07-28 Streamable HTTP request mirrors from its body, as the hub sends them to a server (a URL
child, or the hub behind `hub connect`): `Mcp-Method`, `Mcp-Name` and, for a `tools/call`, one `Mcp-Param-{Name}`
per argument whose input-schema property is marked `x-mcp-header`. The encoding (base64-wrapped where a header cannot
carry a value as it is) and the reading of `x-mcp-header` are the SDK's (`mcp.shared.inbound`), imported on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hub.protocol.jsonrpc import Response, parse

# The requests that name their target in `Mcp-Name`, and the parameter it mirrors: the revision's three, and the
# tasks extension's (SEP-2663: the task id, so that a balancer can route a task's requests to where it lives).
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
TASK_NAMED = {"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}

# A tool's `x-mcp-header` properties: property path -> the header's name part.
HeaderMap = dict[tuple[str, ...], str]

# The SDK's `X_MCP_HEADER_KEY` (a test checks they are equal). A schema without this text anywhere has no annotation
# to check, so the SDK, whose package loads its client and server whole (16 MB, 0.2 s), is imported only for a
# schema that has one: most hubs never load it.
MARK = "x-mcp-header"


def routing_headers(method: str, params: Mapping[str, Any], param_map: HeaderMap | None = None) -> dict[str, str]:
    """A request's `Mcp-Method` and `Mcp-Name` headers and, with `param_map` (its tool's), its `Mcp-Param-*`."""
    from mcp.shared.inbound import encode_header_value, mcp_param_headers

    headers = {"mcp-method": method}
    key = NAMED.get(method) or TASK_NAMED.get(method)
    name = params.get(key) if key is not None else None
    if isinstance(name, str):
        headers["mcp-name"] = encode_header_value(name)
    arguments = params.get("arguments")
    if param_map and method == "tools/call" and isinstance(arguments, Mapping):
        headers.update(mcp_param_headers(param_map, arguments))
    return headers


def header_problem(schema: Any) -> str | None:
    """What is wrong with the `x-mcp-header` annotations of a tool's input schema (the SDK's check), None if nothing.
    A tool with a problem is left out of listings, as the revision says."""
    if MARK not in str(schema):
        return None
    from mcp.shared.inbound import find_invalid_x_mcp_header

    return find_invalid_x_mcp_header(schema)


def header_maps(tools: Iterable[Mapping[str, Any]]) -> dict[str, HeaderMap]:
    """The `x-mcp-header` properties of each listed tool that has any, by tool name. A tool whose annotations are
    invalid gets none (it is not to be listed at all; a call to it carries no `Mcp-Param-*` header)."""
    maps: dict[str, HeaderMap] = {}
    for tool in tools:
        name, schema = tool.get("name"), tool.get("inputSchema")
        if not isinstance(name, str) or not isinstance(schema, dict) or MARK not in str(schema):
            continue
        from mcp.shared.inbound import x_mcp_header_map

        if header_problem(schema) is None:
            found = x_mcp_header_map(schema)
            if found:
                maps[name] = found
    return maps


class ToolHeaders:
    """The `x-mcp-header` properties of one server's tools, read again whenever its listing is another object."""

    def __init__(self) -> None:
        self._source: object = None
        self._maps: dict[str, HeaderMap] = {}
        self._names: frozenset[str] = frozenset()  # every tool of the last listing `learn` was given

    def learn(self, tools: Iterable[Mapping[str, Any]]) -> None:
        """A new listing of the server's tools (the whole of it)."""
        listed = list(tools)
        self._maps = header_maps(listed)
        self._names = frozenset(name for tool in listed if isinstance(name := tool.get("name"), str))

    def listed(self, name: object) -> bool:
        """Whether the last listing `learn` was given has the tool `name` (a name that is no string: yes)."""
        return not isinstance(name, str) or name in self._names

    def of(self, tools: tuple[Mapping[str, Any], ...], name: str) -> HeaderMap | None:
        """`name`'s properties in `tools`, the server's listing as it is now (an immutable tuple, read once)."""
        if tools is not self._source:
            self._source = tools
            self.learn(tools)
        return self._maps.get(name)

    def known(self, name: str) -> HeaderMap | None:
        """`name`'s properties in the last listing `learn` was given."""
        return self._maps.get(name)

    def reading(self, deliver: Callable[[bytes], None]) -> Callable[[bytes], None]:
        """`deliver` (of the messages of a `tools/list` request's response), learning on the way from the answer
        the tools it lists (the whole listing: the hub answers in one page)."""

        def read(line: bytes) -> None:
            message = parse(line)
            if isinstance(message, Response) and message.result is not None:
                tools = message.result.get("tools")
                if isinstance(tools, list):
                    self.learn(tool for tool in tools if isinstance(tool, dict))
            deliver(line)

        return read
