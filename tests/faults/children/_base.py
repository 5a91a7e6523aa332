"""A tiny tool registry on the low-level `Server`, shared by the faulty children.

Every child built on it has `echo {text}` and `pid` (its process id, so that a test can tell a restarted child from
an untouched one) plus its own tools. Diagnostics go to stderr only: stdout is the MCP wire.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from tests.children._common import ChildServer, base_parser, run, text_result

Ctx = ServerRequestContext[Any]
ToolFn = Callable[[Ctx, dict[str, Any]], Awaitable[types.CallToolResult]]


def say(line: str) -> None:
    """One line to stderr, flushed (the hub keeps the tail of it for error messages)."""
    print(line, file=sys.stderr, flush=True)


async def mark(path: str, content: str) -> None:
    """Write a marker file for the test; shielded so that it also works from a cancelled scope."""
    with anyio.CancelScope(shield=True):
        await anyio.Path(path).write_text(content)


class FaultServer:
    def __init__(self, name: str) -> None:
        self.name = name
        self.tools: dict[str, tuple[types.Tool, ToolFn]] = {}
        self.before_call: Callable[[str], None] | None = None
        self.add("echo", "Returns its text argument.", {"text": {"type": "string"}}, self._echo)
        self.add("pid", "Returns the child's process id.", {}, self._pid)
        self.server = ChildServer(name, version="1.0.0", on_list_tools=self._list, on_call_tool=self._call)

    def add(self, name: str, description: str, props: dict[str, Any], fn: ToolFn) -> None:
        schema = {"type": "object", "properties": props}
        self.tools[name] = (types.Tool(name=name, description=description, input_schema=schema), fn)

    async def _list(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool for tool, _ in self.tools.values()])

    async def _call(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        entry = self.tools.get(params.name)
        if entry is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        if self.before_call is not None:
            self.before_call(params.name)
        return await entry[1](ctx, params.arguments or {})

    @staticmethod
    async def _echo(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return text_result(str(args.get("text", "")))

    @staticmethod
    async def _pid(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
        return text_result(str(os.getpid()))


def parser(description: str, name: str) -> argparse.ArgumentParser:
    return base_parser(description, name)


def serve(fault: FaultServer, args: argparse.Namespace) -> None:
    run(fault.server, args)
