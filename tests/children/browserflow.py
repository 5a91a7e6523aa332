"""MCP child with URL-mode elicitation (2025-11-25): a flow the user completes in a browser, out of band.

Run from the repo root: `python -m tests.children.browserflow`. Tools:
- `sign_in {id}`: asks the host with `elicitation/create` in URL mode (elicitationId `id`); returns the host's action.
- `needs_sign_in {id}`: fails with error -32042 (URL elicitation required), `data.elicitations` naming `id`.
- `finish {id}`: the browser flow `id` is done: sends `notifications/elicitation/complete` for it, then answers.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from tests.children._common import ChildServer, base_parser, run, text_result

Ctx = ServerRequestContext[Any]
URL_ELICITATION_REQUIRED = -32042
ID_SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
TOOLS = [
    types.Tool(name="sign_in", description="Asks the user to sign in in a browser.", input_schema=ID_SCHEMA),
    types.Tool(name="needs_sign_in", description="Fails: a browser sign-in is required.", input_schema=ID_SCHEMA),
    types.Tool(name="finish", description="The browser flow is done: the client is told.", input_schema=ID_SCHEMA),
]


def flow_url(flow: str) -> str:
    return f"https://auth.example.com/flow/{flow}"


async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    flow = str((params.arguments or {}).get("id"))
    if params.name == "sign_in":
        answer = await ctx.session.elicit_url(
            "Sign in to continue", flow_url(flow), flow, related_request_id=ctx.request_id
        )
        return text_result(f"sign_in {flow}: {answer.action}")
    if params.name == "needs_sign_in":
        elicitation = {"mode": "url", "elicitationId": flow, "url": flow_url(flow), "message": "Sign in first"}
        raise MCPError(
            code=URL_ELICITATION_REQUIRED, message="a browser sign-in is required", data={"elicitations": [elicitation]}
        )
    if params.name == "finish":
        await ctx.session.send_elicit_complete(flow)
        return text_result(f"finished {flow}")
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")


def build(name: str) -> ChildServer:
    return ChildServer(name, version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    args = base_parser("MCP child with URL-mode elicitation.", "browserflow").parse_args()
    run(build(args.name), args)


if __name__ == "__main__":
    main()
