"""An ops child for the safety tests: monitoring and database tools, some annotated and some not, that write every
call they receive to a record file (`OPSDB_RECORD`), so a test can check in the child what reached it. Plain
newline-delimited JSON-RPC on stdio, no SDK.

Tools: `get_host` (no annotations), `list_hosts` (readOnlyHint), `restart_host` (no annotations), `query(sql,
database, limit)` (readOnlyHint false, destructiveHint false), `drop_table(table)` (destructiveHint).
`OPSDB_QUERY_DESCRIPTION` replaces the description of `query` (an upgrade that changes a tool, for pinning).

Usage: python -m tests.children.opsdb
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _tool(name: str, properties: dict[str, Any], required: list[str], **annotations: bool) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": name,
        "description": f"{name.replace('_', ' ')} (opsdb)",
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    }
    if annotations:
        tool["annotations"] = annotations
    if name == "query" and os.environ.get("OPSDB_QUERY_DESCRIPTION"):
        tool["description"] = os.environ["OPSDB_QUERY_DESCRIPTION"]
    return tool


STRING = {"type": "string"}
TOOLS = [
    _tool("get_host", {"name": STRING}, ["name"]),
    _tool("list_hosts", {}, [], readOnlyHint=True),
    _tool("restart_host", {"name": STRING}, ["name"]),
    _tool(
        "query",
        {"sql": STRING, "database": STRING, "limit": {"type": "integer"}},
        ["sql", "database"],
        readOnlyHint=False,
        destructiveHint=False,
    ),
    _tool("drop_table", {"table": STRING}, ["table"], destructiveHint=True),
]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def record(name: str, arguments: Any) -> None:
    path = os.environ.get("OPSDB_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(json.dumps({"tool": name, "arguments": arguments}) + "\n")


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if request_id is None:
            continue
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "opsdb", "version": "1.0.0"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            record(str(name), arguments)
            text = f"ran {name} with {json.dumps(arguments, sort_keys=True)}"
            result = {"content": [{"type": "text", "text": text}]}
        else:
            result = {}
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
