"""Synthetic MCP child that does NOT use the SDK: newline-delimited JSON-RPC over stdin/stdout, asyncio only.

    python -m bench.child_raw [--tools K] [--name NAME]

Same tools as `child_sdk` (bench/tools.py). Answers initialize, ping, tools/list, tools/call; ignores
notifications; -32601 for anything else. Its cost per call is a json.loads and a json.dumps, so a benchmark
through it shows the hub's own cost rather than the child's. Exits on end of stdin.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from bench.tools import payload_text, tool_definitions

KNOWN_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


class RawChild:
    def __init__(self, name: str, k: int) -> None:
        self.name = name
        self.tools = tool_definitions(k)
        self.names = {t["name"] for t in self.tools}
        self.out = sys.stdout.buffer
        self.pending: set[asyncio.Task[None]] = set()

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.out.flush()

    def reply(self, rid: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def error(self, rid: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})

    def handle(self, msg: dict[str, Any]) -> None:
        method, rid = msg.get("method"), msg.get("id")
        if method is None or rid is None:
            return  # a response or a notification (initialized, cancelled, roots changed): nothing to do
        params = msg.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            self.reply(
                rid,
                {
                    "protocolVersion": asked if asked in KNOWN_VERSIONS else KNOWN_VERSIONS[-1],
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": self.name, "version": "1.0.0"},
                },
            )
        elif method == "ping":
            self.reply(rid, {})
        elif method == "tools/list":
            self.reply(rid, {"tools": self.tools})
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "sleep":
                task = asyncio.ensure_future(self.sleep(rid, float(args.get("ms", 0))))
                self.pending.add(task)
                task.add_done_callback(self.pending.discard)
            elif name == "echo":
                self.text(rid, str(args.get("text", "")))
            elif name == "payload":
                self.text(rid, payload_text(int(args.get("bytes", 0))))
            elif name in self.names:
                self.text(rid, "ok")
            else:
                self.error(rid, -32602, f"Unknown tool: {name}")
        else:
            self.error(rid, -32601, f"Method not found: {method}")

    def text(self, rid: Any, text: str) -> None:
        self.reply(rid, {"content": [{"type": "text", "text": text}], "isError": False})

    async def sleep(self, rid: Any, ms: float) -> None:
        await asyncio.sleep(ms / 1000)
        self.text(rid, "slept")

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=256 * 1024 * 1024)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while True:
            line = await reader.readline()
            if not line:
                return
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.error(None, -32700, "Parse error")
                continue
            self.handle(msg)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--name", default="bench-raw")
    args = parser.parse_args()
    asyncio.run(RawChild(args.name, args.tools).serve())


if __name__ == "__main__":
    main()
