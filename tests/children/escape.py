"""A child that tries to leave its sandbox and reports what happened: `connect` opens a TCP connection, `write`
writes a file, `read` reads one. Each answers "ok: ..." or "denied: <the error>", and tells a denial on stderr too
(which the hub logs as the child's stderr). Plain newline-delimited JSON-RPC on
stdio, standard library only (it must start inside a strict sandbox).

Usage: python -m tests.children.escape
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

SCHEMA = {"type": "object"}
TOOLS = [{"name": n, "description": f"try to {n}", "inputSchema": SCHEMA} for n in ("connect", "write", "read")]


def attempt(name: str, arguments: dict[str, Any]) -> str:
    try:
        if name == "connect":
            with socket.create_connection((arguments["host"], int(arguments["port"])), timeout=5):
                return f"ok: connected to {arguments['host']}:{arguments['port']}"
        if name == "write":
            Path(arguments["path"]).write_text(arguments.get("text", "escaped"))
            return f"ok: wrote {arguments['path']}"
        return "ok: " + Path(arguments["path"]).read_text()
    except OSError as error:
        target = arguments.get("path") or f"{arguments.get('host')}:{arguments.get('port')}"
        print(f"escape denied: {name} {target}: {error}", file=sys.stderr, flush=True)  # the hub logs it
        return f"denied: {error}"


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if request_id is None:
            continue
        result: dict[str, Any] = {}
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "escape", "version": "1.0.0"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            text = attempt(params.get("name", ""), params.get("arguments") or {})
            result = {"content": [{"type": "text", "text": text}]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
