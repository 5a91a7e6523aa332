"""A child that will not go: it ignores SIGTERM, SIGINT and SIGHUP, and the end of its stdin, and at once starts a
grandchild that ignores them too. Only SIGKILL ends them (or 300 s).

Both carry `--marker MARK` in their argv, so that a test finds them in the process table. The child answers
`initialize` and `tools/list` (no tools) by hand, so that the hub takes it for a server.

Run from the repo root: `python -m tests.fuzz.stubborn_child --marker MARK`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

LIFETIME = 300.0


def main() -> None:
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    marker = sys.argv[sys.argv.index("--marker") + 1]
    if "--grandchild" in sys.argv:
        time.sleep(LIFETIME)
        return
    quiet = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.Popen([sys.executable, "-m", "tests.fuzz.stubborn_child", "--grandchild", "--marker", marker], **quiet)  # type: ignore[call-overload]
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message:
            continue
        result: dict[str, Any] = {"tools": []}
        if message.get("method") == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stubborn", "version": "1"},
            }
        os.write(1, json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n")
    time.sleep(LIFETIME)  # stdin ended: stay anyway


if __name__ == "__main__":
    main()
