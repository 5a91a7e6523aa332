"""The hub: its children, the merged catalog, the router, the host sessions, and the configuration they follow.

`async with Hub(config).running():` starts the watchdog, then every child concurrently, and returns at once: slow
children's tools appear (with list_changed) when they are ready. Leaving the block stops every child, each stop
bounded in time. Nothing here knows how a host is connected (`hub.host`).
"""

from __future__ import annotations

import gc
import os
import re
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import structlog
from anyio.abc import TaskGroup

from hub import __version__
from hub.access.identity import Identity, local_user
from hub.access.policy import View
from hub.config.access import AuthConfig
from hub.config.lock import BASE_KEY, LockError, SharedApproval, child_from_document, overlay
from hub.config.reread import reread
from hub.config.schema import LoadedConfig, ServerConfig
from hub.config.settings import HubSettings
from hub.logs import CallLog
from hub.observe.recent import Recent
from hub.platform.sandbox import describe as describe_sandbox
from hub.platform.watchdog import Watchdog
from hub.protocol import errors
from hub.protocol.revisions import load_models
from hub.redaction import configured_secrets
from hub.relay.admission import Admission
from hub.relay.attribution import Attribution
from hub.relay.builtins import Builtins
from hub.relay.catalog import Catalog, Namespace
from hub.relay.hosts import Hosts
from hub.relay.naming import expose_uri
from hub.relay.record import Observers, Record
from hub.relay.rounds import Seals
from hub.relay.router import Router
from hub.state import open_state
from hub.upstream.child import Child, ChildState, Launcher
from hub.upstream.connection import Connection
from hub.upstream.credentials import personal
from hub.upstream.oauth import Credentials
from hub.upstream.oauth_vaults import oauth_credentials
from hub.upstream.startup import StartupWait

if TYPE_CHECKING:
    from hub.observe.metrics import ChildStats, Metrics
    from hub.observe.tracing import Tracing


def replica_id(given: str | None = None) -> str:
    """The replica's name in session ids, input-round states and the call log: `given` (--replica-id), else
    $HUB_REPLICA_ID, else the host name (a pod's name under Kubernetes); letters, digits and '-' only, so that it
    can lead a session id that a load balancer reads."""
    raw = given or os.environ.get("HUB_REPLICA_ID") or socket.gethostname() or "hub"
    cleaned = re.sub(r"[^A-Za-z0-9-]", "-", raw)[:63].strip("-")
    return cleaned or "hub"


# On SIGTERM, how long without a new request the drain waits for once nothing is in flight (seconds).
DRAIN_QUIET = 1.0
# How long the hub waits at start for its shared state's key (Redis); without it, rounds are refused until a restart.
REDIS_START_LIMIT = 10.0
# How long a broadcast to the children (logging/setLevel) may take.
NOTIFY_TIMEOUT = 5.0


@dataclass(frozen=True)
class Observing:
    """What the front asks the hub to observe, beside the call log: the HTTP front's /metrics (`metrics`) and status
    page (`recent`), and spans (`tracing`, from OTEL_*). The hub builds the observers from it (`Observers`)."""

    metrics: bool = False
    recent: bool = False
    tracing: Tracing | None = None


class Hub:
    """The composition root: every part is built here, with what it needs, and nothing is set on a part later."""

    def __init__(
        self,
        loaded: LoadedConfig,
        call_log: CallLog | None = None,
        started: float | None = None,
        local: Identity | None = None,
        *,
        replica: str | None = None,
        observing: Observing = Observing(),
        stateless: bool = False,
        auth_required: bool = False,
    ) -> None:
        self.loaded = loaded
        self.local = local or local_user()  # who a stdio host and the one-shot commands act for
        self.stateless = stateless  # `hub serve --http --stateless`: every request on its own (hub.host.http)
        self.auth_required = auth_required  # serving HTTP beyond loopback with auth: a reload may not drop `auth:`
        self.draining = False  # stopping: no new sessions, /readyz 503, calls in flight finish (`drain`)
        self.call_log = call_log or CallLog()
        self.call_log.redactor.add(configured_secrets(loaded.config.servers.values()))
        self.started = time.monotonic() if started is None else started  # the process's start, from hub.cli
        self.watchdog = Watchdog()
        self.hosts = Hosts(self._child_subscription)
        # What replicas share (`state:`), read once: a reload does not change it. Nothing connects before `running`.
        where = loaded.config.state
        self.shared = open_state(where.backend, where.url, where.key)
        self.oauth: Credentials | None = oauth_credentials(where, loaded.path.parent, self.shared)
        # Pins approved in the shared state (replicas: hub.state) over servers.lock's.
        self.shared_pins: dict[str, SharedApproval] = {}
        self.catalog = Catalog(
            lambda: self.builtins.reserved(),
            lambda: overlay(self.loaded.lock, self.shared_pins),
            lambda: self.loaded.config.hub,
        )
        self.metrics = self._metrics() if observing.metrics else None
        self.recent = Recent() if observing.recent else None
        self.record = Record(
            self.call_log, replica or replica_id(), Observers(self.metrics, self.recent, observing.tracing)
        )
        self.builtins = Builtins(
            lambda: self.loaded.config.hub,
            lambda: self.loaded.config.servers.values(),
            lambda: self.catalog.namespace,
            lambda: self.catalog.children,
            lambda: self.loaded.policy,
            self.health,
            self.record,
        )
        redact = self.call_log.redactor.value
        self.admission = Admission(
            lambda: self.loaded.policy,
            self.shared,
            Seals(self.shared, replica=self.record.replica),
            self.record,
            redact,
            self._timeout_of,
        )
        # Listings and the one-shot commands wait (bounded) for the children started with the hub.
        self.startup = StartupWait(
            lambda: self.catalog.children, self.started, lambda: self.settings.startup_listing_wait
        )
        self.router = Router(
            self.catalog,
            self.hosts,
            self.record,
            lambda: self.loaded.config.hub,
            self.builtins,
            self.startup.settle,
            self.admission,
            redact,
        )
        self.attribution = Attribution(self.router.spawn, self.hosts, self.router.tasks.runner.child_asked)
        # What the fronts (hub.host.port.HubPort) and the children (hub.upstream.child.Observer) ask of the hub that
        # one part answers alone: that part's own method.
        self.builtin_tools = self.builtins.tools
        self.instructions = self.builtins.instructions
        self.route = self.router.route
        self.cancel = self.router.cancel
        self.spawn = self.router.spawn
        self.record_listing = self.record.listing
        self.use_nonce = self.shared.use_nonce
        self.redact = redact
        self.child_log = self.attribution.child_log
        self.child_request = self.attribution.child_request
        self.elicitation_complete = self.attribution.elicitation_complete
        self.elicitations_required = self.attribution.elicitations_required
        self._log = structlog.get_logger("hub")
        self._tg: TaskGroup | None = None
        self._scopes: dict[str, anyio.CancelScope] = {}

    def _metrics(self) -> Metrics:
        from hub.observe.metrics import Metrics  # prometheus_client: only the HTTP front's start-up pays for it

        return Metrics(self._child_stats, lambda: len(self.hosts.sessions))

    def _child_stats(self) -> list[ChildStats]:
        from hub.observe.metrics import ChildStats

        held: dict[str, int] = {}
        for q in self.catalog.namespace.quarantined:
            held[q.child] = held.get(q.child, 0) + q.held
        return [
            ChildStats(
                c.name, c.state is ChildState.READY, c.restarts, c.slots.in_flight, c.slots.waiting, held.get(c.name, 0)
            )
            for c in self.children.values()
        ]

    def _timeout_of(self, name: str) -> float | None:
        child = self.catalog.children.get(name)
        return child.config.timeout if child is not None else None

    @property
    def children(self) -> dict[str, Child]:
        return self.catalog.children

    @property
    def replica(self) -> str:
        return self.record.replica

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Hub]:
        self.watchdog.start()  # before the first child: from now on none can outlive the hub
        shared = self.shared
        try:
            with anyio.fail_after(REDIS_START_LIMIT):
                await shared.seal_key()  # known from now on: parked calls' rounds seal without waiting
        except (errors.HubError, TimeoutError) as exc:
            self._log.error("shared_state_unavailable", error=getattr(exc, "message", repr(exc)))
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self.hosts.run)
                await tg.start(self.router.run)  # ready: calls may spawn their tasks from now on
                self.catalog.children = {name: self._start(name, server) for name, server in self._enabled(self.loaded)}
                self._log.info("hub_started", config=str(self.loaded.path), children=list(self.children))
                tg.start_soon(_load_models)  # while the children start
                if shared.shared:
                    tg.start_soon(shared.watch_pins, self._shared_pins_changed)
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._tg = None
            with anyio.CancelScope(shield=True):
                await shared.close()
            self.watchdog.close()

    async def _shared_pins_changed(self) -> None:
        """Another replica (or `hub pin --approve`) stored approvals."""
        stored = await self.shared.approved_pins()
        pins: dict[str, SharedApproval] = {}
        for child, entry in stored.items():
            try:
                base = entry.pop(BASE_KEY, None) if isinstance(entry, dict) else None
                approved = child_from_document(entry, f"shared state: pins of {child}")
                pins[child] = SharedApproval(approved, base if isinstance(base, str) else None)
            except LockError as exc:
                self._log.warning("shared_pins_refused", child=child, error=str(exc))
        if pins != self.shared_pins:
            self.shared_pins = pins
            self._log.info("shared_pins_applied", children=sorted(pins))
            self.listing_changed(None)

    @staticmethod
    def _enabled(loaded: LoadedConfig) -> list[tuple[str, ServerConfig]]:
        return [(name, server) for name, server in loaded.config.servers.items() if server.enabled]

    def _start(self, name: str, server: ServerConfig) -> Child:
        """Create a child and supervise it in its own cancel scope, so that a reload can stop it alone."""
        assert self._tg is not None
        child = Child(
            name,
            self.loaded.prefix_of(name),
            server,
            self,
            self.watchdog,
            self._launcher(server),
            idle_timeout=self.loaded.config.hub.http.session_idle_timeout,
            shared_identity=self.local,
            oauth=self.oauth,
        )
        scope = anyio.CancelScope()
        self._scopes[name] = scope

        async def supervise() -> None:
            with scope:
                await child.run()

        self._tg.start_soon(supervise)
        return child

    def _launcher(self, server: ServerConfig) -> Launcher:
        """How a child is started for an identity: its placeholders expanded with that identity's name, groups and
        secrets (the shared connection's with the hub's own identity), from the secrets as they are now."""
        redactor = self.call_log.redactor
        return lambda identity: personal(
            server, identity or self.local, self.loaded.secrets, lambda value: redactor.add([value])
        )

    async def reload(self, loaded: LoadedConfig) -> dict[str, list[str]]:
        """Start added children, stop removed ones, restart changed ones; unchanged ones are not touched, so their
        calls in flight finish. Returns what changed."""
        old = dict(self._enabled(self.loaded))
        new = dict(self._enabled(loaded))
        # A failed child is retried by any reload: its command may have been fixed outside the file.
        changed = [
            n
            for n in new
            if n in old
            and (
                new[n].launch_settings() != old[n].launch_settings()
                or loaded.prefix_of(n) != self.loaded.prefix_of(n)
                or self.children[n].state is ChildState.FAILED
            )
        ]
        removed = [n for n in old if n not in new]
        added = [n for n in new if n not in old]
        for name in (*removed, *changed):
            self._scopes.pop(name).cancel()
        before = self.loaded.policy
        self.call_log.redactor.add(configured_secrets(loaded.config.servers.values()))
        self.loaded = loaded
        if loaded.policy != before:
            self.hosts.views_changed(lambda identity: before.view(identity) != loaded.policy.view(identity))
        kept = {n: c for n, c in self.children.items() if n in new and n not in changed}
        for name, child in kept.items():
            child.config = new[name]  # what the host sees of it (overrides, read_only, ...): no restart needed
        self.catalog.children = {n: kept[n] if n in kept else self._start(n, new[n]) for n in new}
        summary = {"added": added, "removed": removed, "changed": changed, "unchanged": [n for n in new if n in kept]}
        self._log.info("config_reloaded", config=str(loaded.path), **summary)
        self.listing_changed(None)
        return summary

    def readiness(self) -> tuple[bool, dict[str, str]]:
        """Whether a load balancer may send this hub new sessions, and each child's state.

        Ready when the children marked `required: true` are (every child, when none is marked): one flaky child
        that nobody marked must not take a replica out of rotation. Never while draining.
        """
        children = list(self.children.values())
        required = [c for c in children if c.config.required] or children
        ready = not self.draining and all(c.state is ChildState.READY for c in required)
        return ready, {c.name: str(c.state) for c in children}

    async def drain(self) -> None:
        """Stop taking new sessions and wait, at most `hub.drain_timeout`, until no call is in flight and none has
        arrived for DRAIN_QUIET seconds: behind a balancer, sessions pinned here keep sending calls until its health
        check sees /readyz fail, and a call that arrives as the hub stops would fail."""
        self.draining = True
        limit = self.loaded.config.hub.drain_timeout
        self._log.info("hub_draining", in_flight=self.router.in_flight, limit_s=limit)
        with anyio.move_on_after(limit) as waited:
            while True:
                await self.router.wait_idle()
                quiet = DRAIN_QUIET - (time.monotonic() - self.router.last_request)
                if quiet <= 0 and not self.router.in_flight:
                    break
                await anyio.sleep(max(quiet, 0.05))
        self._log.info("hub_drained", in_flight=self.router.in_flight, timed_out=waited.cancelled_caught)

    # ---- what the host sees of the hub itself -----------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        namespace = self.catalog.namespace
        return {
            "version": __version__,
            "config": str(self.loaded.path),
            "uptime_s": round(time.monotonic() - self.started, 1),
            "servers": [
                {
                    "name": c.name,
                    "prefix": c.prefix,
                    "state": str(c.state),
                    "restarts": c.restarts,
                    "start_ms": c.start_ms,
                    "sandbox": describe_sandbox(c.config.grants()) if c.config.command is not None else "-",
                    "last_error": c.last_error,
                    "tools": len(c.listing.tools),
                    "resources": len(c.listing.resources) + len(c.listing.templates),
                    "prompts": len(c.listing.prompts),
                    "hidden_tools": namespace.hidden_tools.get(c.name, 0),
                    "quarantined": [q.original for q in namespace.quarantined if q.child == c.name and q.held],
                    "uptime_s": round(time.monotonic() - c.started_at, 1) if c.started_at else None,
                }
                for c in self.children.values()
            ],
            "collisions": [c.__dict__ for c in namespace.collisions],
        }

    # ---- what children report (hub.upstream.child.Observer) ----------------------------------------------------

    def listing_changed(self, child: Child | None) -> None:
        changed = self.catalog.rebuild()
        # Not during the start-up wait: every listing asked meanwhile is held until it ends and then answered with
        # all of it, so telling the host would only make it list once more.
        if changed and not self.startup.left():
            self.hosts.list_changed(*changed)

    def resource_updated(self, child: Child, uri: str) -> None:
        self.hosts.resource_updated(expose_uri(child.prefix, uri))

    # ---- what a host asks of every child ------------------------------------------------------------------------

    async def set_log_level(self, level: str, owner: object | None = None) -> None:
        """Every child (or, with `owner`, that session's own connections) gets the level; bounded."""
        with anyio.move_on_after(NOTIFY_TIMEOUT):
            async with anyio.create_task_group() as tg:
                for child in list(self.children.values()):
                    tg.start_soon(child.set_log_level, level, owner)

    def roots_changed(self, owner: object | None = None) -> None:
        for child in list(self.children.values()):
            child.roots_changed(owner)

    def session_ended(self, owner: object) -> None:
        """A host session ended: its own connections close (and its identity's, if no other session of that
        identity is left), and the subscriptions only it held end at the child."""
        identity = getattr(owner, "identity", None)
        last_of_identity = not any(s is not owner and s.identity == identity for s in self.hosts.sessions)
        for child in list(self.children.values()):
            child.close_session(owner)
            if child.per_identity and last_of_identity:
                child.close_session(identity)
        for uri in self.hosts.discard(owner):  # type: ignore[arg-type]
            self._child_subscription(uri, False)

    def _child_subscription(self, uri: str, subscribe: bool) -> None:
        """The child serving exposed `uri` subscribes to it, or unsubscribes, on its shared connection (hub.relay.hosts:
        the first subscription of a listen stream, the last one of a session or a stream)."""
        route = self.catalog.namespace.route_uri(uri)
        owner_child = self.children.get(route.child) if route is not None else None
        if route is not None and owner_child is not None and owner_child.shared is not None:
            self.router.spawn(self._subscribe, owner_child.shared, route.original, subscribe)

    async def _subscribe(self, connection: Connection, uri: str, subscribe: bool) -> None:
        method = "resources/subscribe" if subscribe else "resources/unsubscribe"
        try:
            await connection.request(method, {"uri": uri}, NOTIFY_TIMEOUT)
        except Exception as exc:  # the child may be gone too; nothing is left to undo then
            self._log.info("child_subscription_failed", child=connection.name, method=method, uri=uri, error=str(exc))

    # ---- what the fronts use (hub.host.port.HubPort) ----------------------------------------------------------

    @property
    def settings(self) -> HubSettings:
        return self.loaded.config.hub

    @property
    def auth_config(self) -> AuthConfig | None:
        return self.loaded.config.auth

    @property
    def token_path(self) -> Path | None:
        return self.loaded.token_path

    @property
    def namespace(self) -> Namespace:
        return self.catalog.namespace

    def view(self, identity: Identity) -> View:
        return self.loaded.policy.view(identity)

    async def reload_from_disk(self, reason: str) -> dict[str, list[str]] | None:
        loaded = await reread(self.loaded.path, self.auth_required, reason)
        if self.metrics is not None:
            self.metrics.reload("rejected" if loaded is None else "applied")
        return None if loaded is None else await self.reload(loaded)


async def _load_models() -> None:
    await anyio.to_thread.run_sync(load_models)
    # What start-up built (modules, the per-revision models: most of the hub's objects) lives as long as the hub.
    # Out of the collector's sight, a full collection walks only what calls allocate: without this, each one walks
    # every model, a pause in the middle of some call.
    gc.freeze()
