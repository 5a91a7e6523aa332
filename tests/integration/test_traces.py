"""One trace from host to hub to child: the hub's span is parented on the host's `params._meta.traceparent`, sent
over real OTLP/HTTP (decoded here from its protobuf), and the child gets a traceparent whose parent is that span."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.integration.test_calls import wait_recorded
from tests.support.children import python_child, write_config
from tests.support.logs import log_events
from tests.support.mcp_client import initialize_request
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = pytest.mark.anyio

HOST_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
HOST_SPAN = "00f067aa0ba902b7"


class Collector:
    """An OpenTelemetry collector's OTLP/HTTP traces endpoint, on loopback."""

    def __init__(self) -> None:
        self.spans: list[Any] = []
        self.arrived = threading.Event()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        collector.spans.extend(scope.spans)
                collector.arrived.set()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def span_named(self, name: str) -> Any:
        return next((s for s in self.spans if s.name == name), None)


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    found = Collector()
    thread = threading.Thread(target=found.server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", found.url)  # the hub inherits the test's environment
    monkeypatch.setenv("OTEL_SERVICE_NAME", "hub-under-test")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    yield found
    found.server.shutdown()
    found.server.server_close()


async def test_a_call_is_one_trace_from_host_through_hub_to_child(tmp_path: Path, collector: Collector) -> None:
    record = tmp_path / "record.jsonl"
    config = write_config(tmp_path, {"rec": python_child("tests.children.recorder", str(record))})
    log = tmp_path / "hub.log"
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "rec_echo",
            "arguments": {"text": "traced"},
            "_meta": {"traceparent": f"00-{HOST_TRACE}-{HOST_SPAN}-01"},
        },
    }
    async with serve_hub_http(config, log) as url, httpx2.AsyncClient(timeout=WAIT) as http:
        opened = await http.post(url, json=initialize_request(), headers=headers)
        session = {**headers, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        answered = await http.post(url, json=call, headers=session)
        assert "traced" in answered.text
        (received,) = await wait_recorded(record, "tools/call")
        with anyio.fail_after(WAIT):
            while collector.span_named("tools/call rec_echo") is None:
                await anyio.to_thread.run_sync(collector.arrived.wait, WAIT)
                collector.arrived.clear()
    span = collector.span_named("tools/call rec_echo")
    assert span.trace_id.hex() == HOST_TRACE and span.parent_span_id.hex() == HOST_SPAN
    attributes = {a.key: a.value.string_value for a in span.attributes}
    assert attributes["mcp.method.name"] == "tools/call" and attributes["gen_ai.tool.name"] == "rec_echo"
    assert attributes["mcp.session.id"] == opened.headers["mcp-session-id"]
    child_parent = received["params"]["_meta"]["traceparent"].split("-")
    assert child_parent[1] == HOST_TRACE and child_parent[2] == span.span_id.hex(), (
        "the child's parent is the hub's span"
    )
    (line,) = (e for e in log_events(log, "call") if e["name"] == "rec_echo")
    assert line["trace_id"] == HOST_TRACE
    assert json.dumps(line).count(HOST_TRACE) == 1
