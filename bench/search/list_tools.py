"""Ask a stdio MCP server for its tools: `python bench/search/list_tools.py OUT.json -- COMMAND ARGS...`.

Writes {"server": serverInfo, "tools": [...]} (every page of tools/list; name, title, description, inputSchema and
annotations of each, unedited), the raw material of bench/search/catalog/. Bounded: 30 s for the whole exchange.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

KEPT = ("name", "title", "description", "inputSchema", "annotations")
LIMIT_S = 30.0


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    out, command = argv[0], argv[2:]
    child = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    timer = threading.Timer(LIMIT_S, child.kill)
    timer.start()
    assert child.stdin is not None and child.stdout is not None
    stdin, stdout = child.stdin, child.stdout

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        stdin.flush()

    def answer(request_id: int) -> dict[str, Any]:
        for line in stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue  # a server that prints other things on stdout
            if message.get("id") == request_id:
                return message["result"]  # type: ignore[no-any-return]
        raise SystemExit(f"{command[0]} ended (or took over {LIMIT_S:.0f} s) before answering")

    try:
        client = {"name": "list_tools", "version": "1"}
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client},
            }
        )
        server = answer(1)["serverInfo"]
        send({"method": "notifications/initialized"})
        tools: list[dict[str, Any]] = []
        cursor, request_id = None, 2
        while True:
            send({"id": request_id, "method": "tools/list", "params": {"cursor": cursor} if cursor else {}})
            page = answer(request_id)
            tools += [{k: t[k] for k in KEPT if k in t} for t in page["tools"]]
            cursor, request_id = page.get("nextCursor"), request_id + 1
            if not cursor:
                break
    finally:
        timer.cancel()
        child.kill()
        child.wait()
    with open(out, "w") as handle:
        json.dump({"server": server, "tools": tools}, handle, indent=1, ensure_ascii=False)
    print(f"{out}: {len(tools)} tools")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
