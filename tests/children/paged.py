"""MCP child that pages every list (page size 2) so tests prove the hub follows each cursor.

Run from the repo root: `python -m tests.children.paged`. Lists: tools `p1`..`p5` (each returns its own
name), resources `paged://r/1`..`paged://r/3`, resource templates `paged://t1/{x}`..`paged://t3/{x}`, prompts
`pp1`..`pp3`. Cursors are opaque strings (`"cursor:<offset>"`); a malformed cursor is INVALID_PARAMS.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, TypeVar

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from tests.children._common import EMPTY_OBJECT_SCHEMA, ChildServer, base_parser, run, text, text_result

Ctx = ServerRequestContext[Any]
T = TypeVar("T")
PAGE_SIZE = 2

TOOLS = [
    types.Tool(name=f"p{i}", title=f"Paged tool {i}", description=f"Returns 'p{i}'.", input_schema=EMPTY_OBJECT_SCHEMA)
    for i in range(1, 6)
]
RESOURCES = [
    types.Resource(uri=f"paged://r/{i}", name=f"r{i}", title=f"Paged resource {i}", mime_type="text/plain")
    for i in range(1, 4)
]
TEMPLATES = [
    types.ResourceTemplate(uri_template=f"paged://t{i}/{{x}}", name=f"t{i}", title=f"Paged template {i}")
    for i in range(1, 4)
]
PROMPTS = [
    types.Prompt(name=f"pp{i}", title=f"Paged prompt {i}", description=f"Says 'paged prompt pp{i}'.")
    for i in range(1, 4)
]
RESOURCE_RE = re.compile(r"^paged://r/(?P<n>[1-3])$")
TEMPLATE_RE = re.compile(r"^paged://t(?P<n>[1-3])/(?P<x>[^/]+)$")


def page(items: Sequence[T], params: types.PaginatedRequestParams | None) -> tuple[list[T], str | None]:
    """Slice one page out of `items`; returns the page and the next cursor (None on the last page)."""
    cursor = params.cursor if params else None
    start = 0
    if cursor is not None:
        match = re.fullmatch(r"cursor:(\d+)", cursor)
        if match is None or int(match[1]) > len(items):
            raise MCPError(code=types.INVALID_PARAMS, message=f"Invalid cursor: {cursor!r}")
        start = int(match[1])
    end = start + PAGE_SIZE
    return list(items[start:end]), (f"cursor:{end}" if end < len(items) else None)


async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    tools, next_cursor = page(TOOLS, params)
    return types.ListToolsResult(tools=tools, next_cursor=next_cursor)


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name not in {tool.name for tool in TOOLS}:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    return text_result(params.name)


async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    resources, next_cursor = page(RESOURCES, params)
    return types.ListResourcesResult(resources=resources, next_cursor=next_cursor)


async def list_resource_templates(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    templates, next_cursor = page(TEMPLATES, params)
    return types.ListResourceTemplatesResult(resource_templates=templates, next_cursor=next_cursor)


async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    if match := RESOURCE_RE.match(params.uri):
        body = f"paged resource {match['n']}"
    elif match := TEMPLATE_RE.match(params.uri):
        body = f"template t{match['n']} {match['x']}"
    else:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {params.uri}")
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=params.uri, mime_type="text/plain", text=body)]
    )


async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    prompts, next_cursor = page(PROMPTS, params)
    return types.ListPromptsResult(prompts=prompts, next_cursor=next_cursor)


async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name not in {prompt.name for prompt in PROMPTS}:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=text(f"paged prompt {params.name}"))]
    )


def build(name: str) -> ChildServer:
    return ChildServer(
        name,
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def main() -> None:
    args = base_parser("MCP child whose lists come in pages of 2.", "paged").parse_args()
    run(build(args.name), args)


if __name__ == "__main__":
    main()
