"""One child, supervised: connect -> read every list in full -> ready -> serve until the connection ends -> back off
with jitter -> reconnect, up to `max_restarts` failures in a row, then `failed`.

While a child restarts, its last listing stays in the merged namespace and requests to it fail at once
(`Unavailable`): the host's tool list does not flap on every restart. Once it is `failed` or stopped, its entries
leave the namespace. Its shared connection reads its lists and follows their changes; with `sessions: per-host` or
`per-identity`, a host session or an identity also gets a connection of its own (`hub.upstream.session_connections`).
"""

from __future__ import annotations

import enum
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import structlog
from anyio.abc import TaskGroup

from hub.access.identity import Identity, local_user
from hub.config.schema import ServerConfig
from hub.platform.watchdog import Watchdog
from hub.protocol import errors
from hub.protocol.jsonrpc import Notification, Request
from hub.upstream.connection import Connection, Exchange
from hub.upstream.credentials import MissingCredential
from hub.upstream.listing import LIST_TIMEOUT, ListChanges, Listing, listen, offered, read_lists
from hub.upstream.oauth import Credentials, SignInRequired
from hub.upstream.session_connections import SessionConnections
from hub.upstream.slots import Slots
from hub.upstream.stdio import open_stdio
from hub.upstream.url import AuthFor, open_url

# A child that stays up this long has its count of failures in a row reset.
STABLE_AFTER = 60.0
# Backoff between restarts: BASE * 2**n, capped, times a jitter in [0.5, 1.5).
BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0
# An OAuth child whose shared connection waits for the hub's own identity to sign in (`hub auth login`): tried again
# this often, without counting towards max_restarts, so that the sign-in is picked up without a reload.
SIGN_IN_RETRY = 5.0
# A URL child's death shows only as a failed ping (handshake era) or failed requests (2026-07-28).
HEARTBEAT_INTERVAL = 15.0
HEARTBEAT_TIMEOUT = 10.0


class ChildState(enum.StrEnum):
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    FAILED = "failed"
    STOPPED = "stopped"


class Observer(Protocol):
    """What a child reports to the hub. Called from a connection's reader: never waits."""

    def listing_changed(self, child: Child) -> None: ...

    def resource_updated(self, child: Child, uri: str) -> None: ...

    def child_log(self, child: Child, connection: Connection, params: dict[str, Any]) -> None: ...

    def child_request(self, child: Child, connection: Connection, request: Request) -> None: ...

    def elicitation_complete(self, child: Child, connection: Connection, params: dict[str, Any]) -> None:
        """A URL-mode elicitation of the child's is complete (`notifications/elicitation/complete`)."""

    def elicitations_required(self, connection: Connection, exchange: Exchange, data: Any) -> None:
        """A request of the hub's was answered -32042: whose the elicitations it names are."""


# A child's configuration for an identity (None: the shared connection's), placeholders expanded
# (`hub.upstream.credentials.personal`). Raises MissingCredential.
Launcher = Callable[[Identity | None], ServerConfig]


class Child:
    def __init__(
        self,
        name: str,
        prefix: str,
        config: ServerConfig,
        observer: Observer,
        watchdog: Watchdog,
        launch: Launcher | None = None,
        *,
        idle_timeout: float = 1800.0,
        shared_identity: Identity | None = None,
        oauth: Credentials | None = None,
    ) -> None:
        self.name = name
        self.log = structlog.get_logger("hub.child").bind(child=name)
        self.prefix = prefix
        self.config = config
        self.launch: Launcher = launch or (lambda identity: config)
        # With sessions: per-identity, the identity the shared (listing) connection runs as (the hub's own): what it
        # says outside a call reaches only that identity's sessions.
        self.shared_identity = shared_identity
        self.oauth = oauth  # where an OAuth child's sign-ins are kept
        self._needs_sign_in = False  # the last run of the shared connection ended for want of a sign-in
        self._told_sign_in = False  # ...and the log has said so
        self.observer = observer
        self.watchdog = watchdog
        self.state = ChildState.STARTING
        self.listing = Listing()
        # The `instructions` the child sent at its last successful connect, kept like its listing while it restarts.
        self.instructions: str | None = None
        self.last_error: str | None = None
        # The error that ended the last run, and when (wall clock): kept once a restart succeeds (the status page).
        self.last_failure: tuple[str, float] | None = None
        self.restarts = 0
        self.start_ms: float | None = None
        self.started_at: float | None = None
        self.log_level: str | None = None  # the handshake-era hosts' logging/setLevel, re-sent on every connect
        self.settled = anyio.Event()  # set once the first start attempt is over, ready or not
        self.slots = Slots(name, config.max_concurrency, config.max_queue)
        self.shared: Connection | None = None
        self.own_connections = SessionConnections(
            name, config, self.open_connection, self.describe_failure, idle_timeout
        )
        self._changes = ListChanges()
        self._timeouts: dict[str, float] = {}
        self._tg: TaskGroup | None = None

    def __repr__(self) -> str:
        return f"<Child {self.name} prefix={self.prefix!r} state={self.state} restarts={self.restarts}>"

    # ---- for the relay ----------------------------------------------------------------------------------------

    def connection(self) -> Connection:
        """The shared connection, if the child is ready; else raises `errors.Unavailable` naming why."""
        connection = self.shared
        if connection is None or self.state is not ChildState.READY or connection.closed is not None:
            raise errors.Unavailable(self.unavailable_reason())
        return connection

    def session_connection(self, owner: object) -> Connection | None:
        """The connection of this host session (`sessions: per-host`) or identity (`per-identity`) if it is open."""
        return self.own_connections.get(owner)

    @property
    def per_host(self) -> bool:
        return self.config.sessions == "per-host"

    @property
    def per_identity(self) -> bool:
        return self.config.sessions == "per-identity"

    async def open_session_connection(
        self, owner: object, host_capabilities: dict[str, Any] | None = None
    ) -> Connection:
        """The connection of this host session (`sessions: per-host`) or identity (`sessions: per-identity`: `owner`
        is the `Identity`), opened now if it has none (declaring the relayable extensions of `host_capabilities`).

        Raises:
            errors.Unavailable: the child is not ready, the session limit is reached, or the connection failed.
        """
        self.connection()  # the child itself must be up
        assert self._tg is not None
        return await self.own_connections.open(owner, self._tg, host_capabilities)

    def close_session(self, owner: object) -> None:
        """The host session has ended: its own connection closes."""
        self.own_connections.close(owner)

    def timeout_for(self, tool: str) -> float:
        """`config.timeout_for`, remembered per tool name."""
        seconds = self._timeouts.get(tool)
        if seconds is None:
            seconds = self._timeouts[tool] = self.config.timeout_for(tool)
        return seconds

    def unavailable_reason(self) -> str:
        reason = f"server '{self.name}' is unavailable (state: {self.state})"
        if self.last_error:
            reason += f": {self.last_error}"
        return reason

    async def set_log_level(self, level: str, owner: object | None = None) -> None:
        """A handshake-era host's `logging/setLevel`: remembered, and sent to the child's connections (bounded).

        With `owner`, only that session's own connection gets it (the shared one takes the hub-wide level).
        """
        if owner is None:
            self.log_level = level
        connection = self.shared if owner is None else self.session_connection(owner)
        if connection is not None and connection.capabilities.get("logging") is not None and not connection.modern:
            try:
                await connection.request("logging/setLevel", {"level": level}, LIST_TIMEOUT)
            except (errors.HubError, TimeoutError) as exc:
                self.log.info("child_set_level_failed", error=str(exc))

    def roots_changed(self, owner: object | None = None) -> None:
        """A host's roots changed: the shared connection is told, and that host session's own connection (a 2026-07-28
        child has no roots). Other sessions' own connections belong to other hosts, whose roots did not change."""
        for connection in (self.shared, self.session_connection(owner) if owner is not None else None):
            if connection is not None and not connection.modern:
                connection.notify("notifications/roots/list_changed")

    # ---- supervision --------------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Supervise the child until cancelled."""
        failures = 0
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                while True:
                    began = time.monotonic()
                    self._needs_sign_in = False
                    await self._run_once()
                    self.last_failure = (self.last_error or "", time.time())
                    if self._needs_sign_in:  # the hub's own identity has to sign in: said once, never a restart
                        if not self._told_sign_in:
                            self._told_sign_in = True
                            self.log.warning("child_needs_sign_in", error=self.last_error)
                        self.state = ChildState.RESTARTING
                        await anyio.sleep(SIGN_IN_RETRY)
                        continue
                    self._told_sign_in = False
                    if self.started_at is not None and time.monotonic() - self.started_at >= STABLE_AFTER:
                        failures = 0
                    failures += 1
                    if failures > self.config.max_restarts:
                        self.state = ChildState.FAILED
                        self.log.error("child_failed", error=self.last_error, attempts=failures)
                        if self.listing != Listing():
                            self.listing = Listing()
                            self.observer.listing_changed(self)
                        await anyio.sleep_forever()  # a reload replaces a failed child with a new one
                    delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (failures - 1)) * random.uniform(0.5, 1.5)
                    self.restarts += 1
                    self.state = ChildState.RESTARTING
                    self.log.warning(
                        "child_restarting",
                        attempt=failures,
                        backoff_s=round(delay, 2),
                        error=self.last_error,
                        uptime_s=round(time.monotonic() - began, 2),
                    )
                    await anyio.sleep(delay)
        finally:
            self.state = ChildState.STOPPED
            self._tg = None

    async def _run_once(self) -> None:
        began = time.monotonic()
        self.started_at = None
        self.last_error = None
        try:
            async with anyio.create_task_group() as tg, self.open_connection(tg) as connection:
                if self.per_identity:  # before the handshake: what the child asks at once goes to the right host
                    connection.identity = self.shared_identity
                with anyio.fail_after(self.config.connect_timeout):
                    await connection.handshake(self.config.protocol, self.config.connect_timeout)
                    self.listing = await read_lists(connection, offered(connection), Listing())
                    self.instructions = connection.instructions
                self.shared = connection
                self.start_ms = round((time.monotonic() - began) * 1000, 1)
                self.started_at = time.monotonic()
                self.state = ChildState.READY
                self.log.info(
                    "child_ready",
                    start_ms=self.start_ms,
                    protocol=connection.protocol_version,
                    server=connection.server_info.get("name"),
                    tools=len(self.listing.tools),
                    resources=len(self.listing.resources),
                    templates=len(self.listing.templates),
                    prompts=len(self.listing.prompts),
                )
                self.observer.listing_changed(self)
                self.settled.set()  # after the namespace has the child's names
                if self.log_level is not None:
                    tg.start_soon(self.set_log_level, self.log_level)
                tg.start_soon(self._refresh_on_change, connection)
                if connection.modern:
                    tg.start_soon(listen, connection, self.log)
                elif self.config.kind != "stdio":
                    tg.start_soon(self._heartbeat, connection)
                await connection.done.wait()
                # Requests that come in from now on fail at once, naming why; the restart follows the backoff.
                self.last_error = connection.closed
                self.state = ChildState.RESTARTING
                tg.cancel_scope.cancel()
        except Exception as exc:  # the child's failure is reported, never the hub's
            self.last_error = self.describe_failure(exc, "connect and list")
            # Out of the task group, a SignInRequired may come wrapped in a group.
            group = exc if isinstance(exc, ExceptionGroup) else ExceptionGroup("", [exc])
            self._needs_sign_in = self._needs_sign_in or group.subgroup(SignInRequired) is not None
        finally:
            self.shared = None
            self.settled.set()
            self.own_connections.close_all()
        self.last_error = self.last_error or f"server '{self.name}' closed the connection"
        if not self._needs_sign_in:
            self.log.warning("child_exited", error=self.last_error)

    @asynccontextmanager
    async def open_connection(self, tg: TaskGroup, identity: Identity | None = None) -> AsyncIterator[Connection]:
        """A new connection to the child (a new process, for a stdio child), as `identity` runs it (None: the
        shared connection); closed (bounded) on leaving.

        Raises:
            MissingCredential: the identity has no value for a secret the configuration needs.
        """
        config = self.launch(identity)
        if config.kind == "stdio":
            async with open_stdio(self.name, config, self, self.watchdog, tg) as connection:
                yield connection
        else:
            auth_for = self._oauth(config, identity) if config.oauth is not None else None
            async with open_url(self.name, config, self, tg, auth_for, lambda: self.listing.tools) as connection:
                yield connection

    def _oauth(self, config: ServerConfig, identity: Identity | None) -> AuthFor:
        """How a connection of `identity` (None: the shared one, as the hub's own identity) signs in to the child."""
        who = identity or self.shared_identity or local_user()

        async def auth_for(ended: Callable[[str], None]) -> Any:
            if self.oauth is None:
                raise SignInRequired(f"server '{self.name}' needs OAuth, and this hub keeps no sign-ins")

            def refused(reason: str) -> None:
                if identity is None:
                    self._needs_sign_in = True
                ended(reason)

            # httpx2's client, which it subclasses, loads here: only a hub with an OAuth child pays for it at start.
            from hub.upstream.oauth_refresh import connection_auth

            return await connection_auth(
                self.oauth, self.name, config, who.name, who.groups, refused, shared=identity is None
            )

        return auth_for

    def describe_failure(self, exc: BaseException, attempt: str) -> str:
        """Why an attempt to `attempt` ("connect", "connect and list") failed; out of a task group, `exc` comes
        wrapped in a group."""
        if isinstance(exc, BaseExceptionGroup):
            return "; ".join(self.describe_failure(e, attempt) for e in exc.exceptions[:3])
        if isinstance(exc, TimeoutError):  # fail_after's: the attempt ran out of connect_timeout
            return f"did not {attempt} within {self.config.connect_timeout:g}s"
        if isinstance(exc, FileNotFoundError):
            if self.config.cwd is not None and exc.filename == self.config.cwd:
                return f"working directory not found: {self.config.cwd!r} (check 'cwd:')"
            return f"command not found: {self.config.command!r} (is it installed and on PATH?)"
        if isinstance(exc, PermissionError) and self.config.command is not None:
            return f"command cannot be run: {self.config.command!r} ({exc.strerror})"
        if isinstance(exc, errors.HubError):
            return exc.message
        if isinstance(exc, MissingCredential):
            return str(exc)
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

    async def _heartbeat(self, connection: Connection) -> None:
        while True:
            await anyio.sleep(HEARTBEAT_INTERVAL)
            try:
                await connection.request("ping", {}, HEARTBEAT_TIMEOUT)
            except (errors.HubError, TimeoutError) as exc:
                connection.ended(f"server '{self.name}': heartbeat failed: {exc}")
                return

    # ---- listings ---------------------------------------------------------------------------------------------

    async def _refresh_on_change(self, connection: Connection) -> None:
        while True:
            kinds = await self._changes.next()
            try:
                self.listing = await read_lists(connection, kinds, self.listing)
            except (errors.HubError, TimeoutError) as exc:
                self.log.warning("child_relist_failed", kinds=kinds, error=str(exc))
                continue
            self.log.info("child_list_changed", kinds=kinds)
            self.observer.listing_changed(self)

    # ---- what the child sends (hub.upstream.connection.Events) -------------------------------------------------

    def notified(self, connection: Connection, notification: Notification) -> None:
        method, params = notification.method, notification.params
        if self._changes.notified(method):
            return
        if method == "notifications/resources/updated":
            uri = params.get("uri")
            if isinstance(uri, str):
                self.observer.resource_updated(self, uri)
        elif method == "notifications/message":
            self.observer.child_log(self, connection, params)
        elif method == "notifications/elicitation/complete":
            self.observer.elicitation_complete(self, connection, params)

    def asked(self, connection: Connection, request: Request) -> None:
        self.observer.child_request(self, connection, request)

    def elicitations_required(self, connection: Connection, exchange: Exchange, data: Any) -> None:
        self.observer.elicitations_required(connection, exchange, data)
