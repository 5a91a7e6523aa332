"""Per-host-session connections ("lanes") to children configured with `sessions: per-host`.

Why: nothing on the wire says which host call caused a child's sampling, elicitation or roots request. On a
connection that carries the calls of one host session only, every such request can only belong to that
session, so routing is exact however many sessions and calls overlap.

A lane is opened lazily on a handshake-era host session's first routed request to the child, carries all of
that session's requests to it, and is closed when the host session ends (or its child connection does; the
next request opens a new one). At most `max_sessions` lanes per child are open at once; beyond that a request
fails with an error saying so. The child's shared connection (`Child`) still reads the listing, follows
list_changed, holds resource subscriptions, and carries 2026-07-28 hosts' requests (which have no session and
cannot receive child requests anyway).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import structlog
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.session import IncomingMessage
from mcp.server.connection import Connection
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from hub.child import Child, ChildUnavailable, connect_child, send_with_deadline
from hub.eras import check_child_era, follow_changes, is_modern
from hub.relay import Ambiguous, InFlight, Unattached, Waiting, logger_name, owner_of, route_child_request, send_log
from hub.taskhost import TaskHost
from hub.transports import StdioProcess

_log = structlog.get_logger("hub.lanes")
_LIST_CHANGED = (
    types.ToolListChangedNotification,
    types.PromptListChangedNotification,
    types.ResourceListChangedNotification,
)


class Lane:
    """One host session's own connection to one child; owns its SDK `Client` in its own task."""

    def __init__(self, child: Child, owner: Connection) -> None:
        self.child = child
        self.owner = owner
        self.inflight: list[InFlight] = []
        self.ready = anyio.Event()
        self.error: str | None = None
        self._closing = anyio.Event()
        self._client: Client | None = None
        self._process: StdioProcess | None = None

    @property
    def protocol_version(self) -> str | None:
        return self._client.protocol_version if self._client is not None else None

    @property
    def closing(self) -> bool:
        return self._closing.is_set()

    def close(self) -> None:
        self._closing.set()

    async def request(
        self,
        request: types.ClientRequest | types.Request[Any, Any],
        *,
        progress: ProgressFnT | None = None,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """Like `Child.request`, on this session's own connection.

        Raises:
            ChildUnavailable: the lane is not (or no longer) connected.
            MCPError: the child answered with an error, timed out, or the connection closed.
        """
        client = self._client
        if client is None:
            raise ChildUnavailable(f"server '{self.child.name}': this session's connection is closed ({self.error})")
        config = self.child.config
        return await send_with_deadline(client, request, self.child.name, config, progress, timeout_s or config.timeout)

    async def run(self) -> None:
        """Connect, serve until the host session or the child connection ends, disconnect."""
        config = self.child.config
        try:
            # One scope around the whole life (the SDK client must be entered and exited in this task): the
            # deadline bounds connecting only and is lifted once connected.
            with anyio.CancelScope(deadline=anyio.current_time() + config.connect_timeout) as deadline:
                async with self._connect() as client, anyio.create_task_group() as tg:
                    check_child_era(config.protocol, client)
                    await self._set_level(client)
                    deadline.deadline = math.inf
                    self._client = client
                    self.ready.set()
                    _log.info("lane_open", child=self.child.name, host_session=_session_label(self.owner))
                    tg.start_soon(follow_changes, self.child.name, client)
                    await self._until_done()
                    tg.cancel_scope.cancel()
            if deadline.cancelled_caught:
                self.error = f"did not connect within {config.connect_timeout:g}s"
        except Exception as exc:  # the child's failure is reported to the request, never the hub's
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._client = None
            self.ready.set()
            _log.info("lane_closed", child=self.child.name, host_session=_session_label(self.owner), error=self.error)

    async def _set_level(self, client: Client) -> None:
        """The level a handshake-era host set with logging/setLevel, for this new connection too."""
        caps = client.session.server_capabilities
        if self.child.log_level is not None and not is_modern(client.protocol_version) and caps and caps.logging:
            await client.session.set_logging_level(self.child.log_level)

    async def _until_done(self) -> None:
        async with anyio.create_task_group() as tg:

            async def finish_on(event: anyio.Event) -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(finish_on, self._closing)
            if self._process is not None:
                tg.start_soon(finish_on, self._process.exited)
        if not self._closing.is_set():
            self.error = "the server's process exited"

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Client]:
        config = self.child.config
        self._process = StdioProcess(self.child.name, config, self.child.groups) if config.kind == "stdio" else None
        async with connect_child(config, self._process, self) as client:
            yield client

    # ---- what the child sends on this lane: only ever for `owner` -------------------------------------

    async def _on_message(self, message: IncomingMessage) -> None:
        # The merged listing is read on the shared connection: a change seen here makes the child re-read it.
        if isinstance(message, _LIST_CHANGED):
            await self.child._on_message(message)
        elif isinstance(message, Exception):
            _log.warning("lane_transport_error", child=self.child.name, error=str(message))

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        logger = logger_name(self.child.name, params)
        owner = owner_of(self.inflight)  # never ambiguous: a lane carries one session's requests
        if isinstance(owner, Waiting):
            owner = owner.current
        if owner is not None and not isinstance(owner, Ambiguous | Unattached):
            await send_log(owner, params, logger)
        else:  # between requests: the session's own standalone channel
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await self.owner.log(params.level, params.data, logger)

    async def _on_sampling(self, context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        return await route_child_request(self.child.name, self.inflight, types.CreateMessageRequest(params=params))

    async def _on_elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        return await route_child_request(self.child.name, self.inflight, types.ElicitRequest(params=params))

    async def _on_roots(self, context: ClientRequestContext) -> Any:
        return await route_child_request(self.child.name, self.inflight, types.ListRootsRequest())

    async def roots_changed(self) -> None:
        client = self._client
        if client is not None and not is_modern(client.protocol_version):
            await client.session.send_roots_list_changed()


def _session_label(connection: Connection) -> str:
    return connection.session_id or f"conn-{id(connection):x}"


class LanePool(TaskHost):
    """Every open lane, keyed by (child name, host session); their tasks run in this task host."""

    def __init__(self) -> None:
        super().__init__()
        self._lanes: dict[tuple[str, Connection], Lane] = {}

    def count(self, child: str) -> int:
        """Open lanes to `child`; one whose session has ended no longer counts while it shuts down."""
        return sum(1 for (name, _), lane in self._lanes.items() if name == child and not lane.closing)

    async def lane_for(self, child: Child, owner: Connection) -> Lane:
        """The host session's lane to `child`, opened if needed.

        Raises:
            ChildUnavailable: `max_sessions` lanes are open already, or the lane could not connect.
        """
        key = (child.name, owner)
        lane = self._lanes.get(key)
        if lane is None:
            limit = child.config.max_sessions
            if self.count(child.name) >= limit:
                raise ChildUnavailable(
                    f"server '{child.name}' already has {limit} host sessions connected (max_sessions: {limit}); "
                    "try again when one ends, or raise max_sessions in servers.yaml"
                )
            lane = Lane(child, owner)
            self._lanes[key] = lane
            owner.exit_stack.callback(lane.close)  # the host session's end closes its lanes
            await self.start_task(child.config.connect_timeout, self._run_lane, key, lane)
        await lane.ready.wait()  # bounded: Lane.run sets it after at most connect_timeout
        if lane._client is None:
            raise ChildUnavailable(f"server '{child.name}': could not open this session's connection: {lane.error}")
        return lane

    async def _run_lane(self, key: tuple[str, Connection], lane: Lane) -> None:
        try:
            await lane.run()
        finally:
            if self._lanes.get(key) is lane:
                del self._lanes[key]

    async def set_log_level(self, owner: Connection, level: types.LoggingLevel) -> None:
        """A host session's logging/setLevel also reaches its own lanes (the shared connections get it from the hub)."""
        for (_, session), lane in list(self._lanes.items()):
            client = lane._client
            if session is owner and client is not None and not is_modern(client.protocol_version):
                caps = client.session.server_capabilities
                if caps is not None and caps.logging is not None:
                    try:
                        with anyio.fail_after(5.0):
                            await client.session.set_logging_level(level)
                    except (MCPError, TimeoutError) as exc:
                        _log.warning("lane_set_level_failed", child=lane.child.name, error=str(exc))

    async def roots_changed(self, owner: Connection) -> None:
        """A host session's roots changed: tell its own lanes (the shared connections are told by the hub)."""
        for (_, session), lane in list(self._lanes.items()):
            if session is owner:
                try:
                    with anyio.fail_after(5.0):
                        await lane.roots_changed()
                except (MCPError, TimeoutError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                    _log.warning("lane_roots_changed_failed", child=lane.child.name, error=str(exc))
