"""Shared plumbing for the test child servers: argument parsing, serving, small content helpers.

Children are spawned by the hub's integration tests. stdout is the MCP wire (stdio transport), so every
diagnostic goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.sse import SseServerTransport
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

ALL_CHANGES = NotificationOptions(tools_changed=True, resources_changed=True, prompts_changed=True)
"""Advertise listChanged for tools, resources and prompts (without this the capabilities say false)."""

EMPTY_OBJECT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class ChildServer(Server[Any]):
    """Low-level `Server` whose *default* initialization options advertise every listChanged flag.

    Why: the Streamable HTTP session manager and the SSE route call `create_initialization_options()` with
    no arguments (`mcp/server/runner.py:431`), which would advertise `listChanged: false` (SDK notes, pitfall 3).
    """

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or ALL_CHANGES, experimental_capabilities, extensions
        )


def text(value: str) -> types.TextContent:
    """One text content block."""
    return types.TextContent(text=value)


def text_result(value: str, *, is_error: bool = False) -> types.CallToolResult:
    """A tool result holding a single text block."""
    return types.CallToolResult(content=[text(value)], is_error=is_error)


def base_parser(description: str, default_name: str) -> argparse.ArgumentParser:
    """Flags every child understands: its reported name and how it is served."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--name", default=default_name, help="server name reported in serverInfo")
    parser.add_argument(
        "--transport",
        choices=["stdio", "http", "sse"],
        default="stdio",
        help="stdio (default); http = Streamable HTTP at /mcp; sse = legacy SSE at /sse + /messages/",
    )
    parser.add_argument("--host", default="127.0.0.1", help="bind address for http/sse")
    parser.add_argument("--port", type=int, default=0, help="port for http/sse (0 = pick a free one)")
    parser.add_argument(
        "--port-file", type=Path, default=None, help="http/sse: write the bound port here once accepting connections"
    )
    return parser


def setup_logging() -> None:
    """Log to stderr only: stdout carries the protocol on stdio."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")


def run(server: ChildServer, args: argparse.Namespace) -> None:
    """Serve `server` on the transport chosen on the command line until the peer goes away."""
    setup_logging()
    if args.transport == "stdio":
        anyio.run(_serve_stdio, server)
    else:
        anyio.run(_serve_http, server, args)


async def _serve_stdio(server: ChildServer) -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options(ALL_CHANGES))


async def _serve_http(server: ChildServer, args: argparse.Namespace) -> None:
    """Streamable HTTP (stateful, SSE responses) or legacy SSE, on a socket we bind so the port is known."""
    app: Starlette = server.streamable_http_app(host=args.host) if args.transport == "http" else _sse_app(server)
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    web = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(web.serve, [sock])
        while not web.started:  # noqa: ASYNC110 - uvicorn exposes a flag, not an event
            await anyio.sleep(0.02)
        path = "/mcp" if args.transport == "http" else "/sse"
        print(f"{server.name} listening on http://{args.host}:{port}{path}", file=sys.stderr, flush=True)
        if args.port_file is not None:
            tmp = args.port_file.with_name(args.port_file.name + ".tmp")
            tmp.write_text(str(port))
            tmp.replace(args.port_file)  # atomic: readers never see a half-written file


def _sse_app(server: ChildServer) -> Starlette:
    """Legacy HTTP+SSE app, the same shape `MCPServer.sse_app()` builds."""
    sse = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options(ALL_CHANGES))
        return Response()

    return Starlette(
        routes=[Route("/sse", endpoint=handle_sse, methods=["GET"]), Mount("/messages/", app=sse.handle_post_message)]
    )
