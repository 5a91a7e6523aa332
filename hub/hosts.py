"""The host side's connections: who to tell when something changes outside any request.

Handshake-era hosts (2024-11-05 .. 2025-11-25) get notifications on their connection's standalone channel;
2026-07-28 hosts only receive change events on `subscriptions/listen`, fed from `bus`. Bursts of
list_changed from children are coalesced into one notification per kind.
"""

from __future__ import annotations

import warnings
import weakref

import anyio
import mcp_types as types
import structlog
from mcp.server.connection import Connection
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)

# Several children changing at once (a reload, a burst of list_changed) make one notification per kind.
BROADCAST_DEBOUNCE = 0.05

_EVENTS: dict[str, ServerEvent] = {
    "tools": ToolsListChanged(),
    "prompts": PromptsListChanged(),
    "resources": ResourcesListChanged(),
}
_METHODS = {
    "tools": "notifications/tools/list_changed",
    "prompts": "notifications/prompts/list_changed",
    "resources": "notifications/resources/list_changed",
}


class HostConnections:
    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._by_session: weakref.WeakValueDictionary[str, Connection] = weakref.WeakValueDictionary()
        # exposed URI -> connections subscribed to it
        self._subscriptions: dict[str, weakref.WeakSet[Connection]] = {}
        self._pending: set[str] = set()
        self._wake = anyio.Event()
        self._log = structlog.get_logger("hub.hosts")

    def add(self, connection: Connection) -> None:
        if connection not in self._connections:
            self._connections.add(connection)
            if connection.session_id is not None:
                self._by_session[connection.session_id] = connection
            connection.exit_stack.callback(self._forget, connection)

    def _forget(self, connection: Connection) -> None:
        self._connections.discard(connection)
        if connection.session_id is not None:
            self._by_session.pop(connection.session_id, None)
        for subscribers in self._subscriptions.values():
            subscribers.discard(connection)

    def only(self) -> Connection | None:
        """The one handshake-era host connection, if there is exactly one (always so over stdio)."""
        if len(self._connections) != 1:
            return None
        for connection in self._connections:
            return connection
        return None

    def session(self, session_id: str) -> Connection | None:
        """The HTTP host connection of this `mcp-session-id`, once its handshake is complete (it is tracked then)."""
        return self._by_session.get(session_id)

    def __len__(self) -> int:
        return len(self._connections)

    def subscribe(self, connection: Connection, uri: str) -> bool:
        """Record a subscription; True if it is the first one for this URI (the child must be told)."""
        subscribers = self._subscriptions.setdefault(uri, weakref.WeakSet())
        first = len(subscribers) == 0
        subscribers.add(connection)
        return first

    def unsubscribe(self, connection: Connection, uri: str) -> bool:
        """Drop a subscription; True if it was the last one for this URI."""
        subscribers = self._subscriptions.get(uri)
        if subscribers is None:
            return False
        subscribers.discard(connection)
        if len(subscribers) == 0:
            del self._subscriptions[uri]
            return True
        return False

    def list_changed(self, *kinds: str) -> None:
        """Schedule list_changed for these kinds ("tools", "prompts", "resources"); sent by `run`."""
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
                for connection in list(self._connections):
                    await connection.notify(_METHODS[kind], None)
                await self.bus.publish(_EVENTS[kind])
            self._log.debug("host_list_changed", kinds=kinds, hosts=len(self._connections))

    async def resource_updated(self, uri: str) -> None:
        for connection in list(self._subscriptions.get(uri, ())):
            await connection.send_resource_updated(uri)
        await self.bus.publish(ResourceUpdated(uri))

    async def log(self, params: types.LoggingMessageNotificationParams, logger: str) -> None:
        """A child's log message with no host request in flight: every handshake-era host gets it."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            for connection in list(self._connections):
                await connection.log(params.level, params.data, logger)
