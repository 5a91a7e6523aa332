"""`hub serve`: a running hub, its config watch and signals, and one front (stdio, or Streamable HTTP)."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

import anyio
import structlog

from hub.app import Hub

if TYPE_CHECKING:
    from hub.observe.tracing import Tracing
from hub.platform import WINDOWS
from hub.reload import handle_signals, watch_config

STOP_SIGNALS = () if WINDOWS else (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)


async def serve(hub: Hub, http: str | None, allowed_hosts: list[str]) -> None:
    """Serve until the host leaves (stdio), or a stop signal comes; every child is stopped, each in bounded time."""
    log = structlog.get_logger("hub")
    stop = anyio.CancelScope()
    async with hub.running(), anyio.create_task_group() as tg:
        tracing = hub.record.tracing  # chosen when the hub was built (hub.cli)
        if tracing is not None:
            tg.start_soon(_flush_at_exit, tracing)
        tg.start_soon(watch_config, hub)
        if STOP_SIGNALS:
            tg.start_soon(handle_signals, hub, stop, STOP_SIGNALS)
        with stop:
            if http is None:
                from hub.host.stdio import serve_stdio

                await serve_stdio(hub)
            else:
                from hub.host.http_server import serve_http

                await serve_http(hub, http, allowed_hosts)
        tg.cancel_scope.cancel()
    log.info("hub_stopped")


async def _flush_at_exit(tracing: Tracing) -> None:
    """Send the spans still queued when the hub stops (bounded by `Tracing.shutdown`)."""
    try:
        await anyio.sleep_forever()
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(tracing.shutdown)
