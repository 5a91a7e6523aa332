"""The stdio front: one host, newline-delimited JSON-RPC on this process's stdin and stdout
(`hub.platform.stdio_wire`: the wire on private duplicates of fd 0 and 1, fd 1 pointed at stderr meanwhile, so that
stray output from the hub or a child can never corrupt the protocol). On POSIX a line that can be routed at once
costs no task switch: it is read and handled in the event loop's own callbacks.
"""

from __future__ import annotations

import anyio

from hub.host.port import HubPort
from hub.host.session import HostSession
from hub.platform.stdio_wire import HostWire, stdio_wire


class WireStream:
    """Every request's messages and the session's own go to the one wire (`hub.host.received.Stream`); it counts the
    answers, so that the host's end of input can wait for the ones still owed (`answered`)."""

    def __init__(self, wire: HostWire) -> None:
        self.send = wire.write
        self._ended = 0
        self._waiter: anyio.Event | None = None

    def end(self, line: bytes | None) -> None:
        self._ended += 1
        if line is not None:
            self.send(line)
        if self._waiter is not None:
            self._waiter.set()

    async def answered(self, requests: int) -> None:
        """Until `requests` requests have had their answer (unbounded: the caller bounds it)."""
        while self._ended < requests:
            self._waiter = anyio.Event()
            await self._waiter.wait()
        self._waiter = None


async def serve_stdio(hub: HubPort) -> None:
    """Serve one host until it closes stdin (or stops reading stdout), or the hub is stopped. At the end of stdin
    the requests already read are still answered, for at most `hub.drain_timeout` (`printf '<initialize>\\n<call>\\n'
    | hub serve` prints both answers, as `hub connect` does); a host that stopped reading is not waited for."""
    limit = hub.settings.max_request_bytes
    session: HostSession | None = None
    try:
        # The wire calls the session only from the event loop, which runs nothing before `session` is set below.
        async with (
            anyio.create_task_group() as tg,
            stdio_wire(
                tg,
                limit,
                lambda line: served.receive(line, stream),
                lambda head, size: served.oversized(head, size, limit, stream),
            ) as wire,
        ):
            stream = WireStream(wire)
            session = served = HostSession(hub, "", stream, identity=hub.local)
            session.label = f"conn-{id(session):x}"
            await wire.gone.wait()
            if not wire.deaf:
                with anyio.move_on_after(hub.settings.drain_timeout):
                    await stream.answered(session.requests)
            tg.cancel_scope.cancel()
    finally:
        if session is not None:
            session.close()
