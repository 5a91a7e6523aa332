"""One downstream MCP server ("child"): its connection, its supervisor and its cached listing.

`Child.run()` owns the SDK `Client` for its whole life (the SDK requires one task to enter and exit it):
connect -> read every list in full (following cursors) -> ready -> serve until the connection ends ->
back off with jitter -> reconnect, up to `max_restarts` failures in a row, then `failed`.

While a child restarts, its last listing stays in the merged namespace and calls to it fail at once with
`ChildUnavailable` (no flapping of the host's tool list on every restart); once it is `failed` or stopped,
its entries leave the namespace and the host is told.
"""

from __future__ import annotations

import enum
import math
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import anyio
import mcp_types as types
import structlog
from mcp import Client
from mcp.client.context import ClientRequestContext
from mcp.client.session import IncomingMessage
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from hub.config import ServerConfig
from hub.eras import check_child_era, client_mode, follow_changes, is_modern
from hub.identity import CLIENT_PARAMS
from hub.spawn import Spawned, end_unadopted
from hub.transports import ProcessGroups, StdioProcess, Tap, describe_exit, url_transport

# Results are kept as the raw JSON the child sent: nothing is lost, and nothing is re-validated into models.
# (The SDK types `send_request` for models only; a TypeAdapter of dict works the same at run time.)
RAW_RESULT: Any = TypeAdapter(dict[str, Any])
# A child that stays up this long has its restart count reset.
STABLE_AFTER = 60.0
# Backoff between restarts: BASE * 2**n, capped, times a jitter in [0.5, 1.5).
BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0
# Bursts of list_changed from one child are coalesced over this window before it is re-read.
LIST_CHANGED_DEBOUNCE = 0.05
# Heartbeat for URL children, whose death a process exit cannot tell.
HEARTBEAT_INTERVAL = 15.0
HEARTBEAT_TIMEOUT = 10.0

HUB_INFO = types.Implementation(**CLIENT_PARAMS["clientInfo"])  # hub/first_start.py sends it too
# Sends a request around the SDK session and returns the raw result (hub/passthrough.py PassThrough.request).
RawSend = Callable[[Any, ProgressFnT], Awaitable[dict[str, Any]]]


class ChildState(enum.StrEnum):
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    FAILED = "failed"
    STOPPED = "stopped"


class ChildUnavailable(Exception):
    """The child cannot take requests now; the message names it, its state and why."""


class ChildBusy(Exception):
    """The child has max_concurrency requests in flight and max_queue waiting; this one is refused at once."""


class RequestTimedOut(Exception):
    """The child did not answer before the request's deadline; the request was cancelled at the child."""


@dataclass(frozen=True)
class Listing:
    """Everything a child offers, as the raw dicts it sent (so unknown fields pass through)."""

    tools: tuple[dict[str, Any], ...] = ()
    resources: tuple[dict[str, Any], ...] = ()
    templates: tuple[dict[str, Any], ...] = ()
    prompts: tuple[dict[str, Any], ...] = ()


class ChildObserver(Protocol):
    """What a child reports to the hub. Child-to-host requests go through `relay`."""

    async def listing_changed(self, child: Child) -> None: ...

    async def child_log(self, child: Child, params: types.LoggingMessageNotificationParams) -> None: ...

    async def resource_updated(self, child: Child, uri: str) -> None: ...

    async def child_request(self, child: Child, request: types.ServerRequest) -> Any: ...


_LIST_METHODS: dict[str, tuple[Callable[[types.PaginatedRequestParams | None], Any], str]] = {
    "tools": (lambda p: types.ListToolsRequest(params=p), "tools"),
    "resources": (lambda p: types.ListResourcesRequest(params=p), "resources"),
    "templates": (lambda p: types.ListResourceTemplatesRequest(params=p), "resourceTemplates"),
    "prompts": (lambda p: types.ListPromptsRequest(params=p), "prompts"),
}


async def send_with_deadline(
    client: Client,
    request: types.ClientRequest | types.Request[Any, Any],
    server: str,
    config: ServerConfig,
    relay: ProgressFnT | None,
    window_s: float,
    raw: RawSend | None = None,
) -> dict[str, Any]:
    """Send one request; each progress notification moves the deadline to `window_s` from now, up to max_timeout.

    Raises:
        RequestTimedOut: no answer before the deadline (leaving the scope abandons the request, and the SDK sends
            the child notifications/cancelled).
        MCPError: the child answered with an error, or its connection closed.
    """
    began = anyio.current_time()
    ceiling = began + max(config.max_timeout, window_s)
    with anyio.CancelScope(deadline=began + window_s) as deadline:

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            deadline.deadline = min(anyio.current_time() + window_s, ceiling)
            if relay is not None:
                await relay(progress, total, message)

        if raw is not None:
            return await raw(request, on_progress)
        result: dict[str, Any] = await client.session.send_request(
            request,
            RAW_RESULT,
            request_read_timeout_seconds=ceiling - began + 1,  # a backstop; the scope decides
            progress_callback=on_progress,
        )
        return result
    raise RequestTimedOut(
        f"server '{server}' did not answer within {anyio.current_time() - began:.3g}s "
        f"(timeout {window_s:g}s); the request was cancelled"
    )


class ChildPeer(Protocol):
    """What answers the messages a child sends on one connection (the shared one, or a host session's lane)."""

    async def _on_message(self, message: IncomingMessage) -> None: ...

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None: ...

    async def _on_sampling(self, context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any: ...

    async def _on_elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Any: ...

    async def _on_roots(self, context: ClientRequestContext) -> Any: ...


@asynccontextmanager
async def connect_child(config: ServerConfig, process: StdioProcess | None, peer: ChildPeer) -> AsyncIterator[Client]:
    """The SDK client of one connection to a child: over `process` (stdio) or to its URL.

    It must be entered and exited in one task (an SDK requirement), so the caller owns it for the connection's life.
    """
    transport: Any = process.connect() if process is not None else url_transport(config)
    client = Client(
        transport,
        mode=client_mode(config.protocol),
        cache=None,
        client_info=HUB_INFO,
        read_timeout_seconds=config.connect_timeout,  # initialize and listings; calls pass their own timeout
        message_handler=peer._on_message,
        logging_callback=peer._on_log,
        sampling_callback=peer._on_sampling,
        elicitation_callback=peer._on_elicitation,
        list_roots_callback=peer._on_roots,
    )
    async with client:
        yield client


@dataclass
class Child:
    name: str
    prefix: str
    config: ServerConfig
    observer: ChildObserver
    state: ChildState = ChildState.STARTING
    listing: Listing = field(default_factory=Listing)
    last_error: str | None = None
    restarts: int = 0
    start_ms: float | None = None
    started_at: float | None = None
    log_level: types.LoggingLevel | None = None
    # Host requests now routed to this child, oldest first: child-to-host requests go to the newest (relay.py).
    inflight: list[Any] = field(default_factory=list)
    _client: Client | None = None
    _process: StdioProcess | None = None
    _dirty: set[str] = field(default_factory=set)
    _dirty_event: anyio.Event = field(default_factory=anyio.Event)
    # Set once the first start attempt is over, ready or not: one-shot CLI commands wait for it.
    settled: anyio.Event = field(default_factory=anyio.Event)
    groups: ProcessGroups | None = None
    # Takes the answers to calls sent around the SDK session (hub/passthrough.py), and holds its calls that wait
    # for a max_concurrency slot, oldest first.
    tap: Tap | None = None
    queued: deque[Any] = field(default_factory=deque)
    # The process the pass-through may write to: set while a stdio child on its shared, handshake-era connection
    # is ready, None otherwise (URL children, `sessions: per-host`, 2026 children, between connections).
    direct: StdioProcess | None = None
    # Its process, started before the SDK was imported (hub/spawn.py): the first connection adopts it.
    spawned: Spawned | None = None
    _limiter: anyio.CapacityLimiter = field(init=False)
    _waiting: int = 0
    _timeouts: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._limiter = anyio.CapacityLimiter(self.config.max_concurrency)
        self._log = structlog.get_logger("hub.child").bind(child=self.name)

    def __repr__(self) -> str:
        return f"<Child {self.name} prefix={self.prefix!r} state={self.state} restarts={self.restarts}>"

    # ---- requests -------------------------------------------------------------------------------------

    async def request(
        self,
        request: types.ClientRequest | types.Request[Any, Any],
        *,
        progress: ProgressFnT | None = None,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the child's raw result.

        The deadline is `timeout_s` (default: the child's `timeout`); each progress notification from the child
        moves it to `timeout_s` from now, but never past `max_timeout` after the start.

        Raises:
            ChildUnavailable: the child is not connected.
            ChildBusy: too many requests are in flight and waiting.
            RequestTimedOut: no answer before the deadline (the request is cancelled at the child).
            MCPError: the child answered with an error, or its connection closed.
        """
        client = self._client
        if client is None or self.state is not ChildState.READY:
            raise ChildUnavailable(self.unavailable_reason())
        config = self.config
        waiting = self._waiting + len(self.queued)
        if self._limiter.available_tokens == 0 and waiting >= config.max_queue:
            raise ChildBusy(
                f"server '{self.name}' is busy: {config.max_concurrency} requests in flight and {waiting} "
                "waiting; try again, or raise max_concurrency / max_queue in servers.yaml"
            )
        timeout = timeout_s or config.timeout
        relay = progress  # the name `progress` is the SDK callback's parameter below
        self._waiting += 1
        try:
            await self._limiter.acquire()
        finally:
            self._waiting -= 1
        direct, tap = self.direct, self.tap
        raw = partial(tap.request, direct) if direct is not None and tap is not None else None
        try:
            return await send_with_deadline(client, request, self.name, config, relay, timeout, raw)
        finally:
            self._limiter.release()
            if self.queued and self.tap is not None:
                self.tap.resume(self)

    @property
    def waiting(self) -> int:
        """Requests waiting for a max_concurrency slot, on the SDK path and in the pass-through's queue."""
        return self._waiting + len(self.queued)

    def reserve(self, borrower: object) -> bool:
        """Take a max_concurrency slot now, for a call sent around `request`; False if none is free."""
        try:
            self._limiter.acquire_on_behalf_of_nowait(borrower)
        except anyio.WouldBlock:
            return False
        return True

    def release(self, borrower: object) -> None:
        self._limiter.release_on_behalf_of(borrower)

    def timeout_for(self, tool: str) -> float:
        """`config.timeout_for`, remembered per tool name (the globs are matched once)."""
        seconds = self._timeouts.get(tool)
        if seconds is None:
            seconds = self._timeouts[tool] = self.config.timeout_for(tool)
        return seconds

    async def settle_exit(self, limit_s: float = 1.0) -> None:
        """Give a child whose connection just closed a moment to report its exit status (bounded)."""
        process = self._process
        if process is not None:
            with anyio.move_on_after(limit_s):
                await process.exited.wait()

    def unavailable_reason(self) -> str:
        reason = f"server '{self.name}' is unavailable (state: {self.state})"
        if self.last_error:
            reason += f": {self.last_error}"
        return reason

    def connection_lost_reason(self) -> str:
        """Why an in-flight request failed because the connection ended: exit status and stderr tail."""
        parts = [f"server '{self.name}' closed the connection"]
        process = self._process
        if process is not None:
            if process.returncode is not None:
                parts.append(describe_exit(process.returncode))
            if process.stderr_tail:
                parts.append("last stderr: " + " | ".join(list(process.stderr_tail)[-5:]))
        return "; ".join(parts)

    async def set_log_level(self, level: types.LoggingLevel) -> None:
        self.log_level = level
        client = self._client
        if client is not None and self._supports("logging") and not is_modern(client.protocol_version):
            await client.session.set_logging_level(level)

    async def roots_changed(self) -> None:
        client = self._client
        if client is not None and not is_modern(client.protocol_version):  # no roots at 2026-07-28
            await client.session.send_roots_list_changed()

    @property
    def protocol_version(self) -> str | None:
        client = self._client
        return client.protocol_version if client is not None else None

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        client = self._client
        return client.session.server_capabilities if client is not None else None

    def _supports(self, kind: str) -> bool:
        caps = self.capabilities
        return caps is not None and getattr(caps, kind, None) is not None

    # ---- supervision ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Supervise the child until cancelled."""
        failures = 0
        try:
            while True:
                self.state = ChildState.STARTING if self.restarts == 0 and failures == 0 else ChildState.RESTARTING
                began = time.monotonic()
                await self._run_once()
                if self.started_at is not None and time.monotonic() - self.started_at >= STABLE_AFTER:
                    failures = 0
                failures += 1
                if failures > self.config.max_restarts:
                    self.state = ChildState.FAILED
                    self._log.error("child_failed", error=self.last_error, attempts=failures)
                    await self._clear_listing()
                    await anyio.sleep_forever()  # a reload replaces a failed child with a new one
                delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (failures - 1)) * random.uniform(0.5, 1.5)
                self.restarts += 1
                self.state = ChildState.RESTARTING
                self._log.warning(
                    "child_restarting",
                    attempt=failures,
                    backoff_s=round(delay, 2),
                    error=self.last_error,
                    uptime_s=round(time.monotonic() - began, 2),
                )
                await anyio.sleep(delay)
        finally:
            self.state = ChildState.STOPPED
            self._client = None
            self.direct = None
            if self.spawned is not None:  # stopped before its first connection adopted the early process
                spawned, self.spawned = self.spawned, None
                await end_unadopted(spawned)

    async def _run_once(self) -> None:
        began = time.monotonic()
        self.started_at = None
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.config.connect_timeout) as deadline:
                async with self._connect() as client, anyio.create_task_group() as tg:
                    check_child_era(self.config.protocol, client)
                    await self._load_all(client)
                    deadline.deadline = math.inf
                    self._client = client
                    self.start_ms = round((time.monotonic() - began) * 1000, 1)
                    self.started_at = time.monotonic()
                    if self.groups is not None:
                        self.groups.scan()
                    self.state = ChildState.READY
                    if self.config.sessions == "shared" and not is_modern(client.protocol_version):
                        self.direct = self._process
                    self.last_error = None
                    self._log.info(
                        "child_ready",
                        start_ms=self.start_ms,
                        protocol=client.protocol_version,
                        server=client.server_info.name if client.server_info else None,
                        tools=len(self.listing.tools),
                        resources=len(self.listing.resources),
                        templates=len(self.listing.templates),
                        prompts=len(self.listing.prompts),
                    )
                    await self.observer.listing_changed(self)
                    self.settled.set()  # after the namespace has the child's names: see Hub.wait_for_owner
                    if self.log_level is not None:
                        await self.set_log_level(self.log_level)
                    tg.start_soon(self._refresh_on_change, client)
                    tg.start_soon(follow_changes, self.name, client)  # 2026 children: list_changed via listen
                    await self._until_connection_ends(client)
                    tg.cancel_scope.cancel()
            if deadline.cancelled_caught:
                self.last_error = f"did not connect and list within {self.config.connect_timeout:g}s"
        except Exception as exc:  # the child's failure is reported, never the hub's
            self.last_error = self._describe_failure(exc)
        finally:
            self._client = None
            self.direct = None
            self.settled.set()
        if self.last_error is None:
            self.last_error = self.connection_lost_reason()
        self._log.warning("child_exited", error=self.last_error)

    def _describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, BaseExceptionGroup):
            leaves = exc.exceptions
            return "; ".join(self._describe_failure(e) for e in leaves[:3])
        if isinstance(exc, FileNotFoundError):
            if self.config.cwd is not None and exc.filename == self.config.cwd:
                return f"working directory not found: {self.config.cwd!r} (check 'cwd:')"
            return f"command not found: {self.config.command!r} (is it installed and on PATH?)"
        if isinstance(exc, MCPError):
            return f"{exc.error.message} (code {exc.error.code}); " + self.connection_lost_reason()
        text = str(exc) or type(exc).__name__
        return f"{type(exc).__name__}: {text}"

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Client]:
        spawned, self.spawned = self.spawned, None
        process = None
        if self.config.kind == "stdio":
            process = StdioProcess(self.name, self.config, self.groups, self.tap, spawned)
        self._process = process
        try:
            async with connect_child(self.config, process, self) as client:
                yield client
        finally:
            if process is not None:
                await process.release()

    async def _until_connection_ends(self, client: Client) -> None:
        """A stdio child's end is its process's exit; a URL child's is a failed heartbeat."""
        if self._process is not None:
            await self._process.exited.wait()
        else:
            await self._heartbeat(client)

    async def _heartbeat(self, client: Client) -> None:
        while True:
            await anyio.sleep(HEARTBEAT_INTERVAL)
            if client.protocol_version and client.protocol_version >= "2026":
                continue  # no ping at 2026-07-28; a dead child shows as failed requests
            try:
                await client.session.send_request(types.PingRequest(), RAW_RESULT, HEARTBEAT_TIMEOUT)
            except MCPError as exc:
                self.last_error = f"heartbeat failed: {exc.error.message}"
                return

    # ---- listings -------------------------------------------------------------------------------------

    async def _load_all(self, client: Client) -> None:
        caps = client.session.server_capabilities or types.ServerCapabilities()
        kinds = [
            k
            for k, present in (
                ("tools", caps.tools),
                ("resources", caps.resources),
                ("templates", caps.resources),
                ("prompts", caps.prompts),
            )
            if present is not None
        ]
        self.listing = await self._read_lists(client, kinds, Listing())

    async def _read_lists(self, client: Client, kinds: list[str], base: Listing) -> Listing:
        updates: dict[str, tuple[dict[str, Any], ...]] = {}
        for kind in kinds:
            request_type, key = _LIST_METHODS[kind]
            items: list[dict[str, Any]] = []
            cursor: str | None = None
            seen: set[str] = set()
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                try:
                    page = await client.session.send_request(request_type(params), RAW_RESULT)
                except MCPError as exc:
                    if exc.error.code == types.METHOD_NOT_FOUND:
                        break  # advertised but not served (e.g. templates): treat as empty
                    raise
                items.extend(page.get(key) or ())
                cursor = page.get("nextCursor")
                if not cursor or cursor in seen:
                    break
                seen.add(cursor)
            updates[kind] = tuple(items)
        return Listing(**{**base.__dict__, **updates})

    async def _refresh_on_change(self, client: Client) -> None:
        while True:
            await self._dirty_event.wait()
            await anyio.sleep(LIST_CHANGED_DEBOUNCE)
            self._dirty_event = anyio.Event()
            kinds, self._dirty = sorted(self._dirty), set()
            try:
                self.listing = await self._read_lists(client, kinds, self.listing)
            except MCPError as exc:
                self._log.warning("child_relist_failed", kinds=kinds, error=exc.error.message)
                continue
            self._log.info("child_list_changed", kinds=kinds)
            await self.observer.listing_changed(self)

    async def _clear_listing(self) -> None:
        if self.listing != Listing():
            self.listing = Listing()
            await self.observer.listing_changed(self)

    # ---- what the child sends us ----------------------------------------------------------------------

    async def _on_message(self, message: IncomingMessage) -> None:
        match message:
            case types.ToolListChangedNotification():
                self._mark_dirty("tools")
            case types.PromptListChangedNotification():
                self._mark_dirty("prompts")
            case types.ResourceListChangedNotification():
                self._mark_dirty("resources", "templates")
            case types.ResourceUpdatedNotification(params=params):
                await self.observer.resource_updated(self, str(params.uri))
            case Exception():
                self._log.warning("child_transport_error", error=str(message))
            case _:
                pass

    def _mark_dirty(self, *kinds: str) -> None:
        self._dirty.update(kinds)
        self._dirty_event.set()

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        await self.observer.child_log(self, params)

    async def _on_sampling(self, context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        return await self.observer.child_request(self, types.CreateMessageRequest(params=params))

    async def _on_elicitation(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        return await self.observer.child_request(self, types.ElicitRequest(params=params))

    async def _on_roots(self, context: ClientRequestContext) -> Any:
        return await self.observer.child_request(self, types.ListRootsRequest())
