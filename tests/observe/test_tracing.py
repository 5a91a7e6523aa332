"""The hub's OpenTelemetry traces (hub.observe.tracing): request spans named and attributed per the MCP semantic
conventions, the host's W3C trace context from params._meta as parent, the child's context, ends, the choice made
from the OTEL_* variables, and one real export over OTLP/HTTP to a loopback receiver."""

from __future__ import annotations

import gzip
import importlib
import logging
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, StatusCode, TraceFlags

import hub.observe
from hub.observe.tracing import VALUE_LIMIT, RequestSpan, Tracing

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
TRACESTATE = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def tracing(exporter: InMemorySpanExporter) -> Iterator[Tracing]:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing = Tracing(provider)
    yield tracing
    tracing.shutdown()


def only(exporter: InMemorySpanExporter) -> ReadableSpan:
    spans = exporter.get_finished_spans()
    assert len(spans) == 1
    return spans[0]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parse_traceparent(value: str) -> tuple[str, str, str, str]:
    version, trace_id, parent_id, flags = value.split("-")
    return version, trace_id, parent_id, flags


# ---- names and attributes -------------------------------------------------------------------------------------


def test_tools_call_is_named_by_the_tool_and_carries_the_genai_attributes(
    tracing: Tracing, exporter: InMemorySpanExporter
) -> None:
    request = tracing.start("tools/call", "get-weather", "s-1", None)
    request.set_child("weather")
    request.end("ok", None)

    span = only(exporter)
    assert span.name == "tools/call get-weather"
    assert span.kind is SpanKind.SERVER
    assert attributes(span) == {
        "mcp.method.name": "tools/call",
        "mcp.session.id": "s-1",
        "gen_ai.tool.name": "get-weather",
        "gen_ai.operation.name": "execute_tool",
        "hub.child": "weather",
        "hub.outcome": "ok",
    }
    assert span.status.status_code is StatusCode.UNSET


def test_resources_read_keeps_the_uri_out_of_the_name(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    tracing.start("resources/read", "file:///srv/report.pdf", "s-1", None).end("ok", None)

    span = only(exporter)
    assert span.name == "resources/read"
    assert attributes(span) == {
        "mcp.method.name": "resources/read",
        "mcp.session.id": "s-1",
        "mcp.resource.uri": "file:///srv/report.pdf",
        "hub.outcome": "ok",
    }


def test_prompts_get_is_named_by_the_prompt(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    tracing.start("prompts/get", "analyze-code", None, None).end("ok", None)

    span = only(exporter)
    assert span.name == "prompts/get analyze-code"
    assert attributes(span) == {
        "mcp.method.name": "prompts/get",
        "gen_ai.prompt.name": "analyze-code",
        "hub.outcome": "ok",
    }


def test_a_listing_is_named_by_its_method_alone(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    tracing.start("tools/list", None, None, None).end("ok", None)

    span = only(exporter)
    assert span.name == "tools/list"
    assert span.kind is SpanKind.SERVER
    assert attributes(span) == {"mcp.method.name": "tools/list", "hub.outcome": "ok"}


def test_a_target_is_named_only_where_the_conventions_say(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    tracing.start("completion/complete", "something", None, None).end("ok", None)

    span = only(exporter)
    assert span.name == "completion/complete"
    assert "gen_ai.operation.name" not in attributes(span)


def test_host_strings_are_cut(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    tracing.start("tools/call", "t" * (VALUE_LIMIT * 3), "s" * (VALUE_LIMIT * 3), None).end("ok", None)

    span = only(exporter)
    assert attributes(span)["gen_ai.tool.name"] == "t" * VALUE_LIMIT
    assert attributes(span)["mcp.session.id"] == "s" * VALUE_LIMIT
    assert span.name == "tools/call " + "t" * VALUE_LIMIT


# ---- parents ----------------------------------------------------------------------------------------------------


def test_a_valid_traceparent_is_the_parent(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    request = tracing.start("tools/call", "get-weather", None, {"traceparent": TRACEPARENT, "tracestate": TRACESTATE})
    request.end("ok", None)

    span = only(exporter)
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert request.trace_id == TRACE_ID
    assert span.parent is not None
    assert span.parent.is_remote
    assert format(span.parent.span_id, "016x") == PARENT_ID
    assert span.context.trace_state.to_header() == TRACESTATE


@pytest.mark.parametrize(
    "meta",
    [
        None,
        {},
        {"progressToken": 3},
        {"traceparent": "00-zzz"},
        {"traceparent": f"00-{TRACE_ID[:20]}-{PARENT_ID}-01"},  # too short
        {"traceparent": f"00-{'0' * 32}-{PARENT_ID}-01"},  # all-zero trace id
        {"traceparent": f"00-{TRACE_ID}-{'0' * 16}-01"},  # all-zero span id
        {"traceparent": f"ff-{TRACE_ID}-{PARENT_ID}-01"},  # forbidden version
        {"traceparent": 42},
        {"traceparent": ["00", TRACE_ID]},
        {"traceparent": TRACEPARENT + "-" + "x" * 100_000},
        {"traceparent": "", "tracestate": TRACESTATE},
    ],
)
def test_no_valid_traceparent_starts_a_new_trace(
    tracing: Tracing, exporter: InMemorySpanExporter, meta: dict[str, Any] | None
) -> None:
    request = tracing.start("tools/list", None, None, meta)
    request.end("ok", None)

    span = only(exporter)
    assert span.parent is None
    assert span.context.is_valid
    assert request.trace_id == format(span.context.trace_id, "032x")
    assert len(request.trace_id) == 32
    assert request.trace_id != TRACE_ID


def test_a_bad_tracestate_keeps_the_parent(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    tracing.start("tools/list", None, None, {"traceparent": TRACEPARENT, "tracestate": 7}).end("ok", None)
    tracing.start("tools/list", None, None, {"traceparent": TRACEPARENT, "tracestate": "=" * 10_000}).end("ok", None)

    for span in exporter.get_finished_spans():
        assert format(span.context.trace_id, "032x") == TRACE_ID
        assert not span.context.trace_state


def test_the_ambient_context_is_not_a_parent(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    ambient = SpanContext(int(TRACE_ID, 16), int(PARENT_ID, 16), is_remote=False, trace_flags=TraceFlags(1))
    token = otel_context.attach(trace.set_span_in_context(NonRecordingSpan(ambient)))
    try:
        tracing.start("tools/list", None, None, None).end("ok", None)
    finally:
        otel_context.detach(token)

    span = only(exporter)
    assert span.parent is None
    assert format(span.context.trace_id, "032x") != TRACE_ID


def test_an_unsampled_parent_is_followed(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    request = tracing.start("tools/list", None, None, {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-00"})
    request.end("ok", None)

    assert exporter.get_finished_spans() == ()
    assert request.trace_id == TRACE_ID
    assert parse_traceparent(request.child_meta()["traceparent"])[3] == "00"


# ---- the child's context -------------------------------------------------------------------------------------------


def test_child_meta_names_this_span_as_parent(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    request = tracing.start("tools/call", "get-weather", None, {"traceparent": TRACEPARENT, "tracestate": TRACESTATE})
    meta = request.child_meta()
    request.end("ok", None)

    span = only(exporter)
    version, trace_id, parent_id, flags = parse_traceparent(meta["traceparent"])
    assert (version, trace_id, flags) == ("00", TRACE_ID, "01")
    assert parent_id == format(span.context.span_id, "016x")
    assert parent_id != PARENT_ID
    assert meta["tracestate"] == TRACESTATE
    assert set(meta) == {"traceparent", "tracestate"}


def test_child_meta_of_a_new_trace_has_no_tracestate(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    request = tracing.start("tools/list", None, None, None)
    meta = request.child_meta()
    request.end("ok", None)

    span = only(exporter)
    assert set(meta) == {"traceparent"}
    _, trace_id, parent_id, _ = parse_traceparent(meta["traceparent"])
    assert trace_id == request.trace_id == format(span.context.trace_id, "032x")
    assert parent_id == format(span.context.span_id, "016x")


# ---- ends --------------------------------------------------------------------------------------------------------


def test_an_error_sets_error_type_and_status(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    tracing.start("tools/call", "get-weather", None, None).end("error", "-32602", message="Invalid params")

    span = only(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "Invalid params"
    assert attributes(span)["error.type"] == "-32602"
    assert attributes(span)["rpc.response.status_code"] == "-32602"
    assert attributes(span)["hub.outcome"] == "error"


def test_a_tool_error_is_not_a_status_code(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    tracing.start("tools/call", "get-weather", None, None).end("tool_error", "tool_error")

    span = only(exporter)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description is None
    assert attributes(span)["error.type"] == "tool_error"
    assert "rpc.response.status_code" not in attributes(span)


def test_ending_twice_is_harmless(
    tracing: Tracing, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    request = tracing.start("tools/call", "get-weather", None, None)
    with caplog.at_level(logging.DEBUG):
        request.end("ok", None)
        request.end("error", "timeout")
        request.set_child("late")

    span = only(exporter)
    assert attributes(span)["hub.outcome"] == "ok"
    assert "error.type" not in attributes(span)
    assert "hub.child" not in attributes(span)
    assert span.status.status_code is StatusCode.UNSET
    assert not [record for record in caplog.records if record.name.startswith("opentelemetry")]


def test_ends_racing_in_threads_end_once(tracing: Tracing, exporter: InMemorySpanExporter) -> None:
    request = tracing.start("tools/list", None, None, None)
    threads = [threading.Thread(target=request.end, args=(f"t{n}", None)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(exporter.get_finished_spans()) == 1


def test_request_span_is_the_type_start_returns(tracing: Tracing) -> None:
    request = tracing.start("ping", None, None, None)
    assert isinstance(request, RequestSpan)
    request.end("ok", None)


# ---- from_environment ---------------------------------------------------------------------------------------------


def test_no_variables_no_tracing() -> None:
    assert Tracing.from_environment({}) is None


@pytest.mark.parametrize(
    "environ",
    [
        {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        {"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "console"},
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        {"OTEL_TRACES_EXPORTER": "otlp"},  # no endpoint: not asked for
        {"OTEL_SERVICE_NAME": "hub", "OTEL_RESOURCE_ATTRIBUTES": "a=b"},
        {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        {"OTEL_TRACES_EXPORTER": "zipkin", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
    ],
)
def test_variables_that_do_not_ask_for_traces(environ: dict[str, str]) -> None:
    assert Tracing.from_environment(environ) is None


@pytest.mark.parametrize(
    "environ",
    [
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"},
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:9/v1/traces"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "false"},
        {"OTEL_TRACES_EXPORTER": "console"},
    ],
)
def test_variables_that_ask_for_traces(environ: dict[str, str]) -> None:
    before = trace.get_tracer_provider()
    tracing = Tracing.from_environment(environ)
    assert isinstance(tracing, Tracing)
    tracing.shutdown()
    tracing.shutdown()  # a second shutdown does nothing
    assert trace.get_tracer_provider() is before  # never the global provider


def test_console_traces_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    tracing = Tracing.from_environment({"OTEL_TRACES_EXPORTER": "console"})
    assert tracing is not None
    tracing.start("tools/call", "get-weather", None, None).end("ok", None)
    tracing.shutdown()

    out, err = capsys.readouterr()
    assert out == ""
    assert "tools/call get-weather" in err


def test_without_the_sdk_there_is_no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    assert Tracing.from_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}) is None


def test_importing_the_module_imports_no_opentelemetry(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [name for name in sys.modules if name == "opentelemetry" or name.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delitem(sys.modules, "hub.observe.tracing")
    monkeypatch.delattr(hub.observe, "tracing", raising=False)

    importlib.import_module("hub.observe.tracing")

    assert not [name for name in sys.modules if name == "opentelemetry" or name.startswith("opentelemetry.")]


# ---- a real export over OTLP/HTTP --------------------------------------------------------------------------------


class Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP traces endpoint: keeps each POST's path, headers and (decompressed) body."""

    received: list[tuple[str, dict[str, str], bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        encoding = self.headers.get("Content-Encoding", "")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "deflate":
            body = zlib.decompress(body)
        self.received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[int, list[tuple[str, dict[str, str], bytes]]]]:
    received: list[tuple[str, dict[str, str], bytes]] = []
    handler = type("BoundReceiver", (Receiver,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_spans_arrive_over_otlp_http(
    receiver: tuple[int, list[tuple[str, dict[str, str], bytes]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, received = receiver
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    tracing = Tracing.from_environment(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
            "OTEL_EXPORTER_OTLP_HEADERS": "x-hub-test=yes",
            "OTEL_SERVICE_NAME": "hub-under-test",
        }
    )
    assert tracing is not None
    request = tracing.start("tools/call", "get-weather", "s-9", {"traceparent": TRACEPARENT})
    request.set_child("weather")
    request.end("error", "-32603", message="Internal error")
    tracing.shutdown()

    assert [path for path, _, _ in received] == ["/v1/traces"]
    _, headers, body = received[0]
    assert headers["content-type"] == "application/x-protobuf"
    assert headers["x-hub-test"] == "yes"
    export = ExportTraceServiceRequest.FromString(body)
    [resource_spans] = export.resource_spans
    resource = {kv.key: kv.value.string_value for kv in resource_spans.resource.attributes}
    assert resource["service.name"] == "hub-under-test"
    [scope_spans] = resource_spans.scope_spans
    assert scope_spans.scope.name == "hub"
    [span] = scope_spans.spans
    assert span.name == "tools/call get-weather"
    assert span.kind == ProtoSpan.SPAN_KIND_SERVER
    assert span.trace_id.hex() == TRACE_ID == request.trace_id
    assert span.parent_span_id.hex() == PARENT_ID
    assert span.status.code == 2  # STATUS_CODE_ERROR
    attrs = {kv.key: kv.value.string_value for kv in span.attributes}
    assert attrs["gen_ai.tool.name"] == "get-weather"
    assert attrs["mcp.session.id"] == "s-9"
    assert attrs["hub.child"] == "weather"
    assert attrs["error.type"] == "-32603"


def test_shutdown_is_bounded_when_the_collector_hangs() -> None:
    release = threading.Event()

    class Hanging(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            release.wait(30)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hanging)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        tracing = Tracing.from_environment(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}"}
        )
        assert tracing is not None
        tracing.start("tools/list", None, None, None).end("ok", None)
        began = time.monotonic()
        tracing.shutdown(timeout=0.5)
        assert time.monotonic() - began < 3
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
