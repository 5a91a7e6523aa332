"""OpenTelemetry traces for the hub, an optional extra (for users: docs/team.md, "Traces").

`Tracing.from_environment()` is None unless the SDK is installed and the standard variables ask for traces
(`OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER` "otlp" or "console", an OTLP endpoint). OTLP goes over HTTP with
protobuf bodies; another `OTEL_EXPORTER_OTLP_PROTOCOL` turns it off with a warning rather than send protobuf to a
port that does not speak it. The console exporter writes to stderr: in stdio mode stdout is the protocol.

The hub has its own `TracerProvider`, never the global one (which is once-only and process-wide: an embedding
application's spans must not reach our exporter, nor ours theirs), built without the SDK's exit hook (which waits
unbounded on an unreachable collector): `shutdown()` ends it in bounded time. Spans are never made "current": the
hub's requests are interleaved asyncio tasks, and the context they run in is not the request's.

One `RequestSpan` per routed request, following the OpenTelemetry semantic conventions for MCP server spans; its
parent is the W3C trace context in the request's `params._meta` (one HTTP request can carry several MCP messages,
and stdio has no headers), and `child_meta()` names it as the parent for the child. The hub's own attributes are
`hub.child` and `hub.outcome`. Strings from a host are cut to `VALUE_LIMIT` characters. No OpenTelemetry package is
imported until it is used: a hub without the extra, or without the variables, pays nothing at start-up.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import structlog

from hub import __version__

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_log = structlog.get_logger("hub")

SERVICE_NAME = "hub"
SHUTDOWN_SECONDS = 5.0
VALUE_LIMIT = 1024
TRACEPARENT_LIMIT = 512  # the W3C propagator's own limit; longer ones are dropped here, before it logs about them
TRACESTATE_LIMIT = 8192
DEFAULT_TRACES_PATH = "v1/traces"
SUPPORTED_PROTOCOL = "http/protobuf"
# The conventions' attribute for a request's target; a tool's or a prompt's name is in the span's name too (a
# resource URI, high cardinality, is not).
TARGET_ATTRIBUTES = {
    "tools/call": "gen_ai.tool.name",
    "prompts/get": "gen_ai.prompt.name",
    **dict.fromkeys(("resources/read", "resources/subscribe", "resources/unsubscribe"), "mcp.resource.uri"),
}


class Tracing:
    """Starts the hub's request spans on one provider and ends that provider's life (`shutdown`)."""

    def __init__(self, provider: TracerProvider) -> None:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self._provider = provider
        self._tracer = provider.get_tracer("hub", __version__)
        self._propagator = TraceContextTextMapPropagator()
        self._lock = threading.Lock()
        self._closed = False

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Tracing | None:
        """A `Tracing` exporting where the OTEL_* variables say (the module's docstring), or None."""
        env: Mapping[str, str] = os.environ if environ is None else environ
        exporters = _wanted_exporters(env)
        if not exporters:
            return None
        try:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            _log.warning("tracing_unavailable", error=str(exc), hint="install the hub's 'otel' extra")
            return None
        built = [exporter for name in sorted(exporters) if (exporter := _exporter(name, env)) is not None]
        if not built:
            return None
        provider = TracerProvider(resource=_resource(env), shutdown_on_exit=False)
        for exporter in built:
            provider.add_span_processor(BatchSpanProcessor(exporter))
        return cls(provider)

    def start(
        self, method: str, target: str | None, session_id: str | None, host_meta: Mapping[str, Any] | None
    ) -> RequestSpan:
        """The span of one routed request, begun now; the caller ends it."""
        from opentelemetry.trace import SpanKind

        method = _cut(method)
        attributes, named = _request_attributes(method, _cut(target) if target else None, session_id)
        name = f"{method} {named}" if named else method
        span = self._tracer.start_span(
            name, context=self._parent(host_meta), kind=SpanKind.SERVER, attributes=attributes
        )
        return RequestSpan(span, self._propagator)

    def shutdown(self, timeout: float = SHUTDOWN_SECONDS) -> None:
        """Exports what is pending and stops, waiting at most `timeout` seconds; a second call does nothing.

        The work runs in a helper thread joined with the timeout: the batch processor's flush does not itself honour
        a timeout (it exports everything, each export bounded only by the exporter's own timeout and retries)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        worker = threading.Thread(
            target=self._flush_and_stop, args=(timeout,), name="hub-tracing-shutdown", daemon=True
        )
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            _log.warning("tracing_shutdown_timeout", seconds=timeout)

    def _flush_and_stop(self, timeout: float) -> None:
        try:
            self._provider.force_flush(int(timeout * 1000))
            self._provider.shutdown()
        except Exception as exc:  # a broken exporter must not break the hub's own shutdown
            _log.warning("tracing_shutdown_failed", error=repr(exc)[:200])

    def _parent(self, host_meta: Mapping[str, Any] | None) -> Context:
        """The remote parent from the host's W3C trace context; else an empty context (a new trace), never the
        ambient one."""
        from opentelemetry.context import Context

        host_meta = host_meta or {}
        traceparent = host_meta.get("traceparent")
        if not isinstance(traceparent, str) or len(traceparent) > TRACEPARENT_LIMIT:
            return Context()
        carrier = {"traceparent": traceparent}
        tracestate = host_meta.get("tracestate")
        if isinstance(tracestate, str) and len(tracestate) <= TRACESTATE_LIMIT:
            carrier["tracestate"] = tracestate
        try:
            return self._propagator.extract(carrier, context=Context())
        except Exception:  # a malformed header from a host starts a new trace, it does not fail the request
            return Context()


class RequestSpan:
    """One routed request's span: its ids for the call log and the child's `_meta`, its end."""

    __slots__ = ("_ended", "_lock", "_propagator", "_span", "trace_id")

    def __init__(self, span: Span, propagator: TraceContextTextMapPropagator) -> None:
        self._span = span
        self._propagator = propagator
        self._lock = threading.Lock()
        self._ended = False
        self.trace_id: str = format(span.get_span_context().trace_id, "032x")

    def child_meta(self) -> dict[str, str]:
        """`traceparent` (and `tracestate` if any) naming this span as the parent, for the child's `params._meta`."""
        from opentelemetry.trace import set_span_in_context

        carrier: dict[str, str] = {}
        self._propagator.inject(carrier, context=set_span_in_context(self._span))
        return carrier

    def set_child(self, child: str) -> None:
        if not self._ended:
            self._span.set_attribute("hub.child", _cut(child))

    def end(self, outcome: str, error_type: str | None, *, message: str | None = None) -> None:
        """Ends the span with the hub's outcome, and status ERROR described by `message` with `error_type`. Only the
        first call counts."""
        from opentelemetry.trace import Status, StatusCode

        with self._lock:
            if self._ended:
                return
            self._ended = True
        self._span.set_attribute("hub.outcome", _cut(outcome))
        if error_type:
            error_type = _cut(error_type)
            self._span.set_attribute("error.type", error_type)
            if _is_jsonrpc_code(error_type):
                self._span.set_attribute("rpc.response.status_code", error_type)
            self._span.set_status(Status(StatusCode.ERROR, _cut(message) if message else None))
        self._span.end()


def _request_attributes(method: str, target: str | None, session_id: str | None) -> tuple[dict[str, str], str | None]:
    """A request span's attributes at its start, and the target that goes into its name (None: the method alone)."""
    attributes = {"mcp.method.name": method}
    if session_id:
        attributes["mcp.session.id"] = _cut(session_id)
    if method == "tools/call":
        attributes["gen_ai.operation.name"] = "execute_tool"
    if target and method in TARGET_ATTRIBUTES:
        attributes[TARGET_ATTRIBUTES[method]] = target
    return attributes, target if method in ("tools/call", "prompts/get") else None


def _wanted_exporters(env: Mapping[str, str]) -> frozenset[str]:
    """The exporters the variables ask for and the hub can build: "otlp" and/or "console"; empty for none."""
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return frozenset()
    names = {name.strip().lower() for name in (env.get("OTEL_TRACES_EXPORTER") or "otlp").split(",")} - {""}
    if not names or "none" in names:
        return frozenset()
    wanted = set(names & {"console"})
    if "otlp" in names and _otlp_endpoint(env) is not None:
        protocol = (
            env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            or env.get("OTEL_EXPORTER_OTLP_PROTOCOL")
            or SUPPORTED_PROTOCOL
        )
        if protocol.strip().lower() == SUPPORTED_PROTOCOL:
            wanted.add("otlp")
        else:
            _log.warning("tracing_protocol_unsupported", protocol=protocol[:100], supported=SUPPORTED_PROTOCOL)
    if unknown := names - {"otlp", "console"}:
        _log.warning("tracing_exporter_unsupported", exporters=sorted(name[:100] for name in unknown))
    return frozenset(wanted)


def _otlp_endpoint(env: Mapping[str, str]) -> str | None:
    """The traces endpoint as the OTLP exporter's specification resolves it: the signal's variable as given, else the
    base endpoint with "v1/traces" appended."""
    if endpoint := env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip():
        return endpoint
    if base := env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip():
        return f"{base.removesuffix('/')}/{DEFAULT_TRACES_PATH}"
    return None


def _exporter(name: str, env: Mapping[str, str]) -> SpanExporter | None:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        _log.warning("tracing_exporter_unavailable", exporter=name, error=str(exc), hint="install the 'otel' extra")
        return None
    from opentelemetry.util.re import parse_env_headers

    raw = env.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS") or env.get("OTEL_EXPORTER_OTLP_HEADERS") or ""
    return OTLPSpanExporter(endpoint=_otlp_endpoint(env), headers=dict(parse_env_headers(raw, liberal=True)))


def _resource(env: Mapping[str, str]) -> Resource:
    """`Resource.create` (which reads OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME from the process environment),
    with the mapping's OTEL_SERVICE_NAME over it, and "hub" where neither names the service."""
    from opentelemetry.sdk.resources import SERVICE_NAME as SERVICE_NAME_KEY
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource

    attributes: dict[str, str] = {}
    if name := env.get("OTEL_SERVICE_NAME", "").strip():
        attributes[SERVICE_NAME_KEY] = name
    elif SERVICE_NAME_KEY not in OTELResourceDetector().detect().attributes:
        attributes[SERVICE_NAME_KEY] = SERVICE_NAME
    return Resource.create(attributes)


def _is_jsonrpc_code(error_type: str) -> bool:
    digits = error_type.removeprefix("-")
    return digits.isascii() and digits.isdigit()


def _cut(value: str) -> str:
    return value[:VALUE_LIMIT]
