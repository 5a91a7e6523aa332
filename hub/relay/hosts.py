"""The host sessions the hub serves, and what reaches them outside any request of theirs: handshake-era sessions on
their own channel, 2026-07-28 hosts on `subscriptions/listen` streams (`Listener`). Bursts of list changes are
coalesced into one notification per kind. Resource subscriptions are counted across sessions and listen streams, so
that a child is subscribed on the first host subscription of a URI and unsubscribed on the last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import anyio
import structlog

from hub.access.identity import Identity
from hub.relay.ports import SessionPort

# Several children changing at once (a reload, a burst of list_changed) make one notification per kind.
BROADCAST_DEBOUNCE = 0.05

LIST_CHANGED = {kind: f"notifications/{kind}/list_changed" for kind in ("tools", "prompts", "resources")}


class Session(SessionPort, Protocol):
    def notify(self, method: str, params: dict[str, Any]) -> None: ...  # on its own channel, about no request


class Listener(Protocol):
    """A 2026-07-28 host's `subscriptions/listen` stream."""

    @property
    def identity(self) -> Identity: ...
    @property
    def uris(self) -> frozenset[str]: ...  # the exposed URIs whose updates it asked for (and may read)
    def wants(self, method: str, uri: str | None) -> bool: ...
    def send(self, method: str, params: dict[str, Any]) -> None: ...


# The child serving an exposed URI is told to subscribe to it (True) or to unsubscribe (False); never waits.
TellChild = Callable[[str, bool], None]


class Hosts:
    def __init__(self, tell_child: TellChild | None = None) -> None:
        self.sessions: list[Session] = []  # handshake-era sessions, in the order they came
        self.listeners: set[Listener] = set()
        self._subscriptions: dict[str, set[Session]] = {}  # exposed URI -> sessions subscribed to it
        self._tell_child = tell_child
        self._pending: set[str] = set()
        self._wake = anyio.Event()
        self._log = structlog.get_logger("hub.hosts")

    def add(self, session: Session) -> None:
        if session not in self.sessions:
            self.sessions.append(session)

    def discard(self, session: Session) -> list[str]:
        """Forget a session that ended; the URIs that nobody is subscribed to any more."""
        if session in self.sessions:
            self.sessions.remove(session)
        return [uri for uri in list(self._subscriptions) if self.unsubscribe(session, uri)]

    def listen(self, listener: Listener) -> None:
        """A 2026-07-28 listen stream starts: it gets list changes, and updates of its URIs (each child serving one
        nobody held yet is told to subscribe)."""
        first = [uri for uri in sorted(listener.uris) if not self._held(uri)]
        self.listeners.add(listener)
        for uri in first:
            self._child(uri, True)

    def unlisten(self, listener: Listener) -> None:
        """A listen stream ends: each of its URIs that nobody else holds is unsubscribed at its child."""
        if listener not in self.listeners:
            return
        self.listeners.discard(listener)
        for uri in sorted(listener.uris):
            if not self._held(uri):
                self._child(uri, False)

    def _held(self, uri: str) -> bool:
        return bool(self._subscriptions.get(uri)) or any(uri in listener.uris for listener in self.listeners)

    def _child(self, uri: str, subscribe: bool) -> None:
        if self._tell_child is not None:
            self._tell_child(uri, subscribe)

    def connected(self, session: object) -> Session | None:
        """`session`, while it is still connected (a task's or an elicitation's creator may have ended since)."""
        return next((s for s in self.sessions if s is session), None)

    def only(self, identity: Identity | None = None) -> Session | None:
        """The one handshake-era session (of `identity`, if given), if there is exactly one (always so over stdio)."""
        sessions = self.sessions if identity is None else [s for s in self.sessions if s.identity == identity]
        return sessions[0] if len(sessions) == 1 else None

    def subscribe(self, session: Session, uri: str) -> bool:
        """Record a subscription; True if it is the first for this URI (the child must be told)."""
        first = not self._held(uri)
        self._subscriptions.setdefault(uri, set()).add(session)
        return first

    def unsubscribe(self, session: Session, uri: str) -> bool:
        """Drop a subscription; True if it was the last for this URI."""
        subscribers = self._subscriptions.get(uri)
        if subscribers is None or session not in subscribers:
            return False
        subscribers.discard(session)
        if not subscribers:
            del self._subscriptions[uri]
        return not self._held(uri)

    def list_changed(self, *kinds: str) -> None:
        """Schedule list_changed for these kinds ("tools", "prompts", "resources"); `run` sends them."""
        self._pending.update(kinds)
        self._wake.set()

    async def run(self) -> None:
        """Deliver scheduled list_changed notifications, coalesced, until cancelled."""
        while True:
            await self._wake.wait()
            await anyio.sleep(BROADCAST_DEBOUNCE)
            self._wake = anyio.Event()
            kinds, self._pending = sorted(self._pending), set()
            for kind in kinds:
                self._tell(self.sessions, LIST_CHANGED[kind], {}, None)
            self._log.debug("host_list_changed", kinds=kinds, hosts=len(self.sessions), listeners=len(self.listeners))

    def views_changed(self, changed: Callable[[Identity], bool]) -> None:
        """A reload changed the policy: the sessions whose identity now sees other names (only those) are told
        that every list changed."""
        sessions = [session for session in self.sessions if changed(session.identity)]
        listeners = [listener for listener in self.listeners if changed(listener.identity)]
        for method in LIST_CHANGED.values():
            for session in sessions:
                session.notify(method, {})
            for listener in listeners:
                if listener.wants(method, None):
                    listener.send(method, {})
        self._log.info("policy_changed", hosts_told=len(sessions) + len(listeners))

    def resource_updated(self, uri: str) -> None:
        self._tell(self._subscriptions.get(uri, ()), "notifications/resources/updated", {"uri": uri}, uri)

    def log(self, params: dict[str, Any], identity: Identity | None = None) -> None:
        """A child's log message that belongs to no request: every handshake-era session gets it (of `identity`
        only, for a connection opened for one: one person's server must not talk to another's session)."""
        for session in list(self.sessions):
            if identity is None or session.identity == identity:
                session.log(params)

    def _tell(self, sessions: Iterable[Session], method: str, params: dict[str, Any], uri: str | None) -> None:
        """These sessions, and every listener that wants it, get the notification."""
        for session in list(sessions):
            session.notify(method, params)
        for listener in list(self.listeners):
            if listener.wants(method, uri):
                listener.send(method, params)
