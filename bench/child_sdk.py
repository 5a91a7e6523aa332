"""Synthetic MCP child built on the SDK's low-level `mcp.server.Server` (what a typical Python server costs).

    python -m bench.child_sdk [--tools K] [--name NAME]                  # stdio (default)
    python -m bench.child_sdk --http --port-file F [--port P]            # Streamable HTTP at /mcp (uvicorn)

Tools: `echo {text}`, `payload {bytes}` (a text block of exactly N bytes), `sleep {ms}`, and K realistic tools
(bench/tools.py) that answer "ok". Logs go to stderr only.
"""

from __future__ import annotations

import argparse
import socket
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from bench.tools import payload_text, tool_definitions


def build(name: str, k: int) -> Server[Any]:
    tools = [types.Tool.model_validate(t) for t in tool_definitions(k)]
    names = {t.name for t in tools}

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        args = params.arguments or {}
        if params.name == "echo":
            text = str(args.get("text", ""))
        elif params.name == "payload":
            text = payload_text(int(args.get("bytes", 0)))
        elif params.name == "sleep":
            await anyio.sleep(float(args.get("ms", 0)) / 1000)
            text = "slept"
        elif params.name in names:
            text = "ok"
        else:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server(name, version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_http(server: Server[Any], port: int, port_file: Path | None) -> None:
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(web.serve, [sock])
        with anyio.fail_after(30):
            while not web.started:  # noqa: ASYNC110 - uvicorn exposes a flag only
                await anyio.sleep(0.02)
        if port_file is not None:
            tmp = port_file.with_name(port_file.name + ".tmp")
            tmp.write_text(str(sock.getsockname()[1]))
            tmp.replace(port_file)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10, help="number of realistic tools besides echo/payload/sleep")
    parser.add_argument("--name", default="bench-sdk")
    parser.add_argument("--http", action="store_true", help="serve Streamable HTTP instead of stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", type=Path, default=None)
    args = parser.parse_args()
    server = build(args.name, args.tools)
    if args.http:
        anyio.run(serve_http, server, args.port, args.port_file)
    else:
        anyio.run(serve_stdio, server)


if __name__ == "__main__":
    main()
