"""The hub's own JSON-RPC session with a child (hub.upstream.connection), over a fake wire: ids and envelopes of
what it sends, where each line the child writes goes, the handshake of each era, and the end of the wire."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from hub.protocol import errors, extensions, revisions
from hub.protocol.jsonrpc import Notification, Request, Response, encode
from hub.upstream.connection import Connection
from tests.relay.harness import HANDSHAKE, MODERN, WAIT, FakeWire

pytestmark = pytest.mark.anyio


class Exchange:
    def __init__(self) -> None:
        self.answers: list[Response] = []
        self.progress_seen: list[dict[str, Any]] = []
        self.failures: list[errors.HubError] = []

    def answered(self, response: Response) -> None:
        self.answers.append(response)

    def progress(self, params: dict[str, Any]) -> None:
        self.progress_seen.append(params)

    def failed(self, error: errors.HubError) -> None:
        self.failures.append(error)


class Events:
    def __init__(self) -> None:
        self.notifications: list[Notification] = []
        self.requests: list[Request] = []
        self.required: list[Any] = []

    def notified(self, connection: Connection, notification: Notification) -> None:
        self.notifications.append(notification)

    def asked(self, connection: Connection, request: Request) -> None:
        self.requests.append(request)

    def elicitations_required(self, connection: Connection, exchange: Any, data: Any) -> None:
        self.required.append(data)


def connect(version: str | None = HANDSHAKE) -> tuple[Connection, FakeWire, Events]:
    wire, events = FakeWire(), Events()
    connection = Connection("time", wire, events)
    connection.protocol_version = version
    return connection, wire, events


def line(message: dict[str, Any]) -> bytes:
    return encode(message)


# ---- sending ----------------------------------------------------------------------------------------------------


async def test_requests_get_ids_of_the_connection_and_progress_asks_with_the_same_id() -> None:
    connection, wire, _ = connect()
    assert connection.send("tools/call", {"name": "now"}, Exchange(), progress=True) == 1
    assert connection.send("tools/list", {}, Exchange()) == 2
    assert wire.sent == [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "now", "_meta": {"progressToken": 1}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
    ]


async def test_a_request_to_a_2026_child_carries_the_envelope_and_keeps_the_callers_meta() -> None:
    connection, wire, _ = connect(MODERN)
    connection.send("tools/call", {"name": "now", "_meta": {"com.example/x": 1}}, Exchange(), log_level="debug")
    assert wire.sent[0]["params"]["_meta"] == {
        "com.example/x": 1,
        revisions.PROTOCOL_VERSION_KEY: MODERN,
        revisions.CLIENT_INFO_KEY: revisions.CLIENT_INFO,
        revisions.CLIENT_CAPABILITIES_KEY: extensions.client_capabilities(None),
        revisions.LOG_LEVEL_KEY: "debug",
    }


async def test_sending_on_an_ended_connection_fails_with_the_reason_it_ended() -> None:
    connection, wire, _ = connect()
    connection.ended("exited with code 1")
    with pytest.raises(errors.Unavailable) as caught:
        connection.send("tools/list", {}, Exchange())
    assert caught.value.message == "exited with code 1"
    connection.notify("notifications/roots/list_changed")
    connection.respond(3, {})
    assert wire.sent == [], "notifications and answers after the end are dropped"


async def test_a_request_the_wire_cannot_take_fails_that_request_only() -> None:
    connection, wire, _ = connect()
    wire.broken = "the pipe is closed"
    exchange = Exchange()
    with pytest.raises(errors.Unavailable) as caught:
        connection.send("tools/list", {}, exchange)
    assert caught.value.message == "server 'time': cannot send the request: the pipe is closed"
    connection.notify("notifications/initialized")  # logged, not raised
    wire.broken = None
    connection.ended("later")
    assert exchange.failures == [], "the failed request was never pending"


async def test_a_lone_surrogate_anywhere_refuses_the_request_naming_the_field_and_writes_nothing() -> None:
    connection, wire, _ = connect()
    exchange = Exchange()
    with pytest.raises(errors.BadRequest) as caught:
        connection.send("tools/call", {"name": "now", "arguments": {"timezone": "\udfff"}}, exchange)
    assert caught.value.code == -32602
    assert caught.value.data == {"field": "params.arguments.timezone"}
    assert "params.arguments.timezone" in caught.value.message and "'time'" in caught.value.message
    connection.ended("later")
    assert wire.sent == [] and exchange.failures == [], "nothing written, nothing pending"


async def test_an_unwritable_answer_or_notification_never_reaches_the_child() -> None:
    connection, wire, _ = connect()
    connection.notify("notifications/cancelled", {"requestId": 1, "reason": "\ud800"})
    connection.respond(7, {"action": "accept", "content": {"name": "\ud800"}})
    assert wire.sent == [
        {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32603,
                "message": "the host's answer cannot be relayed: result.content.name holds a lone surrogate, "
                "which is not Unicode text and cannot be written as UTF-8",
            },
        }
    ], "the child's request is answered with an error, the notification is dropped"


async def test_a_url_elicitation_required_answer_is_reported_before_it_answers_its_request() -> None:
    connection, _, events = connect()
    exchange = Exchange()
    connection.send("tools/call", {"name": "now"}, exchange)
    data = {"elicitations": [{"mode": "url", "elicitationId": "e-1", "url": "https://a.example", "message": "m"}]}
    connection.receive(line({"jsonrpc": "2.0", "id": 1, "error": {"code": -32042, "message": "m", "data": data}}))
    assert events.required == [data]
    assert [answer.error for answer in exchange.answers] == [{"code": -32042, "message": "m", "data": data}]


async def test_a_cancel_whose_reason_holds_a_lone_surrogate_still_reaches_the_child() -> None:
    connection, wire, _ = connect()
    connection.send("tools/call", {"name": "now"}, Exchange())
    connection.cancel(1, "user left \ud83d")
    assert wire.notifications("notifications/cancelled") == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "user left ?"}}
    ]


async def test_cancel_tells_the_child_once_and_drops_a_late_answer() -> None:
    connection, wire, _ = connect()
    exchange = Exchange()
    connection.send("tools/call", {}, exchange)
    connection.cancel(1, "timeout")
    connection.cancel(1, "again")
    assert wire.notifications() == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "timeout"}}
    ]
    connection.receive(line({"jsonrpc": "2.0", "id": 1, "result": {}}))
    assert exchange.answers == []


async def test_forget_stops_waiting_without_telling_the_child() -> None:
    connection, wire, _ = connect()
    exchange = Exchange()
    connection.send("tools/call", {}, exchange)
    connection.forget(1)
    connection.receive(line({"jsonrpc": "2.0", "id": 1, "result": {}}))
    assert exchange.answers == []
    assert wire.notifications() == []


# ---- receiving --------------------------------------------------------------------------------------------------


async def test_an_answer_goes_to_the_exchange_that_sent_the_request_once() -> None:
    connection, _, _ = connect()
    first, second = Exchange(), Exchange()
    connection.send("a", {}, first)
    connection.send("b", {}, second)
    connection.receive(b'{"jsonrpc":"2.0","id":2,"result":{"x":1}}')
    connection.receive(b'{"jsonrpc":"2.0","id":2,"result":{"x":2}}')
    connection.receive(b'{"jsonrpc":"2.0","id":"2","result":{"x":3}}')
    assert first.answers == []
    assert [(r.id, r.result, r.exact) for r in second.answers] == [(2, {"x": 1}, b'{"x":1}')]


async def test_a_batch_of_answers_is_handled_item_by_item() -> None:
    connection, _, _ = connect()
    first, second = Exchange(), Exchange()
    connection.send("a", {}, first)
    connection.send("b", {}, second)
    connection.receive(
        b'[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}]'
    )
    assert [r.result for r in first.answers] == [{}]
    assert [r.error for r in second.answers] == [{"code": 1, "message": "m"}]


async def test_progress_finds_its_request_by_token_and_nothing_else() -> None:
    connection, _, events = connect()
    exchange = Exchange()
    connection.send("tools/call", {}, exchange, progress=True)
    for token in (1, "1", 2, None):
        params = {"progressToken": token, "progress": 0.5}
        connection.receive(line({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))
    assert exchange.progress_seen == [{"progressToken": 1, "progress": 0.5}]
    assert events.notifications == [], "progress is never an event of the child"


async def test_notifications_and_the_childs_own_requests_go_to_its_events_and_ping_is_answered() -> None:
    connection, wire, events = connect()
    connection.receive(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}')
    connection.receive(b'{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"maxTokens":1}}')
    connection.receive(b'{"jsonrpc":"2.0","id":4,"method":"ping"}')
    assert [n.method for n in events.notifications] == ["notifications/tools/list_changed"]
    assert [(r.id, r.method, r.params) for r in events.requests] == [("s1", "sampling/createMessage", {"maxTokens": 1})]
    assert wire.answers() == [{"jsonrpc": "2.0", "id": 4, "result": {}}]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":[1]}', "it needs exactly one of an object 'result' or 'error'"),
        (b'{"jsonrpc":"2.0","id":1}', "it needs exactly one of an object 'result' or 'error'"),
        (b'{"jsonrpc":"1.0","id":1,"result":{}}', '"jsonrpc" must be "2.0"'),
    ],
)
async def test_a_malformed_answer_fails_its_request_saying_what_was_wrong(answer: bytes, reason: str) -> None:
    connection, _, _ = connect()
    exchange = Exchange()
    connection.send("tools/call", {}, exchange)
    connection.receive(answer)
    (failure,) = exchange.failures
    assert isinstance(failure, errors.Unavailable)
    assert failure.message.startswith("server 'time' sent an invalid answer: ")
    assert reason in failure.message


@pytest.mark.parametrize(
    "noise",
    [b"Starting server...", b"\xff\xfe", b"[]", b'{"jsonrpc":"2.0","id":true,"result":{}}', b"[" * 10000],
)
async def test_a_line_that_is_not_json_rpc_is_skipped_and_fails_nothing(noise: bytes) -> None:
    connection, _, events = connect()
    exchange = Exchange()
    connection.send("tools/call", {}, exchange)
    connection.receive(noise)
    assert (exchange.answers, exchange.failures, events.notifications, events.requests) == ([], [], [], [])
    connection.receive(b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert len(exchange.answers) == 1, "the connection goes on"


@pytest.mark.parametrize(
    ("head", "tail", "fails"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":{"a":"', b'"}}', True),
        (b'{"result":{"a":"', b'"},"jsonrpc":"2.0","id":1}', True),
        (b'{"jsonrpc":"2.0","id":2,"result":{"a":"', b'"}}', False),  # answers nothing pending
        (b"xxxxxxxx", b"xxxxxxxx", False),  # no id at either end
    ],
)
async def test_an_oversized_line_fails_the_request_it_answers(head: bytes, tail: bytes, fails: bool) -> None:
    connection, _, _ = connect()
    exchange = Exchange()
    connection.send("tools/call", {}, exchange)
    connection.oversized(head, tail, 5000, 1024)
    if fails:
        (failure,) = exchange.failures
        assert isinstance(failure, errors.TooLarge)
        assert failure.data == {"reason": "result_too_large", "bytes": 5000}
        assert "raise max_result_bytes in servers.yaml or ask for less" in failure.message
    else:
        assert exchange.failures == []


async def test_the_end_of_the_wire_fails_every_request_in_flight_with_its_reason_once() -> None:
    connection, _, _ = connect()
    exchanges = [Exchange(), Exchange()]
    for exchange in exchanges:
        connection.send("tools/call", {}, exchange)
    connection.ended("exited with code 3")
    connection.ended("another reason")
    assert [[f.message for f in e.failures] for e in exchanges] == [["exited with code 3"]] * 2
    assert connection.closed == "exited with code 3"
    assert connection.done.is_set()


# ---- the hub's own requests and the handshake --------------------------------------------------------------


async def answer_next(
    wire: FakeWire,
    connection: Connection,
    method: str,
    result: dict[str, Any] | None,
    error: dict[str, Any] | None = None,
) -> None:
    """Wait for the hub's `method` request, then answer it with `result` (or `error`)."""
    await wire.wait_for(lambda: any(m.get("method") == method for m in wire.requests()))
    request_id = next(m["id"] for m in wire.requests(method))
    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
    answer.update({"error": error} if error else {"result": result})
    connection.receive(encode(answer))


NOT_FOUND = {"code": -32601, "message": "Method not found"}


async def test_request_waits_for_the_answer_and_raises_the_childs_error_naming_it() -> None:
    connection, wire, _ = connect()
    results: list[dict[str, Any]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _collect(connection.request("tools/list", {}, WAIT), results))
        await answer_next(wire, connection, "tools/list", {"tools": []})
    assert results == [{"tools": []}]
    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_next, wire, connection, "prompts/list", None, NOT_FOUND)
        with pytest.raises(errors.ChildError) as caught:
            await connection.request("prompts/list", {}, WAIT)
    assert (caught.value.code, caught.value.message) == (-32601, "time: Method not found")


async def _collect(awaitable: Any, into: list[dict[str, Any]]) -> None:
    into.append(await awaitable)


async def test_a_request_not_answered_in_time_is_cancelled_at_the_child() -> None:
    connection, wire, _ = connect()
    with pytest.raises(TimeoutError):
        await connection.request("tools/list", {}, 0.01)
    assert wire.notifications("notifications/cancelled") == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 1, "reason": "the hub stopped waiting"},
        }
    ]


INITIALIZED = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {"listChanged": True}},
    "serverInfo": {"name": "time-server", "version": "1"},
    "instructions": "Ask for the time.",
}


async def test_a_legacy_handshake_initializes_and_records_what_the_child_said() -> None:
    connection, wire, _ = connect(None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_next, wire, connection, "initialize", INITIALIZED)
        with anyio.fail_after(WAIT):
            await connection.handshake("legacy", WAIT)
    initialize = wire.requests("initialize")[0]["params"]
    assert initialize == {
        "protocolVersion": revisions.LATEST_HANDSHAKE,
        "capabilities": extensions.client_capabilities(None),  # the shared connection's
        "clientInfo": revisions.CLIENT_INFO,
    }
    assert wire.sent[-1] == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (connection.protocol_version, connection.modern) == ("2025-06-18", False)
    assert connection.capabilities == {"tools": {"listChanged": True}}
    assert connection.server_info == {"name": "time-server", "version": "1"}
    assert connection.instructions == "Ask for the time."
    assert wire.negotiations == ["2025-06-18"]
    assert wire.requests("server/discover") == []


async def test_a_legacy_handshake_refuses_a_version_the_hub_does_not_speak() -> None:
    connection, wire, _ = connect(None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_next, wire, connection, "initialize", {**INITIALIZED, "protocolVersion": "1999-01-01"})
        with pytest.raises(RuntimeError, match='protocol version "1999-01-01", which the hub does not speak'):
            await connection.handshake("legacy", WAIT)


async def test_auto_speaks_2026_to_a_child_that_discovers_it() -> None:
    connection, wire, _ = connect(None)
    discovered = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, "serverInfo": {"name": "new"}}
    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_next, wire, connection, "server/discover", discovered)
        await connection.handshake("auto", WAIT)
    assert (connection.protocol_version, connection.modern) == (MODERN, True)
    assert wire.requests("initialize") == []
    assert wire.requests("server/discover")[0]["params"]["_meta"][revisions.PROTOCOL_VERSION_KEY] == MODERN
    assert wire.negotiations == [MODERN]


HOST_UI = {"roots": {}, "extensions": {extensions.UI: {"mimeTypes": ["text/html;profile=mcp-app"]}, "x.y/z": {}}}


async def test_a_connection_of_a_hosts_own_declares_that_hosts_relayable_extensions_in_either_era() -> None:
    declared = extensions.client_capabilities(HOST_UI)
    legacy, legacy_wire, _ = connect(None)
    modern, modern_wire, _ = connect(None)
    discovered = {"supportedVersions": [MODERN], "capabilities": {}}
    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_next, legacy_wire, legacy, "initialize", INITIALIZED)
        tg.start_soon(answer_next, modern_wire, modern, "server/discover", discovered)
        with anyio.fail_after(WAIT):
            await legacy.handshake("legacy", WAIT, declared)
            await modern.handshake("auto", WAIT, declared)
    assert legacy_wire.requests("initialize")[0]["params"]["capabilities"]["extensions"] == {
        extensions.UI: {"mimeTypes": ["text/html;profile=mcp-app"]}
    }
    modern.send("tools/call", {"name": "now"}, Exchange())
    for request in (modern_wire.requests("server/discover")[0], modern_wire.requests("tools/call")[0]):
        assert request["params"]["_meta"][revisions.CLIENT_CAPABILITIES_KEY] == declared


async def test_auto_falls_back_to_initialize_when_the_child_does_not_discover() -> None:
    connection, wire, _ = connect(None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_next, wire, connection, "server/discover", None, NOT_FOUND)
        tg.start_soon(answer_next, wire, connection, "initialize", INITIALIZED)
        await connection.handshake("auto", WAIT)
    assert connection.protocol_version == "2025-06-18"
    assert "_meta" not in wire.requests("initialize")[0]["params"], "no envelope once the era is the handshake's"


async def test_a_required_2026_child_that_does_not_support_it_is_refused() -> None:
    connection, wire, _ = connect(None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(answer_next, wire, connection, "server/discover", {"supportedVersions": ["2025-11-25"]})
        with pytest.raises(RuntimeError, match="not 2026-07-28"):
            await connection.handshake("2026-07-28", WAIT)
    assert connection.protocol_version is None


class BrokenWire(FakeWire):
    """A child that has died: writing to it fails, as a closed pipe does."""

    def send(self, message: dict[str, Any], line: bytes = b"") -> None:
        raise OSError("the pipe is closed (Broken pipe)")


async def test_a_request_that_finds_the_wire_broken_fails_with_the_childs_own_end() -> None:
    connection = Connection("dies", BrokenWire(), Events())
    async with anyio.create_task_group() as tg:

        async def exits() -> None:
            await anyio.lowlevel.checkpoint()  # the exit is seen after the write failed, as with a real process
            connection.ended("server 'dies' exited with code 3; last stderr: fatal")

        tg.start_soon(exits)
        with pytest.raises(errors.Unavailable, match="exited with code 3; last stderr: fatal"):
            await connection.request("initialize", {}, WAIT)
