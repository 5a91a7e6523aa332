"""Tiny MCP child whose `echo` tool and `greet` prompt collide with kitchen's (name-collision tests).

Run from the repo root: `python -m tests.children.twin`. `echo {text}` returns "twin:{text}";
prompt `greet {name}` returns one user message "twin greets {name}".
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from tests.children._common import ChildServer, base_parser, run, text, text_result

Ctx = ServerRequestContext[Any]

ECHO = types.Tool(
    name="echo",
    title="Twin echo",
    description="Returns 'twin:' + text.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)
GREET = types.Prompt(
    name="greet",
    title="Twin greet",
    description="The twin's greeting",
    arguments=[types.PromptArgument(name="name", description="Who to greet", required=True)],
)


async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO])


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != ECHO.name:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    value = (params.arguments or {}).get("text")
    if not isinstance(value, str):
        return text_result("echo: argument 'text' must be a string", is_error=True)
    return text_result(f"twin:{value}")


async def list_prompts(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[GREET])


async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    if params.name != GREET.name:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
    name = (params.arguments or {}).get("name")
    if name is None:
        raise MCPError(code=types.INVALID_PARAMS, message="greet: missing required argument 'name'")
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text(f"twin greets {name}"))])


def build(name: str) -> ChildServer:
    return ChildServer(
        name,
        version="1.0.0",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def main() -> None:
    args = base_parser("Tiny MCP child colliding with kitchen's echo/greet.", "twin").parse_args()
    run(build(args.name), args)


if __name__ == "__main__":
    main()
