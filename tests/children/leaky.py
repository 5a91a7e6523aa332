"""A child that leaks its credentials everywhere it can: the secret from its environment (`LEAKY_TOKEN`) goes to its
stderr at start, into the text of the `leak` tool's result, and into the message of the `leak_error` tool's JSON-RPC
error. Plain newline-delimited JSON-RPC on stdio, no SDK.

Usage: python -m tests.children.leaky
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOLS = [{"name": n, "description": f"{n} (leaky)", "inputSchema": {"type": "object"}} for n in ("leak", "leak_error")]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    secret = os.environ.get("LEAKY_TOKEN", "")
    print(f"leaky: starting with token {secret} and header {os.environ.get('LEAKY_HEADER', '')}", file=sys.stderr)
    sys.stderr.flush()
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if request_id is None:
            continue
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "leaky", "version": "1.0.0"},
            }
            send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call" and params.get("name") == "leak":
            content = [{"type": "text", "text": f"your token is {secret}"}]
            send({"jsonrpc": "2.0", "id": request_id, "result": {"content": content}})
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000 - 1, "message": f"denied for {secret}"}})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})


if __name__ == "__main__":
    main()
