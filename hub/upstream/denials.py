"""A sandboxed child's denials in the hub's log: `sandbox_denied`, one event per denial (docs/call-log.md), read
from its stderr and its error answers against what its sandbox shows (`hub.platform.denials`); a child without a
sandbox has no watch. The event never holds the text itself, which may hold what the child was given.
"""

from __future__ import annotations

from typing import Any

import structlog

from hub.logs import Throttle
from hub.platform.denials import denial
from hub.platform.sandbox import Exposure
from hub.protocol.jsonrpc import Response

# At most this many denials logged a second per child (a child retrying in a loop cannot flood the log).
DENIALS_PER_SECOND = 20


class SandboxWatch:
    """Reads what a sandboxed child reports of its failures, and logs those that are its sandbox's denials."""

    def __init__(self, name: str, exposure: Exposure) -> None:
        self.name = name
        self.exposure = exposure
        self._log = structlog.get_logger("hub.sandbox").bind(child=name)
        self._throttle = Throttle(DENIALS_PER_SECOND)

    def stderr(self, line: str) -> None:
        self._note(line, "stderr")

    def answer(self, response: Response) -> None:
        """An answer of the child's: an error, or a result with `isError`, is read; any other costs a lookup."""
        if response.error is not None:
            self._note(str(response.error.get("message", "")), "answer")
        elif response.result is not None and response.result.get("isError") is True:
            self._note(_text(response.result.get("content")), "answer")

    def _note(self, text: str, source: str) -> None:
        found = denial(text, self.exposure)
        if found is None or not self._throttle.tick():
            return
        where = "address" if found.kind == "network" else "path"
        fields = {where: found.target, "error": found.error, "source": source}
        self._log.warning("sandbox_denied", kind=found.kind, **fields)


def _text(content: Any) -> str:
    """The text blocks of a tool result's content, joined."""
    if not isinstance(content, list):
        return ""
    texts = [block.get("text") for block in content if isinstance(block, dict)]
    return "\n".join(t for t in texts if isinstance(t, str))
