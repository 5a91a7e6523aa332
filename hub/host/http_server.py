"""Serving the HTTP front: uvicorn, bound where `--http` says, with the hub's own signal handling and a deadline on
every request's head."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import structlog
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from hub.host.http import HttpFront
from hub.host.http_checks import Checks, allowed
from hub.host.port import HubPort

_log = structlog.get_logger("hub.http")


def parse_bind(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return (host or "127.0.0.1").strip("[]"), int(port)


class _StopIsNoError(logging.Filter):
    """uvicorn logs requests still open as failed when the hub's stop cancels them."""

    def filter(self, record: logging.LogRecord) -> bool:
        kind = record.exc_info[0] if record.exc_info else None
        if kind is not None:
            return not issubclass(kind, anyio.get_cancelled_exc_class())
        text = record.getMessage()
        return not (text.startswith("Traceback") and text.rstrip().endswith("CancelledError"))


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handlers: the hub handles SIGTERM, SIGINT and SIGHUP itself."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _HeadDeadline(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol (httptools, a dependency: less CPU per request than h11), with a deadline on each
    request's head.

    uvicorn arms no timer while a request line and headers arrive: a client that connects and sends nothing, or a
    header a byte a minute, would hold its connection (and a file descriptor of the hub's) for ever. Here the head
    must be complete within `limit` seconds (hub.http.request_timeout) of the connection, or of the previous
    response; else the connection is closed. The body has the same bound, in `hub.host.http_replies`.
    """

    limit = 30.0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.cycle is None or self.cycle.response_complete:  # not a pipelined request started at once
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.limit, self._late)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _late(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()


async def serve_http(hub: HubPort, bind: str, allowed_hosts: list[str]) -> None:
    """Serve until cancelled; the SDK's checks load meanwhile (`hub.host.http_checks`)."""
    host, port = parse_bind(bind)
    checks = Checks(allowed(host, port, allowed_hosts))
    # Where browsers reach the hub, for OAuth sign-in links unless hub.http.public_url says: a wildcard address is
    # reached at the machine's name.
    shown = socket.gethostname() if host in ("0.0.0.0", "::", "") else f"[{host}]" if ":" in host else host
    front = HttpFront(hub, checks, base_url=f"http://{shown}:{port}")
    # log_config=None: uvicorn's warnings and errors become lines of the hub's own log (JSON, --log-file).
    config = uvicorn.Config(
        front,
        host=host,
        port=port,
        http=type("HeadDeadline", (_HeadDeadline,), {"limit": hub.settings.http.request_timeout}),
        log_level="warning",
        lifespan="off",
        access_log=False,
        log_config=None,
    )
    logging.getLogger("uvicorn.error").addFilter(_StopIsNoError())
    server = _Uvicorn(config)
    _log.info("hub_http_listening", url=f"http://{host}:{port}/mcp")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(checks.load)
            tg.start_soon(front.sessions.expire)
            if front.sign_ins is not None:
                tg.start_soon(front.sign_ins.run)
            await server.serve()
            tg.cancel_scope.cancel()
    finally:
        front.sessions.close_all()
