"""`hub call NAME ['{json}']`: one tool called through the same MCP path a host uses, its result printed.

A call held for confirmation (`confirm:`) is asked about on the terminal when there is one (`ask_on_terminal`);
a script gets the refusal instead.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, TextIO

from hub.cli.output import EXIT_USAGE, fail

if TYPE_CHECKING:
    from hub.host.inprocess import InProcessHost


async def ask_on_terminal(question: str) -> bool:
    """The hub's confirmation question on the terminal (stderr; stdout is the result's): yes only on 'y' or 'yes'."""
    import contextlib
    import threading

    import anyio
    import anyio.from_thread
    import anyio.lowlevel

    answered = anyio.Event()
    answer: list[str] = []
    token = anyio.lowlevel.current_token()

    def ask() -> None:
        # A daemon thread: if the call's deadline passes while the person has not answered, `hub call` exits
        # without waiting for a line that may never come (a worker thread would hold the process until Enter).
        print(f"{question}\nRun it? [y/N] ", end="", file=sys.stderr, flush=True)
        answer.append(sys.stdin.readline())
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits for the answer any more
            anyio.from_thread.run_sync(answered.set, token=token)

    threading.Thread(target=ask, name="hub-confirm", daemon=True).start()
    await answered.wait()
    return answer[0].strip().lower() in ("y", "yes")


async def print_call(host: InProcessHost, name: str, arguments: str, out: TextIO) -> int:
    """The result's blocks on `out`; 0, or 1 for an error or an isError result, 2 for arguments that are not an
    object."""
    from hub.host.inprocess import HostError

    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        return fail(f"arguments must be a JSON object: {exc}", EXIT_USAGE)
    if not isinstance(parsed, dict):
        return fail('arguments must be a JSON object, e.g. \'{"timezone": "UTC"}\'', EXIT_USAGE)
    try:
        result = await host.request("tools/call", {"name": name, "arguments": parsed})
    except HostError as exc:
        return fail(str(exc))
    for block in result.get("content", []):
        if block.get("type") == "text":
            out.write(str(block.get("text", "")).rstrip("\n") + "\n")
        else:
            out.write(json.dumps(block) + "\n")
    if "structuredContent" in result:
        out.write("structuredContent: " + json.dumps(result["structuredContent"]) + "\n")
    return 1 if result.get("isError") else 0
