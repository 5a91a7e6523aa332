"""One `hub connect`: the host on stdio, the hub at a URL, until the host leaves."""

from __future__ import annotations

import signal

import anyio
import structlog

from hub.connect.forward import Forwarder
from hub.connect.remote import Remote, new_client
from hub.connect.token import Token
from hub.platform import WINDOWS
from hub.platform.stdio_wire import stdio_wire

# Each ends hub connect as the host leaving does: the session is ended at the hub first.
STOP_SIGNALS = () if WINDOWS else (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)

_log = structlog.get_logger("hub.connect")


# The longest line taken from the host; a longer one is dropped as it arrives (and answered, if its id is found).
MAX_LINE_BYTES = 64 * 1024 * 1024


async def connect(url: str, token: Token) -> None:
    """Forward between the host on stdin/stdout and the hub at `url` until the host closes stdin (or stops reading,
    or a stop signal comes); then the hub's session is ended (DELETE, bounded)."""
    _log.info("connect_started", url=url, token_source=token.source, token=token.value is not None)
    async with new_client(token) as http:
        remote = Remote(url, token, http, lambda capabilities: forwarder.renewed(capabilities))
        # The wire calls the forwarder only from the event loop, which runs nothing before `forwarder` is set below.
        async with (
            anyio.create_task_group() as tg,
            stdio_wire(
                tg,
                MAX_LINE_BYTES,
                lambda line: forwarder.line(line),
                lambda head, size: forwarder.oversized(head, size, MAX_LINE_BYTES),
            ) as wire,
        ):
            forwarder = Forwarder(remote, wire.write, tg)
            tg.start_soon(forwarder.run)
            tg.start_soon(remote.listen, forwarder.send)
            tg.start_soon(_stop_on_signal, wire.gone)
            await wire.gone.wait()
            tg.cancel_scope.cancel()
        await remote.close()
    _log.info("connect_stopped", url=url)


async def _stop_on_signal(gone: anyio.Event) -> None:
    if not STOP_SIGNALS:
        return
    with anyio.open_signal_receiver(*STOP_SIGNALS) as received:
        async for signum in received:
            _log.info("connect_stopping", signal=signal.Signals(signum).name)
            gone.set()
            return
