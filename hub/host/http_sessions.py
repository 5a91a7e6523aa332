"""The Streamable HTTP front's handshake-era sessions, bounded per client and in total.

A flood of `initialize` POSTs must not lock real clients out. Sessions are counted per client (its identity when
the hub authenticates, since behind a reverse proxy every client has the proxy's address) and in total; at either
bound, the session unused longest (no request after its `initialize`, which a real client does not leave behind)
is closed to make room, and only when none is unused is the new one refused (503). Idle sessions expire.
"""

from __future__ import annotations

import secrets
import time
from collections import deque

import anyio
import structlog

from hub.access.identity import Identity
from hub.config.settings import HttpSettings
from hub.host.port import HubPort
from hub.host.session import HostSession

# How often sessions are checked for expiry.
SWEEP_INTERVAL = 5.0
# Events a session's GET stream may hold while its client is slow to read; past that it is closed.
STANDALONE_BACKLOG = 1000

_log = structlog.get_logger("hub.http")


class StandaloneStream:
    """A session's GET stream: notifications and requests that belong to no request of the host's."""

    answer: bytes | None = None  # it ends without one

    def __init__(self) -> None:
        self.events: deque[bytes] = deque()
        self.wake = anyio.Event()
        self.closed = False

    def send(self, line: bytes) -> None:
        if self.closed:
            return
        if len(self.events) >= STANDALONE_BACKLOG:
            self.close()  # the client stopped reading; it may open the stream again and re-list
            return
        self.events.append(line)
        self.wake.set()

    def end(self, line: bytes | None) -> None:
        if line is not None:
            self.send(line)

    @property
    def ended(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True
        self.wake.set()


class HttpSession:
    """A handshake-era host session over HTTP: its `HostSession`, its client, its GET stream, its activity."""

    def __init__(self, hub: HubPort, client: str, identity: Identity) -> None:
        self.id = f"{hub.replica}.{secrets.token_hex(16)}"  # the replica first: a balancer may route by it
        self.client = client
        self.host = HostSession(hub, self.id, None, era="handshake", identity=identity)
        self.active = time.monotonic()
        self.used = False  # a request after initialize
        self.standalone: StandaloneStream | None = None
        self.in_flight = 0

    def touch(self, used: bool = True) -> None:
        self.active = time.monotonic()
        self.used = self.used or used

    def open_standalone(self) -> StandaloneStream | None:
        """The session's GET stream, or None if one is open already (one per session)."""
        if self.standalone is not None and not self.standalone.closed:
            return None
        self.standalone = StandaloneStream()
        self.host.open_channel(self.standalone)
        return self.standalone

    def close(self) -> None:
        if self.standalone is not None:
            self.standalone.close()
        self.host.close()


class Sessions:
    def __init__(self, hub: HubPort, limits: HttpSettings) -> None:
        self.hub = hub
        self.limits = limits
        self._by_id: dict[str, HttpSession] = {}

    def get(self, session_id: str, identity: Identity) -> HttpSession | None:
        """The session, if it is `identity`'s: a session id that leaks does not let anyone else act in it."""
        session = self._by_id.get(session_id)
        return session if session is not None and session.host.identity == identity else None

    def open(self, address: str, identity: Identity) -> HttpSession | None:
        """A new session for a client, making room by closing an unused one if a bound is reached; None if full."""
        client = address if identity.method == "none" else f"identity:{identity.name}"
        mine = [s for s in self._by_id.values() if s.client == client]
        limit = self.limits.max_sessions_per_client
        if len(mine) >= limit and not self._evict(mine, "per-client limit"):
            _log.warning("http_session_refused", client=client, reason="max_sessions_per_client", limit=limit)
            return None
        limit = self.limits.max_sessions
        if len(self._by_id) >= limit and not self._evict(list(self._by_id.values()), "total limit"):
            _log.warning("http_session_refused", client=client, reason="max_sessions", limit=limit)
            return None
        session = HttpSession(self.hub, client, identity)
        self._by_id[session.id] = session
        return session

    def _evict(self, candidates: list[HttpSession], why: str) -> bool:
        unused = [s for s in candidates if not s.used and s.in_flight == 0]
        if unused:
            self.close(min(unused, key=lambda s: s.active).id, f"unused, closed for a new session ({why})")
        return bool(unused)

    def close(self, session_id: str, why: str) -> None:
        session = self._by_id.pop(session_id, None)
        if session is not None:
            session.close()
            _log.info("http_session_closed", host_session=session_id, reason=why, sessions=len(self._by_id))

    def close_all(self) -> None:
        for session_id in list(self._by_id):
            self.close(session_id, "the hub is stopping")

    async def expire(self) -> None:
        """Close sessions idle too long (unused ones sooner), until cancelled."""
        while True:
            await anyio.sleep(SWEEP_INTERVAL)
            now = time.monotonic()
            for session in list(self._by_id.values()):
                if session.in_flight:
                    continue
                idle = now - session.active
                if not session.used and idle >= self.limits.unused_session_timeout:
                    self.close(session.id, "unused")
                elif idle >= self.limits.session_idle_timeout:
                    self.close(session.id, "idle")
