"""A child without the SDK that writes down every message it receives: what the hub really sent it.

Usage: python -m tests.children.recorder RECORD_FILE

Each received message is appended to RECORD_FILE as one JSON line, with `"in_flight"` (calls being served at that
moment) added to tools/call requests. Tools: `echo {text}`, `sleep {seconds, text}` (answers `text` or "slept"
after the delay, or never if cancelled first), `progress {steps}` (one progress notification per step, with the
token it was given), `log {text}` (a log message, then the answer), `ask {method, params}` (sends the hub that
request and answers with the JSON of the response it got) and `exit {code}` (ends the process mid-call).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

TOOLS = [
    {"name": name, "description": f"{name} (recorder)", "inputSchema": {"type": "object"}}
    for name in ("echo", "sleep", "progress", "log", "ask", "exit")
]


class Recorder:
    def __init__(self, record: str) -> None:
        self.record = open(record, "a", buffering=1)  # noqa: SIM115 - open for the process's life
        self.calls: dict[Any, asyncio.Task[None]] = {}
        self.out = sys.stdout
        self.asked: dict[str, asyncio.Future[dict[str, Any]]] = {}  # the recorder's own requests, by id

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message) + "\n")
        self.out.flush()

    def answer(self, request_id: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def handle(self, message: dict[str, Any]) -> None:  # noqa: C901 - one branch per test scenario
        method, request_id, params = message.get("method"), message.get("id"), message.get("params") or {}
        if method == "tools/call":
            message["in_flight"] = len(self.calls) + 1
        self.record.write(json.dumps(message) + "\n")
        if method == "initialize":
            self.answer(
                request_id,
                {
                    "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "recorder", "version": "1.0.0"},
                },
            )
        elif method == "tools/list":
            self.answer(request_id, {"tools": TOOLS})
        elif method == "ping":
            self.answer(request_id, {})
        elif method == "tools/call":
            self.calls[request_id] = asyncio.create_task(self.call(request_id, params))
        elif method == "notifications/cancelled":
            task = self.calls.pop(params.get("requestId"), None)
            if task is not None:
                task.cancel()
        elif method is None and request_id in self.asked:
            asked = self.asked.pop(request_id)
            if not asked.done():  # its call may have been cancelled meanwhile
                asked.set_result(message)
        elif request_id is not None:
            self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})

    async def call(self, request_id: Any, params: dict[str, Any]) -> None:
        name, args = params.get("name"), params.get("arguments") or {}
        try:
            if name == "sleep":
                await asyncio.sleep(float(args.get("seconds", 0)))
                text = str(args.get("text", "slept"))
            elif name == "progress":
                token = (params.get("_meta") or {}).get("progressToken")
                steps = int(args.get("steps", 1))
                for step in range(1, steps + 1):
                    if token is not None:
                        progress = {"progressToken": token, "progress": step, "total": steps}
                        self.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
                    await asyncio.sleep(0)
                text = f"done {steps}"
            elif name == "log":
                text = str(args.get("text", ""))
                log = {"level": "warning", "logger": "rec-logger", "data": text}
                self.send({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
            elif name == "ask":
                ask_id = f"rec-ask-{len(self.asked) + 1}-{request_id}"
                self.asked[ask_id] = asyncio.get_running_loop().create_future()
                request = {"jsonrpc": "2.0", "id": ask_id, "method": args["method"], "params": args.get("params", {})}
                self.send(request)
                text = json.dumps(await self.asked[ask_id], sort_keys=True)
            elif name == "exit":
                sys.stderr.write("recorder: exiting as asked\n")
                sys.stderr.flush()
                os._exit(int(args.get("code", 1)))
            else:
                text = str(args.get("text", ""))
            self.answer(request_id, {"content": [{"type": "text", "text": text}]})
        finally:
            self.calls.pop(request_id, None)


async def main(record: str) -> None:
    recorder = Recorder(record)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if line.strip():
            await recorder.handle(json.loads(line))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
