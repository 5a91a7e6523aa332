"""How long a test waits for another process, and the wait for a file it writes."""

from __future__ import annotations

from pathlib import Path

import anyio

# Every wait in the tests is bounded by this; a child's cold start (an npm server, an SDK import) fits well inside.
WAIT = 60.0


async def wait_for_file(path: Path, limit: float = WAIT) -> None:
    """Bounded wait for a file that a child process writes (its only way to tell us something happened)."""
    with anyio.fail_after(limit):
        while not await anyio.Path(path).exists():  # noqa: ASYNC110 - another process writes it; no event exists
            await anyio.sleep(0.05)
