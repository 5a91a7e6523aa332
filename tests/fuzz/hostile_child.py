"""A child that answers with whatever the test tells it to: the hostile child of the fuzz suite.

It speaks newline-delimited JSON-RPC by hand (no SDK: it starts in milliseconds and writes exactly the bytes it is
given, invalid UTF-8 included). Tools:

- `echo {text}`: an ordinary, correct answer (the sentinel call after each batch uses it);
- `emit {lines, answer, await}`: writes each of `lines` (base64 of raw bytes; `%ID%` in them becomes this call's
  JSON-RPC id as the hub sent it, `%ID+1%` the next integer) to stdout as it is, then, if `answer` is true, the
  ordinary answer `{"content":[{"type":"text","text":"emitted"}]}` (with `await`, an id of a request of its own
  among the lines, only once the hub has answered that). A hostile line that answers the call first wins; the
  ordinary answer is then one for an id the hub no longer waits for.

Run from the repo root: `python -m tests.fuzz.hostile_child`. Everything it does not understand is ignored;
requests it does not serve get -32601.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any

TOOLS = [
    {"name": "echo", "description": "Returns its text.", "inputSchema": {"type": "object"}},
    {"name": "emit", "description": "Writes the given lines as they are.", "inputSchema": {"type": "object"}},
]
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# Calls to answer once the hub has answered a request of the child's: that request's id (as JSON) -> the call's id.
WAITING: dict[str, Any] = {}


def write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(1, view)
        view = view[written:]


def answer(request_id: Any, result: dict[str, Any]) -> None:
    write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n")


def fail(request_id: Any, code: int, message: str) -> None:
    error = {"code": code, "message": message}
    write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode() + b"\n")


def call(request_id: Any, params: dict[str, Any]) -> None:
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict):
        fail(request_id, -32602, "arguments must be an object")
    elif name == "echo":
        answer(request_id, {"content": [{"type": "text", "text": str(arguments.get("text", ""))}]})
    elif name == "emit":
        ident = json.dumps(request_id).encode()
        following = json.dumps(request_id + 1 if type(request_id) is int else 0).encode()
        out = [
            base64.b64decode(line).replace(b"%ID+1%", following).replace(b"%ID%", ident)
            for line in arguments.get("lines", [])
        ]
        write(b"".join(out))
        if "await" in arguments:
            WAITING[json.dumps(arguments["await"])] = request_id
        elif arguments.get("answer", True):
            answer(request_id, {"content": [{"type": "text", "text": "emitted"}]})
    else:
        fail(request_id, -32602, f"Unknown tool: {name}")


def handle(message: dict[str, Any]) -> None:
    method = message.get("method")
    request_id = message.get("id")
    if method is None and json.dumps(request_id) in WAITING:  # the hub answered a request of ours: the call ends
        answer(WAITING.pop(json.dumps(request_id)), {"content": [{"type": "text", "text": "emitted"}]})
        return
    if not isinstance(method, str) or request_id is None:
        return  # a notification, or the hub's answer to something: nothing to do
    params = message.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        answer(
            request_id,
            {
                "protocolVersion": asked if asked in VERSIONS else VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "hostile", "version": "1.0.0"},
            },
        )
    elif method == "tools/list":
        answer(request_id, {"tools": TOOLS})
    elif method == "tools/call":
        call(request_id, params)
    elif method in ("ping", "logging/setLevel"):
        answer(request_id, {})
    else:
        fail(request_id, -32601, f"Method not found: {method}")


def main() -> None:
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(message, dict):
            continue
        try:
            handle(message)
        except Exception as exc:  # what the hub forwards from a fuzzing host: an error, never the end of the child
            if message.get("id") is not None and "method" in message:
                fail(message.get("id"), -32603, f"hostile child: {type(exc).__name__}")


if __name__ == "__main__":
    main()
