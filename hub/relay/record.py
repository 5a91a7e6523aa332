"""The record of what the hub answered: the one sink for the call-log line, the recent calls (`hub.observe.recent`),
the metrics (`hub.observe.metrics`) and the request spans (`hub.observe.tracing`). Every routed request ends in
exactly one `line`, every listing in one `listing`; the observers are chosen when the hub is built (`Observers`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import structlog

from hub.access.hidden import Explanation
from hub.protocol import errors
from hub.protocol.jsonrpc import encode
from hub.relay.ports import HostRequest

if TYPE_CHECKING:  # not imported at start-up: prometheus_client is only the HTTP front's cost
    from hub.observe.metrics import Metrics
    from hub.observe.recent import Recent
    from hub.observe.tracing import RequestSpan, Tracing

_log = structlog.get_logger("hub")
# Where the call-log line goes (hub.logs.CallLog, or a list's append in tests): it may redact the fields in place.
LineSink = Callable[[dict[str, Any]], None]
# Outcomes that are the hub refusing a request (counted as rejections by reason), not the child answering it.
REJECTIONS = frozenset(
    {
        "busy",
        "denied",
        "unavailable",
        "too_large",
        "rate_limited",
        "invalid_arguments",
        "read_only",
        "quarantined",
        "not_confirmed",
    }
)
# Fields copied from what a host sent are cut to this many characters in the log.
LOG_FIELD_LIMIT = 1000


@dataclass(frozen=True)
class Observers:
    """What watches the hub besides the call log, chosen by the front before the hub is built: `metrics` and
    `recent` with the HTTP front (its /metrics and status page), `tracing` with OTEL_* set and the otel extra."""

    metrics: Metrics | None = None
    recent: Recent | None = None
    tracing: Tracing | None = None


class Record:
    """Writes one request's record to every observer, in one order: the call log first (which redacts the fields),
    then the recent calls (so they hold what the log holds), then the metrics; a span ends with the line."""

    def __init__(self, call_log: LineSink, replica: str, observers: Observers = Observers()) -> None:
        self._call_log = call_log
        self.replica = replica  # this replica's name (hub.app.replica_id), in every line
        self.metrics = observers.metrics
        self.recent = observers.recent
        self.tracing = observers.tracing

    def span(self, request: HostRequest, target: str, meta: Any) -> RequestSpan | None:
        """The span of a request, begun now, with tracing on; the line that ends the request ends it."""
        if self.tracing is None:
            return None
        return self.tracing.start(request.method, target, request.session.label, meta)

    def listing(self, method: str, began: float, explanation: Explanation | None = None) -> None:
        """A listing the hub answered itself (from `time.perf_counter()` `began`), counted in the metrics. One that
        the policy left empty for its identity (`explanation`) is logged as `listing_hidden_by_policy`: a host cannot
        show prose with an empty list, so the log says who asked, their groups and the rule (names only)."""
        if self.metrics is not None:
            self.metrics.request(None, method, "ok", time.perf_counter() - began)
        if explanation is not None and explanation.empty and explanation.hidden:
            _log.info("listing_hidden_by_policy", method=method, replica=self.replica, **explanation.fields())

    def line(
        self,
        request: HostRequest,
        child: str | None,
        name: str,
        original: str | None,
        began: float,
        outcome: str,
        error: errors.HubError | None = None,
        size: int = 0,
        arguments: Any = None,
        rule: str | None = None,
        span: RequestSpan | None = None,
        confirmed: str | None = None,
    ) -> None:
        """The one record of a routed request (docs/call-log.md names the fields)."""
        identity = request.session.identity
        fields: dict[str, Any] = {
            "method": request.method,
            "replica": self.replica,
            "host_session": request.session.label,
            "identity": identity.name,
            "auth": identity.method,
            "rule": rule,
            "request_id": cut(request.id),
            "child": child,
            "name": cut(name),
            "original": cut(original),
            "duration_ms": round((time.perf_counter() - began) * 1000, 2),
            "outcome": outcome,
            "bytes_in": _size(request.params.get("arguments")),
            "bytes_out": size,
        }
        if error is not None:
            fields["error_code"], fields["error_message"] = error.code, cut(error.message)
        if arguments is not None:
            fields["arguments"] = arguments
        if confirmed is not None:
            fields["confirmation"] = confirmed
        if span is not None:
            fields["trace_id"] = span.trace_id
            kind = "tool_error" if outcome == "tool_error" else None if error is None else str(error.code)
            span.end(outcome, kind, message=None if error is None else error.message)
        self._write(fields)
        metrics = self.metrics
        if metrics is not None:
            metrics.request(child, request.method, outcome, fields["duration_ms"] / 1000)
            if request.method == "tools/call":
                metrics.tool_call(name, outcome)
            if outcome in REJECTIONS:
                metrics.rejection(outcome)

    def task_ended(self, task: dict[str, Any], outcome: str) -> None:
        """The second line of a task-augmented tools/call (hub.relay.tasks): its task ended, with `outcome` and the
        duration since the call created it. `task` is the task's record (hub.relay.task_records)."""
        began = task.get("began")
        fields: dict[str, Any] = {
            "method": "tools/call",
            "replica": self.replica,
            "host_session": task.get("session"),
            "identity": task.get("identity"),
            "auth": task.get("auth"),
            "rule": task.get("rule"),
            "request_id": cut(task.get("requestId")),
            "child": task.get("child"),
            "name": cut(task.get("tool")),
            "original": cut(task.get("original")),
            "duration_ms": round((time.time() - began) * 1000, 2) if isinstance(began, float) else None,
            "outcome": outcome,
            "bytes_in": 0,
            "bytes_out": 0,
            "task": task.get("key"),
            "task_status": task.get("status"),
        }
        error = task.get("error")
        if isinstance(error, dict):
            fields["error_code"], fields["error_message"] = error.get("code"), cut(error.get("message"))
        self._write(fields)

    def _write(self, fields: dict[str, Any]) -> None:
        self._call_log(fields)
        if self.recent is not None:  # after the call log: its fields redacted as the line was
            self.recent.record(fields)


def cut(value: Any) -> Any:
    """A string from a host or a child, cut to LOG_FIELD_LIMIT characters for the log."""
    if isinstance(value, str) and len(value) > LOG_FIELD_LIMIT:
        return value[: LOG_FIELD_LIMIT - 3] + "..."
    return value


def _size(arguments: Any) -> int:
    if arguments is None:
        return 0
    try:
        return len(encode(arguments))
    except ValueError:
        return 0
