"""`hub serve`: a running hub, its config watch and signals, and one front (stdio, or Streamable HTTP).

A reload (a file change, SIGHUP, `hub reload`, or POST /reload) validates the new files exactly as at start
(`Hub.reload_from_disk`); if they are invalid the error is logged (`config_rejected`) and the running configuration
stays in force.
"""

from __future__ import annotations

import glob
import os
import signal
from collections.abc import Iterable
from pathlib import Path

import anyio
import structlog

from hub.app import Hub
from hub.config.envfile import env_file_path
from hub.config.lock import lock_path
from hub.logs import reopen_log_file
from hub.platform import WINDOWS

STOP_SIGNALS = () if WINDOWS else (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
# How often the config file's size and modification time are compared; a stat per second costs nothing.
WATCH_INTERVAL = 1.0


async def serve(hub: Hub, http: str | None, allowed_hosts: list[str]) -> None:
    """Serve until the host leaves (stdio), or a stop signal comes; every child is stopped, each in bounded time."""
    stop = anyio.CancelScope()
    async with hub.running(), anyio.create_task_group() as tg:
        tg.start_soon(watch_config, hub)
        if STOP_SIGNALS:
            tg.start_soon(handle_signals, hub, stop, STOP_SIGNALS)
        try:
            with stop:
                if http is None:
                    from hub.host.stdio import serve_stdio

                    await serve_stdio(hub)
                else:
                    from hub.host.http_server import serve_http

                    await serve_http(hub, http, allowed_hosts)
        finally:
            tg.cancel_scope.cancel()
            if hub.record.tracing is not None:  # the spans still queued (bounded by `Tracing.shutdown`)
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(hub.record.tracing.shutdown)
    structlog.get_logger("hub").info("hub_stopped")


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


async def watch_config(hub: Hub) -> None:
    """Reload when a file of the configuration changes (modification time or size): servers.yaml, every file it
    includes (and a new file matching an include glob), its servers.lock (`hub pin --approve`) and its servers.env.
    Editors that replace a file are covered too."""
    last = _stamps(hub)
    while True:
        await anyio.sleep(WATCH_INTERVAL)
        if not hub.loaded.config.hub.watch:
            continue
        current = _stamps(hub)
        if current[hub.loaded.path] is not None and current != last:
            await hub.reload_from_disk("file changed")
            last = _stamps(hub)  # the files of the configuration now in force


def _stamps(hub: Hub) -> dict[Path, tuple[int, int] | None]:
    loaded = hub.loaded
    files = {loaded.path, *loaded.files, lock_path(loaded.path), env_file_path(loaded.path)}
    for pattern in loaded.globs:
        files.update(Path(p) for p in glob.glob(pattern))
    return {f: _stamp(f) for f in files}


async def handle_signals(hub: Hub, stop: anyio.CancelScope, signals: Iterable[signal.Signals]) -> None:
    """SIGHUP reopens the log file and reloads. SIGTERM and SIGINT stop the hub gracefully: /readyz turns 503 and
    no new session is taken, the calls in flight get `hub.drain_timeout` to finish, then the children are ended (each
    in bounded time). A second SIGTERM or SIGINT stops at once."""
    async with anyio.create_task_group() as tg:
        with anyio.open_signal_receiver(*signals) as received:
            async for signum in received:
                if signum == signal.SIGHUP:
                    reopen_log_file(hub.call_log)  # after logrotate moved the log file away (docs/call-log.md#rotation)
                    await hub.reload_from_disk("SIGHUP")
                    continue
                structlog.get_logger("hub").info("hub_stopping", signal=signal.Signals(signum).name)
                if hub.draining:
                    break
                tg.start_soon(_drain_then_stop, hub, stop)
        stop.cancel()
        tg.cancel_scope.cancel()


async def _drain_then_stop(hub: Hub, stop: anyio.CancelScope) -> None:
    await hub.drain()
    stop.cancel()
