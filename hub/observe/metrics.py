"""Prometheus metrics for the hub: what it routed, what it refused, and how its children are doing.

One `CollectorRegistry` per `Metrics` (never prometheus_client's global one), so that two hubs in one process do
not clash. Request durations use the OpenTelemetry MCP conventions' buckets, so the hub's latencies line up with
other MCP servers'. The children's gauges and the session count are read at scrape time from the callables given:
a copy kept here would drift.

Label values are bounded, since each distinct value is a series kept for the life of the process and a hostile
host or child must not grow the registry: a method outside the MCP set is "other", every value is cut to
`LABEL_LIMIT` characters, and past `TOOL_LIMIT` distinct tool names further ones count as "other". No label names
a person, a token or a session.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

# mcp.server.operation.duration's ExplicitBucketBoundaries, in seconds (OpenTelemetry semantic conventions, MCP).
DURATION_BUCKETS: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
LABEL_LIMIT = 200
TOOL_LIMIT = 1000
OTHER = "other"
HUB = "hub"
MCP_METHODS = frozenset({
    "tools/call", "tools/list", "resources/read", "resources/list", "resources/templates/list", "resources/subscribe",
    "resources/unsubscribe", "prompts/get", "prompts/list", "completion/complete", "initialize", "ping",
    "logging/setLevel", "subscriptions/listen",
})  # fmt: skip


@dataclass(frozen=True)
class ChildStats:
    """One child as the scrape sees it: whether it is up, how often it was restarted, its calls in flight and queued."""

    name: str
    up: bool
    restarts: int
    in_flight: int
    queued: int
    quarantined: int = 0


def _cut(value: str) -> str:
    return value[:LABEL_LIMIT]


class _Capped:
    """Label values admitted as they are first seen, up to a limit; past it, new ones map to "other"."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()  # exact cap even if a reader thread records alongside the event loop

    def __call__(self, value: str) -> str:
        value = _cut(value)
        with self._lock:
            if value in self._seen:
                return value
            if len(self._seen) < self._limit:
                self._seen.add(value)
                return value
        return OTHER


# The children's series, read at each scrape: (family, name, help, the ChildStats field it shows).
_CHILD_SERIES: tuple[tuple[type[GaugeMetricFamily | CounterMetricFamily], str, str, str], ...] = (
    (GaugeMetricFamily, "hub_child_up", "Whether the child is connected and answering (1) or not (0).", "up"),
    (CounterMetricFamily, "hub_child_restarts_total", "Times the hub restarted the child.", "restarts"),
    (GaugeMetricFamily, "hub_child_in_flight", "Requests the child is working on now.", "in_flight"),
    (GaugeMetricFamily, "hub_child_queued", "Requests waiting for one of the child's slots.", "queued"),
    (
        GaugeMetricFamily,
        "hub_child_quarantined",
        "Tools and prompts of the child held back for differing from servers.lock.",
        "quarantined",
    ),
)


class _ChildCollector(Collector):
    """The children's gauges and the session count, read from the hub's callables at each scrape."""

    def __init__(self, children: Callable[[], Iterable[ChildStats]], sessions: Callable[[], int]) -> None:
        self._children = children
        self._sessions = sessions

    def describe(self) -> Iterable[Metric]:
        # The names alone, so that the registry refuses a clash when this is registered (no callable is called).
        return self._families((), None)

    def collect(self) -> Iterable[Metric]:
        return self._families(self._children(), self._sessions())

    @staticmethod
    def _families(children: Iterable[ChildStats], sessions: int | None) -> list[Metric]:
        families = [(kind(name, text, labels=["child"]), field) for kind, name, text, field in _CHILD_SERIES]
        for child in children:
            for family, field in families:
                family.add_metric([_cut(child.name)], int(getattr(child, field)))
        open_sessions = GaugeMetricFamily("hub_sessions", "Host sessions open now.", labels=[])
        if sessions is not None:
            open_sessions.add_metric([], sessions)
        return [*(family for family, _ in families), open_sessions]


class Metrics:
    """The hub's metrics in a registry of their own; the contract is in the module's docstring."""

    def __init__(self, children: Callable[[], Iterable[ChildStats]], sessions: Callable[[], int]) -> None:
        self.registry = CollectorRegistry()
        self._tool = _Capped(TOOL_LIMIT)
        counter = functools.partial(Counter, registry=self.registry)
        self._requests = counter(
            "hub_requests_total",
            "Requests and listings the hub routed or answered, by child (hub: answered by the hub), method, outcome.",
            ["child", "method", "outcome"],
        )
        self._durations = Histogram(
            "hub_request_duration_seconds",
            "Time from a request's arrival to its answer, by child and method.",
            ["child", "method"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self._tool_calls = counter(
            "hub_tool_calls_total", "tools/call by exposed tool name and outcome.", ["tool", "outcome"]
        )
        self._rejections = counter(
            "hub_rejections_total", "Requests the hub refused before routing, by reason.", ["reason"]
        )
        self._reloads = counter("hub_reloads_total", "Configuration reloads, applied or rejected.", ["outcome"])
        self._auth_failures = counter("hub_auth_failures_total", "Token and JWKS failures, by kind.", ["kind"])
        self.registry.register(_ChildCollector(children, sessions))

    def request(self, child: str | None, method: str, outcome: str, seconds: float) -> None:
        """A routed request or listing ended; `child` None for one the hub answered itself (label "hub")."""
        child_label = HUB if child is None else _cut(child)
        method_label = method if method in MCP_METHODS else OTHER
        self._requests.labels(child_label, method_label, _cut(outcome)).inc()
        self._durations.labels(child_label, method_label).observe(max(seconds, 0.0))

    def tool_call(self, exposed: str, outcome: str) -> None:
        """A tools/call ended, by the tool's exposed (namespaced) name."""
        self._tool_calls.labels(self._tool(exposed), _cut(outcome)).inc()

    def rejection(self, reason: str) -> None:
        """The hub refused a request: busy, denied, unauthenticated, rate_limited, invalid, too_large, unavailable."""
        self._rejections.labels(_cut(reason)).inc()

    def reload(self, outcome: str) -> None:
        """A configuration reload was applied or rejected."""
        self._reloads.labels(_cut(outcome)).inc()

    def auth_failure(self, kind: str) -> None:
        """A token or JWKS failure: token_unknown, token_expired, jwt_invalid, jwks_fetch..."""
        self._auth_failures.labels(_cut(kind)).inc()

    def render(self) -> tuple[bytes, str]:
        """The scrape: the registry in the text exposition format, and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
