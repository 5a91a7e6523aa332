"""The composition root: one `Hub` owns its children, the merged namespace, the host connections and the router.

`async with Hub(config).running():` starts every child concurrently in one task group and returns at once:
the host is served while slow children are still starting, and their tools appear (with list_changed)
when they are ready. Leaving the block stops every child, each shutdown bounded in time.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import structlog
from anyio.abc import TaskGroup

from hub import __version__
from hub.bridge import Bridges
from hub.child import Child, ChildState
from hub.config import LoadedConfig, ServerConfig
from hub.hosts import HostConnections
from hub.identity import HEALTH_TOOL, HEALTH_TOOL_DEF
from hub.lanes import LanePool
from hub.logs import CallLog
from hub.naming import expose_uri
from hub.passthrough import PassThrough
from hub.registry import Namespace, build_namespace
from hub.relay import forward_child_log, forward_child_request
from hub.router import Router
from hub.spawn import EXIT_GRACE, KILL_GRACE, EarlySpawns
from hub.transports import Reaper

# How long roots/list_changed may take to reach each child.
NOTIFY_TIMEOUT = 5.0


class Hub:
    def __init__(
        self,
        loaded: LoadedConfig,
        call_log: CallLog | None = None,
        early: EarlySpawns | None = None,
        started: float | None = None,
    ) -> None:
        self.loaded = loaded
        self._early = early  # children's processes started before the SDK import, taken at their first start
        self.call_log = call_log or CallLog()
        self.children: dict[str, Child] = {}
        self.namespace = Namespace()
        self.hosts = HostConnections()
        self.lanes = LanePool()  # per-host-session connections of `sessions: per-host` children
        self.bridges = Bridges()  # handshake-era children's calls parked for 2026 hosts' input rounds
        self.router = Router(self)
        self.passthrough = PassThrough(self)  # tools/call around the SDK, once a stdio front attaches
        self.started = time.monotonic() if started is None else started  # the process's start, from hub.cli
        self._start_over = False  # every child started with the hub settled, or the listing wait ran out
        self._log = structlog.get_logger("hub")
        self._reaper = Reaper()
        self._task_group: TaskGroup | None = None
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._reported_collisions: set[tuple[str, str, str]] = set()
        self._reported_renames: set[tuple[str, str]] = set()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Hub]:
        self._reaper.start()
        try:
            async with anyio.create_task_group() as tg:
                self._task_group = tg
                tg.start_soon(self.hosts.run)
                tg.start_soon(self.lanes.run)
                tg.start_soon(self.bridges.run)
                tg.start_soon(self.passthrough.run)
                self.children = {name: self._start(name, server) for name, server in self._enabled(self.loaded)}
                self._log.info("hub_started", config=str(self.loaded.path), children=list(self.children))
                try:
                    yield self
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._task_group = None
            self._reaper.close()

    @staticmethod
    def _enabled(loaded: LoadedConfig) -> list[tuple[str, ServerConfig]]:
        return [(name, server) for name, server in loaded.config.servers.items() if server.enabled]

    def _start(self, name: str, server: ServerConfig) -> Child:
        """Create a child and supervise it in its own cancel scope, so that a reload can stop it alone."""
        assert self._task_group is not None
        child = Child(
            name=name,
            prefix=self.loaded.prefix_of(name),
            config=server,
            observer=self,
            groups=self._reaper,
            tap=self.passthrough,
            spawned=self._early.take(name, server) if self._early is not None else None,
        )
        scope = anyio.CancelScope()
        self._scopes[name] = scope

        async def supervise() -> None:
            with scope:
                await child.run()

        self._task_group.start_soon(supervise)
        return child

    async def reload(self, loaded: LoadedConfig) -> dict[str, list[str]]:
        """Apply a new configuration: start added children, stop removed ones, restart changed ones.

        Unchanged children are not touched, so their in-flight calls finish. Returns what changed.
        """
        old = dict(self._enabled(self.loaded))
        new = dict(self._enabled(loaded))
        old_prefixes = {name: self.loaded.prefix_of(name) for name in old}
        # A failed child is retried by any reload: its command may have been fixed outside the file.
        changed = [
            n
            for n in new
            if n in old
            and (
                new[n] != old[n]
                or loaded.prefix_of(n) != old_prefixes[n]
                or self.children[n].state is ChildState.FAILED
            )
        ]
        removed = [n for n in old if n not in new]
        added = [n for n in new if n not in old]
        for name in (*removed, *changed):
            self._scopes.pop(name).cancel()
        self.loaded = loaded
        kept = {n: c for n, c in self.children.items() if n in new and n not in changed}
        self.children = {n: kept[n] if n in kept else self._start(n, new[n]) for n in new}
        summary = {"added": added, "removed": removed, "changed": changed, "unchanged": [n for n in new if n in kept]}
        self._log.info("config_reloaded", config=str(loaded.path), **summary)
        await self.listing_changed(None)
        return summary

    async def wait_settled(self, limit_s: float) -> None:
        """Wait (bounded) until every child is ready or has failed at least once; for one-shot CLI commands."""
        with anyio.move_on_after(limit_s):
            for child in self.children.values():
                await child.settled.wait()

    def settle_limit(self, children: Iterable[Child] | None = None) -> float:
        """How long children (all, by default) may take to be ready or to have failed once.

        The slowest connect_timeout, the time a hung process is then given to exit, and a second to report it.
        """
        pool = self.children.values() if children is None else children
        return max((child.config.connect_timeout for child in pool), default=0.0) + EXIT_GRACE + KILL_GRACE + 1

    def settled(self) -> bool:
        """Whether every child is ready or has failed at least once: the listing is as complete as it gets."""
        return all(child.settled.is_set() for child in self.children.values())

    def startup_wait_left(self) -> float:
        """Seconds a list request may still wait for the children started with the hub; 0 once that is over.

        A host that ignores tools/list_changed (Claude Desktop, historically) keeps its first listing until it
        restarts, so during start-up a listing waits to be complete. Children restarting later, or added by a
        reload once the wait is over, never hold a listing. Counted from the process's start, so that a host's
        first listing comes at most `startup_listing_wait` after it spawned the hub, however long the import took
        (hosts time a server's start-up: Codex 10 s by default).
        """
        if self._start_over:
            return 0.0
        left = self.started + self.loaded.config.hub.startup_listing_wait - time.monotonic()
        if left <= 0 or self.settled():
            self._start_over = True
            return 0.0
        return left

    def end_start_wait(self) -> None:
        """List requests from now on answer at once, with the children that are up."""
        self._start_over = True

    async def wait_for_start(self) -> None:
        """Hold a list request until every child started with the hub is ready or has failed once (bounded).

        It ends exactly when `startup_wait_left` does (a server added by a reload meanwhile counts too), because
        list_changed is not sent until then: a listing answered sooner could miss a change nobody is told of.
        """
        logged = False
        while left := self.startup_wait_left():
            starting = [child for child in self.children.values() if not child.settled.is_set()]
            if not logged:
                self._log.info("listing_waits_for_start", servers=[c.name for c in starting], limit_s=round(left, 1))
                logged = True
            with anyio.move_on_after(left):
                for child in starting:
                    await child.settled.wait()

    def possible_owners(self, name: str) -> list[Child]:
        """The children whose prefix `name` carries (or with no prefix): one of them may own it once it is up."""
        return [c for c in self.children.values() if not c.prefix or name.startswith(c.prefix + "_")]

    async def wait_for_owner(self, name: str) -> bool:
        """Wait (bounded) for the children still starting that could own tool `name`.

        A host may know a name before the hub does: from a warm start's cached listing, or from before a restart
        of the hub. False if no such child was starting.
        """
        starting = [child for child in self.possible_owners(name) if not child.settled.is_set()]
        if not starting:
            return False
        structlog.get_logger("hub").info("call_waits_for_start", tool=name, servers=[c.name for c in starting])
        with anyio.move_on_after(self.settle_limit(starting)):
            for child in starting:
                await child.settled.wait()
        return True

    # ---- the namespace --------------------------------------------------------------------------------

    def tool_listing(self) -> list[dict[str, Any]]:
        tools = list(self.namespace.tools)
        if self.loaded.config.hub.health_tool:
            tools.insert(0, HEALTH_TOOL_DEF)
        return tools

    def builtin_tool(self, name: str) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None:
        if name == HEALTH_TOOL and self.loaded.config.hub.health_tool:
            return self._health_tool
        return None

    async def _health_tool(self, arguments: dict[str, Any]) -> dict[str, Any]:
        report = self.health()
        return {"content": [{"type": "text", "text": json.dumps(report, indent=2)}], "structuredContent": report}

    def health(self) -> dict[str, Any]:
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
                    "last_error": c.last_error,
                    "tools": len(c.listing.tools),
                    "resources": len(c.listing.resources) + len(c.listing.templates),
                    "prompts": len(c.listing.prompts),
                    "hidden_tools": self.namespace.hidden_tools.get(c.name, 0),
                    "uptime_s": round(time.monotonic() - c.started_at, 1) if c.started_at else None,
                }
                for c in self.children.values()
            ],
            "collisions": [c.__dict__ for c in self.namespace.collisions],
        }

    def log_arguments(self, child: Child) -> bool:
        own = child.config.log_arguments
        return self.loaded.config.hub.log_arguments if own is None else own

    # ---- what children report (ChildObserver) ---------------------------------------------------------

    async def listing_changed(self, child: Child | None) -> None:
        old, new = self.namespace, build_namespace(list(self.children.values()), reserved=self._reserved())
        self.namespace = new
        self._report(new)
        changed = [
            kind
            for kind, before, after in (
                ("tools", old.tools, new.tools),
                ("prompts", old.prompts, new.prompts),
                ("resources", old.resources + old.templates, new.resources + new.templates),
            )
            if before != after
        ]
        # Not during the start-up wait: every listing asked meanwhile is held until it ends and then answered with
        # all of it, so telling the host would only make it list once more (warm_start checks its cached listing).
        if changed and not self.startup_wait_left():
            self.hosts.list_changed(*changed)

    def _reserved(self) -> frozenset[str]:
        return frozenset({HEALTH_TOOL}) if self.loaded.config.hub.health_tool else frozenset()

    def _report(self, namespace: Namespace) -> None:
        for c in namespace.collisions:
            key = (c.kind, c.exposed, c.dropped)
            if key not in self._reported_collisions:
                self._reported_collisions.add(key)
                self._log.warning(
                    "name_collision",
                    kind=c.kind,
                    name=c.exposed,
                    kept=c.kept,
                    dropped=c.dropped,
                    fix=f"give server '{c.dropped}' a different prefix in servers.yaml",
                )
        for r in namespace.renamed:
            if (r.child, r.original) not in self._reported_renames:
                self._reported_renames.add((r.child, r.original))
                self._log.warning(
                    "tool_renamed",
                    child=r.child,
                    original=r.original,
                    exposed=r.exposed,
                    reason="exposed tool names must match ^[A-Za-z0-9_-]{1,64}$",
                )

    async def child_log(self, child: Child, params: types.LoggingMessageNotificationParams) -> None:
        await forward_child_log(child, params, self.hosts)

    async def resource_updated(self, child: Child, uri: str) -> None:
        await self.hosts.resource_updated(expose_uri(child.prefix, uri))

    async def child_request(self, child: Child, request: types.ServerRequest) -> Any:
        return await forward_child_request(child, request)

    # ---- what the host asks of every child ------------------------------------------------------------

    async def set_log_level(self, level: types.LoggingLevel) -> None:
        async with anyio.create_task_group() as tg:
            for child in self.children.values():
                tg.start_soon(self._quietly, child, child.set_log_level(level))

    async def roots_changed(self) -> None:
        async with anyio.create_task_group() as tg:
            for child in self.children.values():
                tg.start_soon(self._quietly, child, child.roots_changed())

    async def _quietly(self, child: Child, work: Awaitable[None]) -> None:
        """One child's failure to take a broadcast must not fail it for the others."""
        try:
            with anyio.fail_after(NOTIFY_TIMEOUT):
                await work
        except Exception as exc:
            self._log.warning("child_broadcast_failed", child=child.name, error=str(exc) or type(exc).__name__)
