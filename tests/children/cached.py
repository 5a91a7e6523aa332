"""MCP child whose lists say how long they may be cached (2026-07-28 `ttlMs`, `cacheScope`).

Run from the repo root: `python -m tests.children.cached --ttl 60000 --scope public [--name NAME]`. Tools: `now`
(answers "now") and, with `--bad-header`, `bad` (its input schema has an x-mcp-header on a number, which 2026-07-28
forbids); prompts: `hello`. Both lists carry the given hints to a 2026-07-28 client.
"""

from __future__ import annotations

from typing import Any, Literal

import mcp_types as types
from mcp.server import ServerRequestContext

from tests.children._common import EMPTY_OBJECT_SCHEMA, ChildServer, base_parser, run, text, text_result

Ctx = ServerRequestContext[Any]


BAD_SCHEMA = {"type": "object", "properties": {"amount": {"type": "number", "x-mcp-header": "Amount"}}}


def build(name: str, ttl_ms: int, scope: Literal["public", "private"], bad_header: bool = False) -> ChildServer:
    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = [types.Tool(name="now", description="Answers 'now'.", input_schema=EMPTY_OBJECT_SCHEMA)]
        if bad_header:
            tools.append(types.Tool(name="bad", description="Invalid x-mcp-header.", input_schema=BAD_SCHEMA))
        return types.ListToolsResult(tools=tools, ttl_ms=ttl_ms, cache_scope=scope)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return text_result("now")

    async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="hello")], ttl_ms=ttl_ms, cache_scope=scope)

    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text("hello"))])

    return ChildServer(
        name,
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def main() -> None:
    parser = base_parser("MCP child whose lists carry cache hints.", "cached")
    parser.add_argument("--ttl", type=int, default=0, help="ttlMs of its lists")
    parser.add_argument("--scope", choices=["public", "private"], default="private", help="cacheScope of its lists")
    parser.add_argument("--bad-header", action="store_true", help="also list a tool with an invalid x-mcp-header")
    args = parser.parse_args()
    run(build(args.name, args.ttl, args.scope, args.bad_header), args)


if __name__ == "__main__":
    main()
