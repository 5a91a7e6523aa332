"""A task group that lives as long as the hub and takes tasks started from any request handler."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
from anyio.abc import TaskGroup


class TaskHost:
    """Tasks that must outlive the request that starts them (a host session's lane, a parked call) run here, so
    that the hub's shutdown cancels them all and none is left behind."""

    def __init__(self) -> None:
        self._tg: TaskGroup | None = None
        self._started = anyio.Event()

    async def run(self) -> None:
        """Host the tasks until cancelled."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._started.set()
            await anyio.sleep_forever()

    async def start_task(self, limit_s: float, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Start `func(*args)` in the host's task group, waiting at most `limit_s` for `run` to have begun."""
        with anyio.fail_after(limit_s):
            await self._started.wait()
        assert self._tg is not None
        self._tg.start_soon(func, *args)
