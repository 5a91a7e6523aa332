"""One host request routed to a child and back (hub.relay.router, hub.relay.call), against in-memory children.

Each rule of the relay is applied once, in `Call`: the answer's bytes, URI renaming, progress and deadlines,
cancellation, admission, failures and their mapping, the call log, and the shaping of results for each era.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any

import pytest

from hub.config.settings import HubSettings
from hub.protocol import extensions, revisions
from hub.protocol.jsonrpc import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, REQUEST_TIMEOUT
from hub.relay import call as call_module
from hub.relay.call import Call
from hub.upstream.child import ChildState
from tests.relay.harness import HANDSHAKE, MODERN, FakeSession, Relay, modern_meta, running_relay

pytestmark = pytest.mark.anyio

TEXT = {"content": [{"type": "text", "text": "12:00"}], "isError": False}
LOG_FIELDS = {
    "method",
    "replica",
    "host_session",
    "identity",
    "auth",
    "rule",
    "request_id",
    "child",
    "name",
    "original",
    "duration_ms",
    "outcome",
    "bytes_in",
    "bytes_out",
}


def only_call(relay: Relay, child: str) -> Call:
    """The one call in flight to `child` (a connection lists its calls in flight)."""
    inflight = relay.catalog.children[child].shared.inflight  # type: ignore[union-attr]
    assert len(inflight) == 1, inflight
    call: Call = next(iter(inflight))
    return call


# ---- the answer -----------------------------------------------------------------------------------------------


async def test_a_result_that_needs_no_renaming_reaches_the_host_as_the_childs_own_bytes() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        request = relay.call_tool("time_now", {"tz": "UTC"})
        # Spaced and escaped as the child wrote it: a re-encoding would be compact and say "café".
        exact = b'{"content": [{"type":"text", "text":"caf\\u00e9 12:00"}],  "isError":false}'
        server.connection.receive(b'{"jsonrpc":"2.0","id":1,"result":' + exact + b"}")
        await request.answered()
        assert request.outcomes == ["respond"]
        assert request.body == exact
        assert relay.lines(request)[0]["bytes_out"] == len(exact)


async def test_an_unprefixed_childs_uris_pass_through_as_its_own_bytes() -> None:
    async with running_relay() as relay:
        plain = relay.add_child("plain", prefix="", tools=("link",))
        request = relay.call_tool("link")
        exact = b'{"content":[{"type":"resource_link", "uri":"file:///a.txt","name":"a"}]}'
        plain.connection.receive(b'{"jsonrpc":"2.0","id":1,"result":' + exact + b"}")
        assert request.body == exact


async def test_the_child_gets_its_own_name_the_hosts_vendor_meta_and_the_hubs_progress_token() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        meta = {"progressToken": "host-token", "com.example/trace": "t-1"}
        relay.request("tools/call", {"name": "time_now", "arguments": {"tz": "UTC"}, "_meta": meta})
        assert server.last_request() == {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "now",
                "arguments": {"tz": "UTC"},
                "_meta": {"com.example/trace": "t-1", "progressToken": 1},
            },
        }


async def test_uris_in_a_tool_result_are_renamed_with_the_childs_prefix() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("zones",))
        request = relay.call_tool("time_zones")
        server.answer(
            1,
            {
                "content": [
                    {"type": "text", "text": "see file:///zones/utc"},
                    {"type": "resource_link", "uri": "file:///zones/utc", "name": "utc"},
                    {"type": "resource", "resource": {"uri": "file:///zones/cet", "text": "CET"}},
                ]
            },
        )
        assert request.result["content"] == [
            {"type": "text", "text": "see file:///zones/utc"},
            {"type": "resource_link", "uri": "time+file:///zones/utc", "name": "utc"},
            {"type": "resource", "resource": {"uri": "time+file:///zones/cet", "text": "CET"}},
        ]


async def test_a_resource_is_read_under_the_childs_own_uri_and_its_contents_come_back_prefixed() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", resources=("file:///zones/utc",))
        request = relay.request("resources/read", {"uri": "time+file:///zones/utc"})
        assert server.last_request()["params"] == {"uri": "file:///zones/utc", "_meta": {"progressToken": 1}}
        server.answer(1, {"contents": [{"uri": "file:///zones/utc", "text": "UTC+0"}]})
        assert request.result == {"contents": [{"uri": "time+file:///zones/utc", "text": "UTC+0"}]}


async def test_a_tool_result_with_is_error_is_forwarded_and_logged_as_a_tool_error() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        request = relay.call_tool("time_now")
        server.answer(1, {"content": [{"type": "text", "text": "no such zone"}], "isError": True})
        assert request.result["isError"] is True
        assert relay.lines(request)[0]["outcome"] == "tool_error"


# ---- progress and deadlines -------------------------------------------------------------------------------------


async def test_progress_is_relayed_under_the_hosts_own_token() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("slow",))
        request = relay.request(
            "tools/call", {"name": "time_slow", "arguments": {}, "_meta": {"progressToken": "host-token"}}
        )
        progress = {"progressToken": 1, "progress": 1, "total": 3, "message": "one of three"}
        server.receive({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        server.receive({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 99}})
        assert request.notifications == [
            (
                "notifications/progress",
                {"progressToken": "host-token", "progress": 1, "total": 3, "message": "one of three"},
            )
        ]
        server.answer(1, TEXT)
        server.receive({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        assert len(request.notifications) == 1, "nothing is relayed for a call that has ended"


async def test_progress_without_a_host_token_is_not_relayed() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("slow",))
        request = relay.call_tool("time_slow")
        server.receive({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1}})
        assert request.notifications == []


class Clock:
    """`time` as hub.relay.call sees it: monotonic() is moved by hand, from the real clock's now (so that the
    real deadline watcher sees these deadlines far in its future)."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now

    @staticmethod
    def perf_counter() -> float:
        return time.perf_counter()


async def test_progress_moves_the_deadline_but_never_past_max_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(call_module, "time", clock)
    async with running_relay() as relay:
        relay.add_child("time", tools=("slow",), timeout=100, max_timeout=250)
        relay.call_tool("time_slow")
        sent_at = clock.now
        call = only_call(relay, "time")
        assert call.deadline == sent_at + 100
        for step in (80, 60):
            clock.now += step
            call.progress({"progressToken": 1, "progress": step})
            assert call.deadline == clock.now + 100, "each progress gives the call its window again"
        clock.now += 60
        call.progress({"progressToken": 1, "progress": 3})
        assert call.deadline == sent_at + 250, "never past the ceiling"
        clock.now += 40
        call.progress({"progressToken": 1, "progress": 4})
        assert call.deadline == sent_at + 250


async def test_a_tools_own_timeout_is_its_window_and_max_timeout_never_cuts_it_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = Clock()
    monkeypatch.setattr(call_module, "time", clock)
    async with running_relay() as relay:
        relay.add_child("time", tools=("slow", "now"), timeout=10, max_timeout=50, tool_timeouts={"slow": 300})
        relay.call_tool("time_slow")
        assert only_call(relay, "time").deadline == clock.now + 300


async def test_a_call_past_its_deadline_is_cancelled_at_the_child_and_answered_as_a_tool_error() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("slow",), timeout=0.05)
        request = relay.call_tool("time_slow")
        await request.answered()
        result = request.result
        assert result["isError"] is True
        text = result["content"][0]["text"]
        assert text.startswith("server 'time' did not answer within ")
        assert text.endswith("(timeout 0.05s); the request was cancelled")
        assert server.wire.notifications("notifications/cancelled") == [
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "timeout"}}
        ]
        server.answer(1, TEXT)  # too late: dropped
        assert request.outcomes == ["respond"]
        (line,) = relay.lines(request)
        assert (line["outcome"], line["error_code"]) == ("timeout", REQUEST_TIMEOUT)
        assert line["error_message"] == text
        assert server.child.slots.in_flight == 0
        assert server.connection.inflight == {}


async def test_a_request_other_than_a_tool_call_past_its_deadline_gets_a_timeout_error() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", prompts=("explain",), timeout=0.05)
        request = relay.request("prompts/get", {"name": "time_explain"})
        await request.answered()
        error = request.failure
        assert error["code"] == REQUEST_TIMEOUT == -32001
        assert error["message"].startswith("server 'time' did not answer within ")
        assert error["data"] == {"server": "time"}
        assert [n["params"]["requestId"] for n in server.wire.notifications("notifications/cancelled")] == [1]


# ---- cancellation -----------------------------------------------------------------------------------------------


async def test_the_hosts_cancel_reaches_the_child_and_the_host_gets_no_answer() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("slow",))
        other = FakeSession("conn-other")
        request = relay.call_tool("time_slow", request_id=7)
        assert relay.router.cancel(other, 7, "not mine") is False, "a request id is its own session's"
        assert relay.router.cancel(relay.session, 7, "the user gave up") is True
        assert request.outcomes == ["drop"]
        assert server.wire.notifications("notifications/cancelled") == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 1, "reason": "the user gave up"},
            }
        ]
        server.answer(1, TEXT)
        assert request.outcomes == ["drop"], "the child's late answer is dropped"
        assert [line["outcome"] for line in relay.lines(request)] == ["cancelled"]
        assert server.child.slots.in_flight == 0
        assert relay.router.cancel(relay.session, 7, None) is False, "nothing of it is in flight any more"


async def test_a_queued_call_cancelled_by_the_host_never_reaches_the_child() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",), max_concurrency=1, max_queue=1)
        first = relay.call_tool("time_now", {"n": 1})
        second = relay.call_tool("time_now", {"n": 2})
        assert relay.router.cancel(relay.session, second.id, None) is True
        assert second.outcomes == ["drop"]
        assert server.wire.notifications() == [], "the child never knew of it"
        server.answer(1, TEXT)
        assert first.outcomes == ["respond"]
        assert len(server.wire.requests("tools/call")) == 1
        assert (server.child.slots.in_flight, server.child.slots.waiting) == (0, 0)


# ---- admission --------------------------------------------------------------------------------------------------


async def test_calls_beyond_max_concurrency_wait_in_order_and_beyond_max_queue_are_refused_as_busy() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",), max_concurrency=2, max_queue=2)
        requests = [relay.call_tool("time_now", {"n": n}) for n in range(5)]

        def sent() -> list[int]:
            return [r["params"]["arguments"]["n"] for r in server.wire.requests("tools/call")]

        assert sent() == [0, 1]
        busy = requests[4]
        assert busy.result["isError"] is True
        assert busy.result["content"][0]["text"].startswith(
            "server 'time' is busy: 2 requests in flight and 2 waiting; try again, or raise max_concurrency"
        )
        assert [line["outcome"] for line in relay.lines(busy)] == ["busy"]
        server.answer(2, TEXT)  # the second call ends: the longest waiter goes next
        assert sent() == [0, 1, 2]
        server.answer(1, TEXT)
        assert sent() == [0, 1, 2, 3]
        server.answer(3, TEXT)
        server.answer(4, TEXT)
        assert [r.outcomes for r in requests[:4]] == [["respond"]] * 4
        assert (server.child.slots.in_flight, server.child.slots.waiting) == (0, 0)


async def test_a_call_that_waits_for_a_slot_past_its_window_is_given_up_as_busy() -> None:
    async with running_relay() as relay:
        server = relay.add_child(
            "time", tools=("long", "now"), max_concurrency=1, max_queue=1, timeout=0.05, tool_timeouts={"long": 60}
        )
        long = relay.call_tool("time_long")
        queued = relay.call_tool("time_now")
        await queued.answered()
        assert queued.result["content"][0]["text"] == (
            "server 'time' is busy: the call waited 0.05s for one of its 1 slots (max_concurrency) and was given up"
        )
        assert [line["outcome"] for line in relay.lines(queued)] == ["busy"]
        assert server.child.slots.waiting == 0
        server.answer(1, TEXT)
        assert long.outcomes == ["respond"]
        assert len(server.wire.requests("tools/call")) == 1, "the given-up call never reaches the child"
        assert server.wire.notifications() == []


async def test_a_request_id_already_in_flight_on_the_session_is_an_invalid_request() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        first = relay.call_tool("time_now", request_id=5)
        again = relay.call_tool("time_now", request_id=5)
        assert again.failure == {
            "code": INVALID_REQUEST,
            "message": "invalid request: request id 5 is already in flight on this connection",
        }
        elsewhere = relay.call_tool("time_now", request_id=5, session=FakeSession("conn-other"))
        assert elsewhere.outcomes == [], "ids are per session"
        assert len(server.wire.requests("tools/call")) == 2
        server.answer(1, TEXT)
        assert first.outcomes == ["respond"]
        reused = relay.call_tool("time_now", request_id=5)
        assert reused.outcomes == [], "an id may be used again once its request is answered"


async def test_a_busy_refusal_of_another_method_is_an_error() -> None:
    async with running_relay() as relay:
        relay.add_child("time", prompts=("p",), max_concurrency=1, max_queue=0)
        relay.request("prompts/get", {"name": "time_p"})
        refused = relay.request("prompts/get", {"name": "time_p"})
        assert refused.failure["code"] == INTERNAL_ERROR
        assert refused.failure["message"].startswith("server 'time' is busy")


# ---- failures ---------------------------------------------------------------------------------------------------


async def test_a_connection_that_ends_answers_every_call_in_flight_with_its_reason() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",), prompts=("p",))
        tool = relay.call_tool("time_now")
        prompt = relay.request("prompts/get", {"name": "time_p"})
        reason = "server 'time' closed the connection; exited with code 3; last stderr: out of memory"
        server.connection.ended(reason)
        assert tool.result == {"content": [{"type": "text", "text": reason}], "isError": True}
        assert prompt.failure == {"code": INTERNAL_ERROR, "message": reason}
        for request in (tool, prompt):
            (line,) = relay.lines(request)
            assert (line["outcome"], line["error_message"]) == ("unavailable", reason)
        assert server.connection.inflight == {}
        assert server.child.slots.in_flight == 0


async def test_a_call_to_a_child_that_is_not_ready_names_the_child_its_state_and_why() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        server.connection.ended("exited with code 3")
        server.child.state, server.child.last_error = ChildState.RESTARTING, "exited with code 3"
        request = relay.call_tool("time_now")
        assert request.result["content"][0]["text"] == (
            "server 'time' is unavailable (state: restarting): exited with code 3"
        )
        assert server.wire.requests() == []
        assert relay.lines(request)[0]["outcome"] == "unavailable"


async def test_a_childs_jsonrpc_error_keeps_its_code_and_data_and_names_the_child() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        request = relay.call_tool("time_now", {"tz": "Mars"})
        server.error(1, {"code": -32602, "message": "unknown timezone", "data": {"tz": "Mars"}})
        assert request.failure == {"code": -32602, "message": "time: unknown timezone", "data": {"tz": "Mars"}}
        (line,) = relay.lines(request)
        assert (line["outcome"], line["error_code"], line["error_message"]) == (
            "error",
            -32602,
            "time: unknown timezone",
        )


async def test_a_child_error_without_a_usable_code_or_message_is_still_answered() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        request = relay.call_tool("time_now")
        server.error(1, {"code": "bad", "message": None})
        assert request.failure == {"code": INTERNAL_ERROR, "message": "time: an error without a message"}


@pytest.mark.parametrize("method", ["tools/call", "prompts/get"])
async def test_a_child_answering_connection_closed_counts_as_unavailable(method: str) -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",), prompts=("now",))
        request = relay.request(method, {"name": "time_now"})
        server.error(1, {"code": CONNECTION_CLOSED, "message": "Connection closed"})
        message = "server 'time' closed the connection (Connection closed)"
        if method == "tools/call":
            assert request.result == {"content": [{"type": "text", "text": message}], "isError": True}
        else:
            assert request.failure == {"code": INTERNAL_ERROR, "message": message, "data": {"server": "time"}}
        assert relay.lines(request)[0]["outcome"] == "unavailable"


@pytest.mark.parametrize(
    ("head", "tail"),
    [
        (b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"aaaa', b'aaaa"}]}}'),
        (b'{"result":{"content":[{"type":"text","text":"aaaa', b'aaaa"}]},"jsonrpc":"2.0","id":1}'),
    ],
    ids=["id-first", "id-last"],
)
async def test_an_oversized_answer_fails_that_call_as_too_large(head: bytes, tail: bytes) -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("big",))
        request = relay.call_tool("time_big")
        other = relay.call_tool("time_big")
        server.connection.oversized(head, tail, 20_000_000, 16_777_216)
        text = request.result["content"][0]["text"]
        assert text.startswith(
            "server 'time' sent a result of 20000000 bytes, more than its max_result_bytes (16777216)"
        )
        assert relay.lines(request)[0]["outcome"] == "too_large"
        assert other.outcomes == [], "only the call it answered fails"
        server.answer(2, TEXT)
        assert other.outcomes == ["respond"]


async def test_an_oversized_answer_to_a_read_is_an_error_saying_how_large() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", resources=("file:///big",))
        request = relay.request("resources/read", {"uri": "time+file:///big"})
        server.connection.oversized(b'{"jsonrpc":"2.0","id":1,"result":{', b"}}", 17_000_000, 16_777_216)
        error = request.failure
        assert error["code"] == INTERNAL_ERROR
        assert error["data"] == {"reason": "result_too_large", "bytes": 17_000_000}


async def test_a_result_nested_too_deeply_to_rename_fails_that_call_not_the_reader() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("deep",))
        request = relay.call_tool("time_deep")
        depth = sys.getrecursionlimit() - 200  # decodable from here, deeper than renaming can walk
        line = b'{"jsonrpc":"2.0","id":1,"result":{"content":' + b"[" * depth + b"]" * depth + b',"x":"uri"}}'
        server.connection.receive(line)
        text = request.result["content"][0]["text"]
        assert text.startswith("server 'time' sent a result the hub cannot forward")
        assert relay.lines(request)[0]["outcome"] == "unavailable"


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("tools/call", {"name": "nope", "arguments": {}}, "Unknown tool: 'nope'"),
        ("tools/call", {"name": "time_nope"}, "Unknown tool: 'time_nope'"),
        ("prompts/get", {"name": "time_nope"}, "Unknown prompt: 'time_nope'"),
        ("resources/read", {"uri": "nope+file:///x"}, "Unknown resource: 'nope+file:///x'"),
        (
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "a", "value": ""}},
            "Unknown prompt or resource template: 'nope'",
        ),
    ],
)
async def test_unknown_names_are_invalid_params_naming_them(method: str, params: dict[str, Any], message: str) -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",), prompts=("p",), resources=("file:///x",))
        request = relay.request(method, params)
        assert request.failure == {"code": INVALID_PARAMS, "message": message}
        assert server.wire.sent == []
        (line,) = relay.lines(request)
        assert (line["child"], line["original"], line["outcome"]) == (None, None, "error")
        assert (line["error_code"], line["error_message"]) == (INVALID_PARAMS, message)


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("tools/call", {"name": 7}, "invalid params: 'name' must be a string"),
        ("tools/call", {"name": "time_now", "arguments": [1]}, "invalid params: 'arguments' must be an object"),
        ("resources/read", {}, "invalid params: 'uri' must be a string"),
        ("completion/complete", {"ref": "x"}, "invalid params: 'ref' must be an object"),
    ],
)
async def test_malformed_params_are_invalid_params_saying_what_is_wrong(
    method: str, params: dict[str, Any], message: str
) -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        request = relay.request(method, params)
        assert request.failure == {"code": INVALID_PARAMS, "message": message}
        assert server.wire.sent == []


# ---- the call log -----------------------------------------------------------------------------------------------


async def test_a_call_writes_one_log_line_with_the_documented_fields() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        request = relay.call_tool("time_now", {"tz": "Europe/Paris"}, request_id="req-1")
        server.receive({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1}})
        server.answer(1, TEXT)
        server.answer(1, TEXT)  # a duplicate answer changes nothing
        assert len(relay.calls) == 1
        line = relay.calls[0]
        assert set(line) == LOG_FIELDS, "no error fields, no arguments by default"
        duration = line.pop("duration_ms")
        assert isinstance(duration, float) and duration >= 0
        assert line == {
            "method": "tools/call",
            "replica": "",
            "host_session": "conn-default",
            "identity": "anonymous",
            "auth": "none",
            "rule": None,
            "request_id": "req-1",
            "child": "time",
            "name": "time_now",
            "original": "now",
            "outcome": "ok",
            "bytes_in": len(b'{"tz":"Europe/Paris"}'),
            "bytes_out": len(request.body or b""),
        }


async def test_a_failed_call_logs_its_error_code_and_message() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", prompts=("p",))
        request = relay.request("prompts/get", {"name": "time_p"})
        server.error(1, {"code": -32050, "message": "nope"})
        (line,) = relay.lines(request)
        assert set(line) == LOG_FIELDS | {"error_code", "error_message"}
        assert (line["error_code"], line["error_message"], line["bytes_out"]) == (-32050, "time: nope", 0)


@pytest.mark.parametrize(
    ("hub_setting", "child_setting", "logged"),
    [(False, None, False), (True, None, True), (True, False, False), (False, True, True)],
)
async def test_tool_arguments_are_logged_only_when_log_arguments_is_on_for_that_child(
    hub_setting: bool, child_setting: bool | None, logged: bool
) -> None:
    async with running_relay(HubSettings(log_arguments=hub_setting)) as relay:
        server = relay.add_child("time", tools=("now",), log_arguments=child_setting)
        request = relay.call_tool("time_now", {"tz": "UTC"})
        server.answer(1, TEXT)
        (line,) = relay.lines(request)
        assert line.get("arguments") == ({"tz": "UTC"} if logged else None)


async def test_every_request_gets_exactly_one_log_line_whatever_becomes_of_it() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",), prompts=("p",), max_concurrency=1, max_queue=1)
        ok = relay.call_tool("time_now")
        queued = relay.call_tool("time_now")
        busy = relay.call_tool("time_now")
        unknown = relay.call_tool("nope")
        relay.router.cancel(relay.session, queued.id, None)
        server.answer(1, TEXT)
        errored = relay.request("prompts/get", {"name": "time_p"})
        server.error(2, {"code": -1, "message": "x"})
        closed = relay.call_tool("time_now")
        server.connection.ended("gone")
        requests = [ok, queued, busy, unknown, errored, closed]
        assert [len(r.outcomes) for r in requests] == [1] * 6
        counted = Counter(line["request_id"] for line in relay.calls)
        assert counted == {r.id: 1 for r in requests}
        outcomes = [relay.lines(r)[0]["outcome"] for r in requests]
        assert outcomes == ["ok", "cancelled", "busy", "error", "error", "unavailable"]


# ---- protocol eras ----------------------------------------------------------------------------------------------


async def test_a_2026_host_gets_result_type_and_the_hubs_server_info() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        params = {"name": "time_now", "arguments": {}, "_meta": modern_meta(**{"com.example/trace": "t"})}
        request = relay.request("tools/call", params, version=MODERN)
        assert server.last_request()["params"]["_meta"] == {"com.example/trace": "t", "progressToken": 1}, (
            "the host's envelope describes its connection to the hub, not the hub's to the child"
        )
        server.answer(1, TEXT)
        assert request.result == {
            **TEXT,
            "resultType": "complete",
            "_meta": {revisions.SERVER_INFO_KEY: revisions.SERVER_INFO},
        }


async def test_a_2026_host_gets_a_failure_as_a_stamped_result_too() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        request = relay.call_tool("time_now", version=MODERN)
        server.connection.ended("gone")
        assert request.result == {
            "content": [{"type": "text", "text": "gone"}],
            "isError": True,
            "resultType": "complete",
            "_meta": {revisions.SERVER_INFO_KEY: revisions.SERVER_INFO},
        }


async def test_a_2026_childs_result_loses_its_stamp_for_a_handshake_host() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("now",))
        request = relay.call_tool("time_now")
        stamped = {
            **TEXT,
            "resultType": "complete",
            "_meta": {revisions.SERVER_INFO_KEY: {"name": "time-server"}, "com.example/trace": "t"},
        }
        server.answer(1, stamped)
        assert request.result == {**TEXT, "_meta": {"com.example/trace": "t"}}


async def test_a_2026_childs_stamp_is_replaced_by_the_hubs_for_a_2026_host() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("now",))
        request = relay.call_tool("time_now", version=MODERN)
        server.answer(1, {**TEXT, "resultType": "complete", "_meta": {revisions.SERVER_INFO_KEY: {"name": "x"}}})
        assert request.result["_meta"] == {revisions.SERVER_INFO_KEY: revisions.SERVER_INFO}


@pytest.mark.parametrize(("version", "level"), [(MODERN, "info"), (HANDSHAKE, None)])
async def test_a_request_to_a_2026_child_carries_the_hubs_envelope_and_the_hosts_log_opt_in(
    version: str, level: str | None
) -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("now",))
        relay.call_tool("time_now", version=version, log_level="info")
        expected = {
            "progressToken": 1,
            revisions.PROTOCOL_VERSION_KEY: MODERN,
            revisions.CLIENT_INFO_KEY: revisions.CLIENT_INFO,
            revisions.CLIENT_CAPABILITIES_KEY: extensions.client_capabilities(None),  # the shared connection's
        }
        if level is not None:
            expected[revisions.LOG_LEVEL_KEY] = level
        assert server.last_request()["params"]["_meta"] == expected


async def test_a_handshake_hosts_set_level_is_the_log_opt_in_toward_a_2026_child() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("now",))
        server.child.log_level = "warning"
        relay.call_tool("time_now")
        assert server.last_request()["params"]["_meta"][revisions.LOG_LEVEL_KEY] == "warning"
