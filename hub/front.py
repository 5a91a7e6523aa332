"""Host-facing transports: stdio (one host, e.g. a desktop app's config entry) and Streamable HTTP (a team).

In stdio mode stdout carries only the protocol: the SDK's `stdio_server` owns fd 1 while serving and every
log line goes to stderr or the log file.

Over HTTP the hub binds to 127.0.0.1 unless told otherwise, and checks Host and Origin (DNS-rebinding
protection): loopback names are allowed at the served port; other names must be listed with --allow-host.
`/healthz` says the hub is up, `/readyz` which children are ready (503 until all are), and `POST /reload`
(from loopback only) re-reads servers.yaml.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
import structlog
import uvicorn
from anyio.abc import TaskGroup
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from hub.child import ChildState
from hub.config import LoadedConfig
from hub.http_passthrough import HttpPassThrough
from hub.hub import Hub
from hub.logs import CallLog
from hub.reload import handle_signals, reload_from_disk, watch_config
from hub.server import build_server
from hub.spawn import EarlySpawns
from hub.stdio_front import stdio_front
from hub.warm_start import EarlyFront, WarmStart

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
_STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)


@asynccontextmanager
async def _serving(
    loaded: LoadedConfig, call_log: CallLog, spawns: EarlySpawns | None, started: float | None
) -> AsyncIterator[tuple[Hub, anyio.CancelScope, TaskGroup]]:
    """A running hub with its config watch and signal handling; cancelling the scope stops it gracefully."""
    hub = Hub(loaded, call_log, spawns, started)
    stop = anyio.CancelScope()  # entered by the caller around what it serves
    async with hub.running(), anyio.create_task_group() as tg:
        tg.start_soon(watch_config, hub)
        tg.start_soon(handle_signals, hub, stop, _STOP_SIGNALS)
        try:
            yield hub, stop, tg
        finally:
            tg.cancel_scope.cancel()


async def serve_stdio(
    loaded: LoadedConfig,
    call_log: CallLog | None = None,
    warm: WarmStart | None = None,
    early: EarlyFront | None = None,
    spawns: EarlySpawns | None = None,
    started: float | None = None,
) -> None:
    log = structlog.get_logger("hub")
    if early is not None:  # a first start's probe lets go of the children's pipes before their connections start
        await anyio.to_thread.run_sync(early.release_probe)
    async with _serving(loaded, call_log or CallLog(), spawns, started) as (hub, stop, tg):
        hub.passthrough.warm = warm
        server = build_server(hub)
        with stop:
            handoff = await anyio.to_thread.run_sync(early.finish) if early is not None else None
            if handoff is not None and handoff.initialize is not None:
                assert warm is not None
                warm.sent = handoff.initialize
                log.info(
                    "warm_start" if early is not None and early.cached else "first_start",  # from the cache or not
                    cache=str(warm.path),
                    answered=["initialize", *(["tools/list"] if handoff.listing is not None else [])],
                    held=len(handoff.lines) - 1,  # the replayed initialize is the hub's own
                )
            if warm is not None:  # the complete listing is kept even if the host never lists again
                tg.start_soon(_confirm_listing, hub, warm, handoff.listing if handoff is not None else None)
            async with stdio_front(hub.passthrough, warm, handoff) as (read, write):
                await server.run(read, write, server.create_initialization_options())
    log.info("hub_stopped")


async def _confirm_listing(hub: Hub, warm: WarmStart, sent: bytes | None) -> None:
    """Once every child has settled: the cache gets what the hub answers now (even if the host never lists again),
    and a host whose early listing (`sent`: cached, or a first start's) is not the hub's is told to list again."""
    await hub.wait_settled(hub.settle_limit())
    if warm.answered_version() is None:  # children can settle before the SDK session has seen the host's initialize
        answered = anyio.Event()
        warm.on_answered = answered.set
        with anyio.move_on_after(hub.settle_limit()):
            await answered.wait()
    # Shaping it keeps it, with the initialize the SDK gave.
    current = hub.passthrough.listing_bytes(warm.answered_version())
    if sent is not None:
        # As JSON, not bytes: a first start's listing (hub/first_start.py) orders its keys as the children did.
        stale = current != sent and (current is None or json.loads(current) != json.loads(sent))
        structlog.get_logger("hub").info("warm_start_listing_checked", stale=stale)
        if stale:
            hub.hosts.list_changed("tools")


def parse_bind(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return (host or "127.0.0.1").strip("[]"), int(port)


def security_settings(host: str, port: int, allowed: list[str]) -> TransportSecuritySettings:
    """Loopback names, the bound name and each --allow-host value, at the served port unless one is given."""
    names = [*LOOPBACK, *allowed]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        names.append(host)
    hosts = [
        name if name.rpartition(":")[2].isdigit() and not name.endswith("]") else f"{name}:{port}" for name in names
    ]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class _StopIsNoError(logging.Filter):
    """uvicorn logs its lifespan, and requests still open, as failed when the hub's stop cancels them.

    A request's comes with the exception; the lifespan's as starlette's formatted traceback, in the message.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        kind = record.exc_info[0] if record.exc_info else None
        if kind is not None:
            return not issubclass(kind, asyncio.CancelledError)
        text = record.getMessage()
        return not (text.startswith("Traceback") and text.rstrip().endswith("CancelledError"))


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handlers: the hub handles SIGTERM, SIGINT and SIGHUP itself."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def health_routes(hub: Hub) -> list[Route]:
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "uptime_s": hub.health()["uptime_s"]})

    async def readyz(request: Request) -> JSONResponse:
        servers = {c.name: str(c.state) for c in hub.children.values()}
        ready = all(c.state is ChildState.READY for c in hub.children.values())
        return JSONResponse({"ready": ready, "servers": servers}, status_code=200 if ready else 503)

    async def reload(request: Request) -> JSONResponse:
        client = request.client.host if request.client else ""
        if client not in ("127.0.0.1", "::1"):
            return JSONResponse({"error": "reload is accepted from loopback only"}, status_code=403)
        summary = await reload_from_disk(hub, "POST /reload")
        if summary is None:
            return JSONResponse({"error": "the new configuration was rejected; see the hub's log"}, status_code=422)
        return JSONResponse(summary)

    return [Route("/healthz", healthz), Route("/readyz", readyz), Route("/reload", reload, methods=["POST"])]


async def serve_http(
    loaded: LoadedConfig,
    bind: str,
    allowed: list[str],
    call_log: CallLog | None = None,
    spawns: EarlySpawns | None = None,
    started: float | None = None,
) -> None:
    host, port = parse_bind(bind)
    async with _serving(loaded, call_log or CallLog(), spawns, started) as (hub, stop, _):
        server = build_server(hub)
        security = security_settings(host, port, allowed)
        sdk_app = server.streamable_http_app(
            streamable_http_path="/mcp",
            host=host,
            transport_security=security,
            custom_starlette_routes=health_routes(hub),
        )
        app = HttpPassThrough(sdk_app, hub, server.session_manager, security, "/mcp")
        # http="auto" (uvicorn's default) picks httptools, a dependency: 10% less hub CPU per call than h11.
        # log_config=None: uvicorn's warnings and errors become lines of the hub's own log (JSON, --log-file).
        config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", lifespan="on", access_log=False, log_config=None
        )
        logging.getLogger("uvicorn.error").addFilter(_StopIsNoError())
        uvicorn_server = _Uvicorn(config)
        structlog.get_logger("hub").info("hub_http_listening", url=f"http://{host}:{port}/mcp")
        with stop:
            await uvicorn_server.serve()
    structlog.get_logger("hub").info("hub_stopped")
