"""A child that answers with what it was sent beside the arguments: its client's capabilities and, over HTTP, the
request's headers. It declares the MCP Apps extension (`io.modelcontextprotocol/ui`) and one unknown extension.

Usage: python -m tests.children.mirror [--transport http]

Tools: `capabilities` (the JSON of the client capabilities this request's client declared), `headers` (the JSON of
the HTTP request's headers, names lowercased), `regional {region, text}` (the same, its `region` marked
`x-mcp-header: Region`, so a 2026-07-28 client must send it as `Mcp-Param-Region`). Resource `mirror://headers`:
the headers of the `resources/read` request.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext

from tests.children._common import ChildServer, base_parser, run, text_result

UI = "io.modelcontextprotocol/ui"
EXTENSIONS: dict[str, dict[str, Any]] = {UI: {}, "com.example/unrelayable": {}}
REGIONAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "text": {"type": "string"}},
}
TOOLS = [
    types.Tool(name="capabilities", input_schema={"type": "object"}),
    types.Tool(name="headers", input_schema={"type": "object"}),
    types.Tool(name="regional", input_schema=REGIONAL_SCHEMA),
]
SCHEMAS = {tool.name: tool.input_schema for tool in TOOLS}
Ctx = ServerRequestContext[Any, Any]


def _headers(ctx: Ctx) -> str:
    request = ctx.request
    headers = dict(request.headers) if request is not None and hasattr(request, "headers") else {}
    return json.dumps({name.lower(): value for name, value in headers.items()}, sort_keys=True)


async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "capabilities":
        capabilities = ctx.session.client_capabilities
        dumped = capabilities.model_dump(by_alias=True, mode="json", exclude_none=True) if capabilities else None
        return text_result(json.dumps(dumped, sort_keys=True))
    if params.name in ("headers", "regional"):
        return text_result(_headers(ctx))
    return text_result(f"unknown tool {params.name}", is_error=True)


async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[types.Resource(uri="mirror://headers", name="headers")])


async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=_headers(ctx))])


def main() -> None:
    args = base_parser("A child that mirrors its client's capabilities and headers.", "mirror").parse_args()
    server = ChildServer(
        args.name,
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        get_tool_input_schema=SCHEMAS.get,
    )
    server.extensions = EXTENSIONS
    run(server, args)


if __name__ == "__main__":
    main()
