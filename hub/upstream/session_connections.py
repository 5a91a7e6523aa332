"""A child's connections of its own per host session (`sessions: per-host`) or per identity (`per-identity`).

With `per-host`, each handshake-era host session gets a connection of its own (for a stdio child, a process of its
own), opened on the session's first request and closed when the session ends, so that everything the child sends on
it belongs to that session. With `per-identity`, each identity gets one, closed once idle for the child's idle
timeout (a 2026-07-28 host has no session whose end would close it). At most `max_sessions` are open at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from hub.access.identity import Identity
from hub.config.schema import ServerConfig
from hub.protocol import errors, extensions
from hub.upstream.connection import Connection

# A new connection to the child as an identity runs it (None: as the shared connection), in a task group.
OpenConnection = Callable[[TaskGroup, Identity | None], AbstractAsyncContextManager[Connection]]


class SessionConnections:
    """The open connections of one child's host sessions or identities, by owner (the host session, or the
    `Identity`)."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        open_connection: OpenConnection,
        describe_failure: Callable[[BaseException, str], str],
        idle_timeout: float,
    ) -> None:
        self.name = name
        self.config = config
        self.open_connection = open_connection
        self.describe_failure = describe_failure
        self.idle_timeout = idle_timeout
        self.log = structlog.get_logger("hub.child").bind(child=name)
        self._by_owner: dict[object, SessionConnection] = {}

    def __len__(self) -> int:
        return len(self._by_owner)

    def get(self, owner: object) -> Connection | None:
        session = self._by_owner.get(owner)
        return session.connection if session is not None else None

    async def open(self, owner: object, tg: TaskGroup, host_capabilities: dict[str, Any] | None = None) -> Connection:
        """The connection of `owner`, opened now (its task in `tg`) if it has none; waited for at most the child's
        connect timeout. A new connection declares to the child the extensions in `host_capabilities` (those of the
        host whose request opens it) that the hub relays; one already open keeps what it declared (decision 016).

        Raises:
            errors.Unavailable: the session limit is reached, or the connection failed.
        """
        session = self._by_owner.get(owner)
        if session is None:
            if len(self._by_owner) >= self.config.max_sessions:
                raise errors.Unavailable(
                    f"server '{self.name}' already has {self.config.max_sessions} {self.config.sessions} "
                    "connections open (max_sessions); end a host session or raise max_sessions in servers.yaml"
                )
            capabilities = extensions.client_capabilities(host_capabilities or {})
            session = self._by_owner[owner] = SessionConnection(self, owner, capabilities)
            tg.start_soon(session.run)
        with anyio.move_on_after(self.config.connect_timeout):
            await session.ready.wait()
        if session.connection is None:  # failed, or still connecting when the wait ran out
            why = session.error or f"did not connect within {self.config.connect_timeout:g}s"
            raise errors.Unavailable(f"server '{self.name}': this session's connection failed: {why}")
        return session.connection

    def forget(self, owner: object, session: SessionConnection) -> None:
        """`session`'s connection has ended."""
        if self._by_owner.get(owner) is session:
            del self._by_owner[owner]

    def close(self, owner: object) -> None:
        session = self._by_owner.pop(owner, None)
        if session is not None:
            session.close()

    def close_all(self) -> None:
        for session in list(self._by_owner.values()):
            session.close()


class SessionConnection:
    """One host session's or identity's own connection (see the module docstring)."""

    def __init__(self, registry: SessionConnections, owner: object, capabilities: dict[str, Any]) -> None:
        self.registry = registry
        self.owner = owner
        self.capabilities = capabilities  # what the hub declares to the child on this connection
        self.identity = owner if isinstance(owner, Identity) else None
        self.connection: Connection | None = None
        self.error: str | None = None
        self.ready = anyio.Event()
        self._scope = anyio.CancelScope()
        self.label = f"identity:{owner.name}" if isinstance(owner, Identity) else str(getattr(owner, "label", owner))

    def close(self) -> None:
        self._scope.cancel()

    async def _until_idle(self, connection: Connection) -> None:
        """Until the connection ends, or has had nothing in flight for the child's idle timeout."""
        limit = self.registry.idle_timeout
        while not connection.done.is_set():
            idle = time.monotonic() - connection.last_active
            if not connection.inflight and idle >= limit:
                self.registry.log.info("identity_connection_idle", host_session=self.label, idle_s=round(idle))
                return
            with anyio.move_on_after(max(limit - idle, 1.0) if not connection.inflight else limit):
                await connection.done.wait()

    async def run(self) -> None:
        registry = self.registry
        config = registry.config
        try:
            with self._scope:
                async with (
                    anyio.create_task_group() as tg,
                    registry.open_connection(tg, self.identity) as connection,
                ):
                    # Whose it is, before the handshake: a child may ask its host something (roots/list) as soon as
                    # it is initialized, before the handshake's await returns here.
                    if self.identity is None:
                        connection.owner = self.owner
                    connection.identity = self.identity
                    with anyio.fail_after(config.connect_timeout):
                        await connection.handshake(config.protocol, config.connect_timeout, self.capabilities)
                    self.connection = connection
                    self.ready.set()
                    registry.log.info("session_connection_opened", host_session=self.label, sessions=len(registry))
                    if self.identity is None:
                        await connection.done.wait()
                    else:
                        await self._until_idle(connection)
                    tg.cancel_scope.cancel()
        except Exception as exc:
            self.error = registry.describe_failure(exc, "connect")
        finally:
            self.connection = None
            self.ready.set()
            registry.forget(self.owner, self)
            registry.log.info("session_connection_closed", host_session=self.label, error=self.error)
