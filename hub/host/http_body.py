"""Reading an HTTP request's body: bounded in size and in time, for every endpoint that takes one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import anyio
from starlette.types import Receive

from hub.platform.pipes import EDGE


@dataclass(frozen=True)
class Body:
    """What arrived: the whole body (`data`), or why not, with the first bytes seen (for an answer's id)."""

    data: bytes | None
    problem: Literal["none", "left", "too_large", "late"] = "none"
    head: bytes = b""


async def read_body(receive: Receive, limit: int, seconds: float) -> Body:
    """The body, if it is at most `limit` bytes and arrives within `seconds`; reading stops at the first excess."""
    chunks: list[bytes] = []
    size = 0
    with anyio.move_on_after(seconds):
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return Body(None, "left")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                return Body(None, "too_large", (chunks[0] if chunks else chunk)[:EDGE])
            chunks.append(chunk)
            if not message.get("more_body", False):
                return Body(b"".join(chunks))
    return Body(None, "late")
