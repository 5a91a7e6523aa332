"""The status page's numbers, as one JSON-ready snapshot (`GET /status.json`, and what `GET /` renders), read at
the moment of the request. Every text from a host or a child goes through the call log's redactor, so the page shows
no more than the log does. Token cost is the listing's, counted as `hub cost` counts it (tools found only through
search cost nothing). What it reads is named by protocols of its own: observe sits below the app and the relay.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from hub.observe.recent import Recent
from hub.observe.tokens import counter


class ToolListing(Protocol):
    """The namespace as the page counts it: the tools hosts may get, where each leads, those found only by search."""

    @property
    def tools(self) -> tuple[dict[str, Any], ...]: ...

    @property
    def tool_routes(self) -> Mapping[str, Any]: ...

    @property
    def unlisted(self) -> frozenset[str]: ...


class Failing(Protocol):
    @property
    def last_failure(self) -> tuple[str, float] | None:
        """The error that ended a child's last run, and when (epoch seconds)."""


class StatusSource(Protocol):
    """What the snapshot reads of the hub (`hub.app.Hub`, or a front's `hub.host.port.HubPort`)."""

    @property
    def namespace(self) -> ToolListing: ...

    @property
    def children(self) -> Mapping[str, Failing]: ...

    @property
    def draining(self) -> bool: ...

    def health(self) -> dict[str, Any]: ...

    def readiness(self) -> tuple[bool, dict[str, str]]: ...


class ListingTokens:
    """Per child: tools routed to it and the approximate tokens of those listed; recomputed when the namespace
    changes (a new namespace object is built on every change)."""

    def __init__(self) -> None:
        self._count, self.method = counter()
        self._namespace: ToolListing | None = None
        self._per_child: dict[str, tuple[int, int]] = {}

    def per_child(self, namespace: ToolListing) -> dict[str, tuple[int, int]]:
        """child -> (tools routed to it, tokens of those listed)."""
        if namespace is not self._namespace:
            found: dict[str, tuple[int, int]] = {}
            for tool in namespace.tools:
                name = tool.get("name")
                route = namespace.tool_routes.get(name) if isinstance(name, str) else None
                if route is None:
                    continue
                tools, tokens = found.get(route.child, (0, 0))
                if name not in namespace.unlisted:
                    tokens += self._count(json.dumps(tool, separators=(",", ":"), ensure_ascii=False))
                found[route.child] = (tools + 1, tokens)
            self._namespace, self._per_child = namespace, found
        return self._per_child


def _when(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _failure(failure: tuple[str, float] | None, redact: Callable[[Any], Any]) -> dict[str, str] | None:
    return None if failure is None else {"error": redact(failure[0]), "at": _when(failure[1])}


def snapshot(hub: StatusSource, recent: Recent, tokens: ListingTokens, redact: Callable[[Any], Any]) -> dict[str, Any]:
    """The page's data now; every text from a host or a child passed through `redact`."""
    health = hub.health()
    ready, _ = hub.readiness()
    per_child = tokens.per_child(hub.namespace)
    failures = {name: child.last_failure for name, child in hub.children.items()}
    servers = [
        {
            "name": s["name"],
            "prefix": s["prefix"],
            "state": s["state"],
            "restarts": s["restarts"],
            "last_error": redact(s["last_error"]),
            "last_failure": _failure(failures.get(s["name"]), redact),
            "tools": per_child.get(s["name"], (0, 0))[0],
            "hidden_tools": s["hidden_tools"],
            "tokens": per_child.get(s["name"], (0, 0))[1],
            "uptime_s": s["uptime_s"],
        }
        for s in health["servers"]
    ]
    windows = recent.windows(s["name"] for s in servers)
    activity = [
        {**dataclasses.asdict(w), "error_rate": round(w.error_rate, 4), "minutes": list(w.minutes)}
        for w in windows.values()
    ]
    calls = []
    for c in recent.calls():
        call = {**c._asdict(), "at": _when(c.at), "name": redact(c.name), "error": redact(c.error)}
        if c.arguments is None:
            del call["arguments"]
        else:
            call["arguments"] = redact(c.arguments)
        calls.append(call)
    return {
        "at": _when(time.time()),
        "version": health["version"],
        "uptime_s": health["uptime_s"],
        "ready": ready,
        "draining": hub.draining,
        "token_method": tokens.method,
        "servers": servers,
        "activity": activity,
        "calls": calls,
    }
