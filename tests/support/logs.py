"""The hub's structured log, as another process wrote it: its lines of one kind, and the wait for one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from tests.support.waits import WAIT


def log_events(log_file: Path, event: str) -> list[dict[str, Any]]:
    """The hub's structured log lines of one kind, its rotated files (hub.log.N ... hub.log.1) included."""
    from hub.logfile import rotated_siblings

    files = [*rotated_siblings(log_file), log_file]
    lines = [line for f in files if f.exists() for line in f.read_text().splitlines()]
    return [e for e in (json.loads(line) for line in lines if line.startswith("{")) if e.get("event") == event]


async def wait_for_log(
    log_file: Path, event: str, predicate: Callable[[dict[str, Any]], bool] = lambda e: True, limit: float = WAIT
) -> dict[str, Any]:
    """Bounded wait for a hub log line (another process writes it; no event exists)."""
    with anyio.fail_after(limit):
        while True:
            found = [e for e in log_events(log_file, event) if predicate(e)]
            if found:
                return found[-1]
            await anyio.sleep(0.05)
