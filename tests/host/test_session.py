"""A host connection as the hub's MCP server side (hub.host.session.HostSession), driven in-process line by line
with a recording stream: the handshake, the era of a connection, what it answers itself, what it refuses and with
which code, what it never answers, and one call through the relay to a child and back."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from hub.access.policy import OPEN
from hub.app import Hub
from hub.config import parse_config
from hub.config.schema import LoadedConfig
from hub.host.session import HostSession
from hub.logs import CallLog
from hub.protocol import extensions, revisions
from hub.protocol.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    encode,
)
from hub.upstream.child import Child, ChildState
from hub.upstream.connection import Connection
from hub.upstream.listing import Listing
from tests.relay.harness import MODERN, WAIT, FakeWire, modern_meta

pytestmark = pytest.mark.anyio

Message = dict[str, Any]


class Stream:
    """Where the session writes: every line in order, each marked as sent before an answer or as the answer."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, Message | None]] = []
        self.raw: list[bytes | None] = []
        self._changed = anyio.Event()

    def send(self, line: bytes) -> None:
        self._record("send", line)

    def end(self, line: bytes | None) -> None:
        self._record("end", line)

    def _record(self, kind: str, line: bytes | None) -> None:
        assert line is None or line.endswith(b"\n"), "one message a line"
        self.lines.append((kind, None if line is None else json.loads(line)))
        self.raw.append(line)
        self._changed.set()
        self._changed = anyio.Event()

    @property
    def messages(self) -> list[Message]:
        return [message for _, message in self.lines if message is not None]

    def last(self) -> Message:
        assert self.lines, "nothing was written"
        message = self.lines[-1][1]
        assert message is not None
        return message

    async def wait_for(self, count: int) -> None:
        with anyio.fail_after(WAIT):
            while len(self.lines) < count:
                await self._changed.wait()


def make_hub(servers: str = "servers: {}\n") -> Hub:
    """A hub that is not running: no watchdog, no children started; only its catalog, router and hosts."""
    path = Path("servers.yaml")
    return Hub(LoadedConfig(path, parse_config(servers, path, {})), call_log=CallLog(io.StringIO()))


def line(message: Message | list[Message]) -> bytes:
    return encode(message)


def request(request_id: Any, method: str, params: Message | None = None) -> bytes:
    message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return line(message)


INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": {"name": "host"}}


def initialized(session: HostSession, stream: Stream) -> None:
    session.receive(request(0, "initialize", INITIALIZE), stream)
    session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', stream)
    assert len(stream.lines) == 1
    stream.lines.clear()
    stream.raw.clear()


def error_of(message: Message) -> tuple[Any, int, str]:
    return message["id"], message["error"]["code"], message["error"]["message"]


# ---- the handshake ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("asked", "answered"), [("2025-03-26", "2025-03-26"), ("1999-01-01", "2025-11-25")])
async def test_initialize_answers_with_the_hosts_version_if_spoken_else_the_latest(asked: str, answered: str) -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    session.receive(request(1, "initialize", {**INITIALIZE, "protocolVersion": asked}), stream)
    assert stream.lines == [
        (
            "end",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {
                    "protocolVersion": answered,
                    "capabilities": revisions.SERVER_CAPABILITIES,
                    "serverInfo": revisions.SERVER_INFO,
                    "instructions": hub.instructions(OPEN),
                },
            },
        )
    ]
    assert hub.instructions(OPEN).startswith("This MCP hub serves the tools of")
    assert (session.era, session.version, session.client_info) == ("handshake", answered, {"name": "host"})
    assert session.declared("roots") and not session.declared("sampling")


async def test_initialized_makes_the_session_one_of_the_hubs_hosts_and_is_not_answered() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    session.receive(request(1, "initialize", INITIALIZE), stream)
    assert hub.hosts.sessions == []
    session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', stream)
    assert hub.hosts.sessions == [session]
    assert len(stream.lines) == 1, "only the initialize was answered"


@pytest.mark.parametrize(
    "params", [{"protocolVersion": "2025-06-18"}, {"capabilities": {}}, {"protocolVersion": 1, "capabilities": {}}]
)
async def test_an_initialize_without_version_or_capabilities_is_invalid_params(params: Message) -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    session.receive(request(1, "initialize", params), stream)
    assert error_of(stream.last())[:2] == (1, INVALID_PARAMS)
    assert session.version is None


async def test_ping_is_answered_even_before_initialize() -> None:
    hub, stream = make_hub(), Stream()
    HostSession(hub, "conn-1", stream).receive(request("p", "ping"), stream)
    assert stream.lines == [("end", {"jsonrpc": "2.0", "id": "p", "result": {}})]


async def test_a_request_before_initialize_is_refused() -> None:
    hub, stream = make_hub(), Stream()
    HostSession(hub, "conn-1", stream).receive(request(1, "tools/list"), stream)
    assert error_of(stream.last()) == (
        1,
        INVALID_REQUEST,
        "the session is not initialized: send initialize first",
    )


@pytest.mark.parametrize("method", ["foo/bar", "server/discover", "tools/\ud800"])
async def test_a_method_the_hub_does_not_serve_is_method_not_found(method: str) -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    initialized(session, stream)
    session.receive(request(2, method, {}), stream)
    assert error_of(stream.last()) == (2, METHOD_NOT_FOUND, f"Method not found: {method!r}")


async def test_a_2026_envelope_on_a_handshake_connection_is_refused() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    initialized(session, stream)
    session.receive(request(2, "tools/list", {"_meta": modern_meta()}), stream)
    request_id, code, message = error_of(stream.last())
    assert (request_id, code) == (2, INVALID_REQUEST)
    assert message.startswith("this connection serves the handshake protocol era")


async def test_a_handshake_connection_lists_the_namespace_with_the_builtin_tool() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    initialized(session, stream)
    session.receive(request(2, "tools/list"), stream)
    result = stream.last()["result"]
    assert [tool["name"] for tool in result["tools"]] == ["hub_health"]
    assert "resultType" not in result
    session.receive(request(3, "tools/list", {"cursor": "page-2"}), stream)
    assert error_of(stream.last())[:2] == (3, INVALID_PARAMS)


async def test_an_unknown_log_level_is_invalid_params() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    initialized(session, stream)
    session.receive(request(2, "logging/setLevel", {"level": "loud"}), stream)
    assert error_of(stream.last())[:2] == (2, INVALID_PARAMS)


# ---- a 2026-07-28 connection --------------------------------------------------------------------------------


async def test_a_first_request_with_the_envelope_makes_a_2026_connection_that_discovers() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    session.receive(request(1, "server/discover", {"_meta": modern_meta()}), stream)
    assert session.era == "modern"
    result = stream.last()["result"]
    assert result["supportedVersions"] == [MODERN]
    assert result["resultType"] == "complete"
    assert result["_meta"] == {revisions.SERVER_INFO_KEY: revisions.SERVER_INFO}
    session.receive(request(2, "tools/list", {"_meta": modern_meta()}), stream)
    listed = stream.last()["result"]
    assert [tool["name"] for tool in listed["tools"]] == ["hub_health"]
    assert listed["resultType"] == "complete"


async def test_a_2026_connection_refuses_initialize_with_the_versions_it_serves() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream, era="modern")
    session.receive(request(1, "initialize", INITIALIZE), stream)
    error = stream.last()["error"]
    assert error["code"] == UNSUPPORTED_PROTOCOL_VERSION
    assert error["data"] == {"supported": [MODERN], "requested": "2025-06-18"}


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({}, INVALID_PARAMS),
        ({"_meta": {revisions.PROTOCOL_VERSION_KEY: MODERN}}, INVALID_PARAMS),
        ({"_meta": modern_meta(**{revisions.PROTOCOL_VERSION_KEY: "2027-01-01"})}, UNSUPPORTED_PROTOCOL_VERSION),
    ],
    ids=["no-envelope", "no-capabilities", "unsupported-version"],
)
async def test_a_2026_request_with_a_bad_envelope_is_refused_with_its_code(params: Message, code: int) -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream, era="modern")
    session.receive(request(1, "tools/list", params), stream)
    assert error_of(stream.last())[:2] == (1, code)


@pytest.mark.parametrize("method", ["ping", "logging/setLevel", "resources/subscribe"])
async def test_methods_the_2026_era_does_not_have_are_method_not_found(method: str) -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream, era="modern")
    session.receive(request(1, method, {"_meta": modern_meta()}), stream)
    assert error_of(stream.last())[:2] == (1, METHOD_NOT_FOUND)


# ---- what cannot be handled ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "request_id", "code"),
    [
        (b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}', 5, INVALID_PARAMS),
        (b'{"jsonrpc":"1.0","id":"six","method":"ping"}', "six", INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":7,"method":42}', 7, INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":8}', 8, INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":"\\ud800","method":"x","params":"p"}', "\ud800", INVALID_PARAMS),
    ],
    ids=["array-params", "wrong-version", "method-not-string", "neither-request-nor-response", "lone-surrogate-id"],
)
async def test_an_invalid_message_with_a_usable_id_is_answered_with_its_code(
    raw: bytes, request_id: Any, code: int
) -> None:
    hub, stream = make_hub(), Stream()
    HostSession(hub, "conn-1", stream).receive(raw, stream)
    assert [(kind, error_of(m)[:2]) for kind, m in stream.lines if m is not None] == [("send", (request_id, code))]


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b"\xff\xfe",
        b"[" * 100_000,
        b'{"jsonrpc":"2.0","id":true,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}',
        b'{"jsonrpc":"2.0","method":"ping"}',
        b'{"jsonrpc":"2.0","method":"notifications/unknown","params":{"x":1}}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]}',
        b'{"jsonrpc":"2.0","id":77,"result":{}}',
    ],
    ids=[
        "not-json",
        "invalid-utf8",
        "too-deep",
        "bool-id",
        "null-id",
        "float-id",
        "ping-without-id",
        "unknown-notification",
        "cancel-of-nothing",
        "notification-array-params",
        "answer-to-nothing",
    ],
)
async def test_what_has_no_usable_id_is_never_answered(raw: bytes) -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    initialized(session, stream)
    session.receive(raw, stream)
    assert stream.lines == []


async def test_a_batch_is_refused_request_by_request() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    batch: list[Message] = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": [1]},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
    ]
    session.receive(line(batch), stream)
    answered = [error_of(m) for m in stream.messages]
    assert [a[:2] for a in answered] == [(1, INVALID_REQUEST), (2, INVALID_PARAMS)]
    assert "batches are not supported" in answered[0][2]
    assert session.version is None and hub.hosts.sessions == [], "nothing in a batch is acted on"


async def test_an_oversized_message_is_answered_when_its_id_can_be_found() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    session.oversized(
        b'{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"a":"xxx', 20_000_000, 16_777_216, stream
    )
    assert error_of(stream.last()) == (
        "big-1",
        INVALID_REQUEST,
        "invalid request: the message is 20000000 bytes, over the hub's limit of 16777216 (max_request_bytes)",
    )
    session.oversized(b'{"params":{"a":"xxx', 20_000_000, 16_777_216, stream)
    assert len(stream.lines) == 1, "no id: nothing to answer"


# ---- a call through the relay -------------------------------------------------------------------------------


@asynccontextmanager
async def hub_with_child(**config: Any) -> AsyncIterator[tuple[Hub, Connection, FakeWire]]:
    """A hub whose router runs, with one ready child "time" (tool `now`) on a fake wire."""
    hub = make_hub("servers:\n  time:\n    command: x\n")
    server = hub.loaded.config.servers["time"].model_copy(update=config)
    child = Child("time", "time", server, hub, hub.watchdog)
    child.listing = Listing(tools=({"name": "now", "inputSchema": {"type": "object"}},))
    wire = FakeWire()
    connection = Connection("time", wire, child)
    connection.protocol_version = "2025-11-25"
    child.shared, child.state = connection, ChildState.READY
    child.settled.set()
    hub.catalog.children = {"time": child}
    hub.catalog.rebuild()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hub.router.run)
        yield hub, connection, wire
        tg.cancel_scope.cancel()


async def test_a_tool_call_goes_from_the_hosts_line_to_the_child_and_back_as_the_childs_bytes() -> None:
    async with hub_with_child() as (hub, connection, wire):
        stream = Stream()
        session = HostSession(hub, "conn-1", stream)
        initialized(session, stream)
        session.receive(request(5, "tools/list"), stream)
        assert [t["name"] for t in stream.last()["result"]["tools"]] == ["hub_health", "time_now"]
        session.receive(request(6, "tools/call", {"name": "time_now", "arguments": {"tz": "UTC"}}), stream)
        assert wire.requests("tools/call")[0]["params"] == {
            "name": "now",
            "arguments": {"tz": "UTC"},
            "_meta": {"progressToken": 1},
        }
        exact = b'{"content": [{"type":"text","text":"12:00"}]}'
        connection.receive(b'{"jsonrpc":"2.0","id":1,"result":' + exact + b"}")
        assert stream.lines[-1][0] == "end"
        assert stream.raw[-1] == b'{"jsonrpc":"2.0","id":6,"result":' + exact + b"}\n"


async def test_the_hosts_cancel_reaches_the_child_and_ends_the_stream_without_an_answer() -> None:
    async with hub_with_child() as (hub, _, wire):
        stream = Stream()
        session = HostSession(hub, "conn-1", stream)
        initialized(session, stream)
        session.receive(request("c", "tools/call", {"name": "time_now", "arguments": {}}), stream)
        cancel = {"requestId": "c", "reason": "user"}
        session.receive(line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}), stream)
        assert stream.lines == [("end", None)]
        assert wire.notifications("notifications/cancelled")[0]["params"] == {"requestId": 1, "reason": "user"}


async def test_a_request_to_the_host_is_sent_on_the_stream_and_answered_by_its_response() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    initialized(session, stream)
    results: list[Message] = []

    async def ask() -> None:
        results.append(await session.ask_on(stream, "roots/list", {}, WAIT))

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await stream.wait_for(1)
        asked = stream.last()
        assert (stream.lines[0][0], asked["method"], asked["params"]) == ("send", "roots/list", {})
        session.receive(line({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": []}}), stream)
    assert results == [{"roots": []}]


# ---- extensions (decision 016) ------------------------------------------------------------------------------


async def test_a_host_is_told_the_relayable_extensions_its_children_declared_and_all_while_they_start() -> None:
    async with hub_with_child() as (hub, connection, _):
        child = hub.children["time"]
        child.settled = anyio.Event()  # still starting: what it will declare is not known yet
        starting = Stream()
        HostSession(hub, "conn-1", starting).receive(request(1, "initialize", INITIALIZE), starting)
        assert starting.last()["result"]["capabilities"]["extensions"] == {extensions.UI: {}}
        child.settled.set()
        assert "extensions" not in json.dumps(_initialize_result(hub))  # the child declared none
        connection.capabilities = {"tools": {}, "extensions": {extensions.UI: {"v": 1}, "com.example/x": {}}}
        assert _initialize_result(hub)["capabilities"]["extensions"] == {extensions.UI: {"v": 1}}
        modern = Stream()
        HostSession(hub, "http-1", modern).receive(request(2, "server/discover", {"_meta": modern_meta()}), modern)
        assert modern.last()["result"]["capabilities"]["extensions"] == {extensions.UI: {"v": 1}}


def _initialize_result(hub: Hub) -> Message:
    stream = Stream()
    HostSession(hub, "conn-2", stream).receive(request(1, "initialize", INITIALIZE), stream)
    result: Message = stream.last()["result"]
    return result


async def test_a_method_of_an_extension_is_refused_naming_the_extension() -> None:
    hub, stream = make_hub(), Stream()
    session = HostSession(hub, "conn-1", stream)
    initialized(session, stream)
    session.receive(request(2, "ui/open-link", {}), stream)
    request_id, code, message = error_of(stream.last())
    assert (request_id, code) == (2, METHOD_NOT_FOUND)
    assert extensions.UI in message and "never reaches a server" in message
