"""`hub call NAME ['{json}']`: one tool called through the same MCP path a host uses, its result printed.

A call held for confirmation (`confirm:`) is asked about on the terminal when there is one; a script gets the
refusal instead.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import threading
from typing import Any, TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel

from hub.cli.output import EXIT_FAILED, EXIT_USAGE, fail, print_json
from hub.host.inprocess import HostError, InProcessHost


async def ask_on_terminal(question: str) -> bool:
    """The hub's confirmation question on the terminal (stderr; stdout is the result's): yes only on 'y' or 'yes'."""
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


async def print_call(host: InProcessHost, name: str, arguments: str, as_json: bool, out: TextIO) -> int:
    """The result on `out` (its content once; structured content only when no text block already says it; with
    `as_json`, the result as the hub answered it); 0, or 1 for an error (one line on stderr, or `{"error": ...}`
    with `as_json`) or an isError result (printed as the tool said it, except a validation error of the arguments:
    one line on stderr), 2 for arguments that are not an object."""
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        return fail(f"arguments must be a JSON object: {exc}", EXIT_USAGE)
    if not isinstance(parsed, dict):
        return fail('arguments must be a JSON object, e.g. \'{"timezone": "UTC"}\'', EXIT_USAGE)
    try:
        result = await host.request("tools/call", {"name": name, "arguments": parsed})
    except HostError as exc:
        if as_json:
            error = {"code": exc.error.get("code"), "message": exc.error.get("message")}
            print_json({"error": error}, out)
            return EXIT_FAILED
        return fail(one_line(str(exc)))
    return _print_result(result, name, as_json, out)


def _print_result(result: dict[str, Any], name: str, as_json: bool, out: TextIO) -> int:
    content = [block for block in result.get("content", []) if isinstance(block, dict)]
    failed = bool(result.get("isError"))
    if as_json:
        document: dict[str, Any] = {"content": content, "isError": failed}
        if "structuredContent" in result:
            document["structuredContent"] = result["structuredContent"]
        print_json(document, out)
        return EXIT_FAILED if failed else 0
    texts = "\n".join(str(block.get("text", "")) for block in content if block.get("type") == "text")
    if failed and (VALIDATION.search(texts) or not texts):  # the arguments were refused: one line on stderr
        return fail(f"{name}: " + one_line(texts or "the tool reported an error"))
    said = []
    for block in content:
        if block.get("type") == "text":
            text = str(block.get("text", ""))
            said.append(_as_json(text))
            out.write(text.rstrip("\n") + "\n")
        else:
            out.write(json.dumps(block) + "\n")
    if "structuredContent" in result and result["structuredContent"] not in said:
        out.write(json.dumps(result["structuredContent"], indent=2) + "\n")
    return EXIT_FAILED if failed else 0  # any other error of the tool's is its own output (the exit status says so)


# A validation error of the arguments as Python servers (pydantic) report it: "1 validation error for ...".
VALIDATION = re.compile(r"\b\d+ validation errors? for \w+")


def _as_json(text: str) -> Any:
    """The data a text block holds as JSON: the whole text, or what follows its first line (the hub's own tools
    write a one-line summary above their JSON), else None."""
    for candidate in (text, text.partition("\n")[2]):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def one_line(message: str) -> str:
    """An error message on one line: a pydantic validation error's "loc" and "msg [type=...]" lines become
    "loc: msg", its "For further information" lines go."""
    parts: list[str] = []
    for raw in message.splitlines():
        line = raw.strip()
        if not line or line.startswith("For further information"):
            continue
        detail = re.fullmatch(r"(.*?)\s*\[type=[^\]]*\]", line)
        if detail is not None and parts:
            parts[-1] = f"{parts[-1]}: {detail.group(1)}"
        else:
            parts.append(line)
    return "; ".join(parts)
