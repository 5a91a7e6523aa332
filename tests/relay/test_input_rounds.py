"""Input rounds across protocol eras (hub.relay.call): a 2026-07-28 child's `input_required` answer asked of a
handshake-era host, and a handshake-era child's own request during a 2026-07-28 host's call answered as
`input_required` and resumed by the host's retry."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from hub.protocol import revisions
from hub.protocol.jsonrpc import INVALID_PARAMS, INVALID_REQUEST
from hub.relay.call import MAX_INPUT_ROUNDS
from hub.relay.ports import AskFailed
from hub.relay.rounds import ROUND_PREFIX
from tests.relay.harness import MODERN, WAIT, FakeRequest, FakeSession, Relay, Upstream, modern_meta, running_relay

pytestmark = pytest.mark.anyio

SAMPLING = {"messages": [{"role": "user", "content": {"type": "text", "text": "which zone?"}}], "maxTokens": 5}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "UTC"}, "model": "m"}
TEXT = {"content": [{"type": "text", "text": "12:00 UTC"}]}
STAMP = {revisions.SERVER_INFO_KEY: revisions.SERVER_INFO}


def input_required(state: str, key: str = "q") -> dict[str, Any]:
    return {
        "resultType": "input_required",
        "inputRequests": {key: {"method": "sampling/createMessage", "params": SAMPLING}},
        "requestState": state,
    }


async def resent(child: Upstream, count: int) -> dict[str, Any]:
    """Wait until the child has got `count` tools/call requests; the last one."""
    await child.wire.wait_for(lambda: len(child.wire.requests("tools/call")) >= count)
    assert len(child.wire.requests("tools/call")) == count
    return child.last_request("tools/call")


# ---- a 2026-07-28 child, a handshake-era host ---------------------------------------------------------------


async def test_a_2026_childs_input_request_is_asked_of_the_host_and_the_call_resent_with_the_answers() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("ask",), timeout=30)
        request = relay.call_tool("time_ask", {"a": 1}, replies={"sampling/createMessage": SAMPLED})
        server.answer(1, input_required("s1"))
        second = await resent(server, 2)
        assert request.asked == [("sampling/createMessage", SAMPLING, 30)], "asked on the call's own stream"
        assert second["id"] == 2
        params = second["params"]
        assert {k: params[k] for k in ("name", "arguments", "inputResponses", "requestState")} == {
            "name": "ask",
            "arguments": {"a": 1},
            "inputResponses": {"q": SAMPLED},
            "requestState": "s1",
        }
        assert params["_meta"][revisions.PROTOCOL_VERSION_KEY] == MODERN
        assert request.outcomes == [], "the host waits for the end of all rounds"
        server.answer(2, input_required("s2", key="again"))
        third = (await resent(server, 3))["params"]
        assert (third["inputResponses"], third["requestState"]) == ({"again": SAMPLED}, "s2"), "only this round's"
        server.answer(3, {**TEXT, "resultType": "complete"})
        assert request.result == TEXT
        assert [line["outcome"] for line in relay.lines(request)] == ["ok"]
        assert server.child.slots.in_flight == 0


async def test_an_input_request_for_a_capability_the_host_did_not_declare_fails_the_call() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("ask",))
        bare = FakeSession("conn-bare", capabilities={})
        request = relay.call_tool("time_ask", session=bare, replies={"sampling/createMessage": SAMPLED})
        server.answer(1, input_required("s1"))
        await request.answered()
        assert request.failure == {
            "code": INVALID_PARAMS,
            "message": "hub: the host did not declare the sampling capability, so server 'time' cannot use sampling",
        }
        assert request.asked == []
        assert len(server.wire.requests("tools/call")) == 1


async def test_the_hosts_error_answer_to_an_input_request_fails_the_call_with_it() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("ask",))
        refusal = AskFailed({"code": -1, "message": "User rejected sampling", "data": {"why": "no"}})
        request = relay.call_tool("time_ask", replies={"sampling/createMessage": refusal})
        server.answer(1, input_required("s1"))
        await request.answered()
        assert request.failure == {"code": -1, "message": "User rejected sampling", "data": {"why": "no"}}


async def test_an_input_request_of_a_kind_the_hub_cannot_relay_fails_the_call() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("ask",))
        request = relay.call_tool("time_ask")
        server.answer(1, {"resultType": "input_required", "inputRequests": {"x": {"method": "tools/list"}}})
        await request.answered()
        assert request.failure == {
            "code": INVALID_PARAMS,
            "message": "hub: cannot relay a 'tools/list' request to the host",
        }


async def test_a_child_that_keeps_asking_for_input_is_given_up_on() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("ask",))
        request = relay.call_tool("time_ask", replies={"sampling/createMessage": SAMPLED})
        for round_ in range(1, MAX_INPUT_ROUNDS + 1):
            server.answer(round_, input_required(f"s{round_}"))
            await resent(server, round_ + 1)
        server.answer(MAX_INPUT_ROUNDS + 1, input_required("again"))
        await request.answered()
        assert request.result["content"][0]["text"] == (
            f"server 'time' asked for input more than {MAX_INPUT_ROUNDS} times"
        )
        assert len(request.asked) == MAX_INPUT_ROUNDS
        assert server.child.slots.in_flight == 0


async def test_an_input_rounds_resend_waits_for_a_free_slot_like_any_call() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", protocol=MODERN, tools=("ask",), max_concurrency=1, max_queue=1)
        first = relay.call_tool("time_ask", {"n": 1}, replies={"sampling/createMessage": SAMPLED})
        server.answer(1, input_required("s1"))  # the slot is free while the host is asked
        second = relay.call_tool("time_ask", {"n": 2})  # and taken at once
        slots = server.child.slots
        with anyio.fail_after(WAIT):
            while slots.waiting == 0:  # the round's answers are in: the resend queues for the slot
                await anyio.lowlevel.checkpoint()
        assert [r["params"]["arguments"]["n"] for r in server.wire.requests("tools/call")] == [1, 2]
        server.answer(2, TEXT)
        assert second.result == TEXT
        resend = server.last_request("tools/call")
        assert (resend["id"], resend["params"]["arguments"], resend["params"]["inputResponses"]) == (
            3,
            {"n": 1},
            {"q": SAMPLED},
        )
        assert (slots.in_flight, slots.waiting) == (1, 0)
        server.answer(3, TEXT)
        assert first.result == TEXT
        assert len(server.wire.requests("tools/call")) == 3, "sent once per round, never twice"
        assert (slots.in_flight, slots.waiting) == (0, 0)


# ---- a handshake-era child, a 2026-07-28 host ---------------------------------------------------------------


class ModernHost:
    """A 2026-07-28 host: every request carries the envelope; it declares sampling unless told otherwise."""

    def __init__(self, relay: Relay, capabilities: dict[str, Any] | None = None) -> None:
        self.relay = relay
        self.session = FakeSession("modern", modern=True)
        self.capabilities = {"sampling": {}} if capabilities is None else capabilities

    def call(self, name: str, request_id: int | None = None, **extra: Any) -> FakeRequest:
        params = {"name": name, "arguments": {}, "_meta": modern_meta(), **extra}
        return self.relay.request(
            "tools/call",
            params,
            session=self.session,
            version=MODERN,
            capabilities=self.capabilities,
            request_id=request_id,
        )


def child_asks(child: Upstream, request_id: str = "c1") -> None:
    child.receive({"jsonrpc": "2.0", "id": request_id, "method": "sampling/createMessage", "params": SAMPLING})


async def test_a_handshake_childs_request_during_a_2026_call_is_answered_as_input_required_and_resumed() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        host = ModernHost(relay)
        first = host.call("time_ask")
        child_asks(server)
        answer = first.result
        state = answer.pop("requestState")
        assert state.startswith(ROUND_PREFIX) and len(state) > len(ROUND_PREFIX) + 16
        assert answer == {
            "resultType": "input_required",
            "inputRequests": {"sampling-1": {"method": "sampling/createMessage", "params": SAMPLING}},
            "_meta": STAMP,
        }
        assert server.wire.answers() == [], "the child waits for the host's answer"
        second = host.call("time_ask", inputResponses={"sampling-1": SAMPLED}, requestState=state)
        assert server.wire.answers() == [{"jsonrpc": "2.0", "id": "c1", "result": SAMPLED}]
        assert len(server.wire.requests("tools/call")) == 1, "the call goes on at the child; it is not sent again"
        assert second.outcomes == []
        server.answer(1, TEXT)
        assert second.result == {**TEXT, "resultType": "complete", "_meta": STAMP}
        assert [line["outcome"] for line in relay.calls] == ["input_required", "ok"]
        assert [line["request_id"] for line in relay.calls] == [first.id, second.id]
        again = host.call("time_ask", inputResponses={"sampling-1": SAMPLED}, requestState=state)
        assert again.failure["code"] == INVALID_PARAMS, "a round is collected once"


async def test_each_round_of_a_parked_call_frees_its_request_id() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask", "now"))
        host = ModernHost(relay)
        first = host.call("time_ask")
        child_asks(server, "c1")
        state = first.result["requestState"]
        second = host.call("time_ask", inputResponses={"sampling-1": SAMPLED}, requestState=state)
        child_asks(server, "c2")  # a second round, answered on the retry
        assert second.result["inputRequests"] == {
            "sampling-2": {"method": "sampling/createMessage", "params": SAMPLING}
        }
        assert second.result["requestState"].startswith("hub-round:")  # sealed afresh each round (a new nonce)
        third = host.call("time_ask", inputResponses={"sampling-2": SAMPLED}, requestState=state)
        server.answer(1, TEXT)
        assert third.result["content"] == TEXT["content"]
        for answered in (first, second, third):  # each id is free again: a new request may use it
            again = host.call("time_now", request_id=answered.id)
            assert again.outcomes == [], again.error


async def test_a_parked_call_that_ends_while_parked_is_collected_by_the_retry() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        host = ModernHost(relay)
        first = host.call("time_ask")
        child_asks(server)
        state = first.result["requestState"]
        server.answer(1, {"content": [{"type": "text", "text": "gave up waiting"}], "isError": True})
        second = host.call("time_ask", inputResponses={"sampling-1": SAMPLED}, requestState=state)
        assert second.result["content"][0]["text"] == "gave up waiting"
        assert second.result["resultType"] == "complete"
        assert [line["outcome"] for line in relay.lines(second)] == ["tool_error"]


async def test_a_parked_round_the_host_never_collects_expires_and_the_childs_request_is_refused() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",), timeout=0.05)
        host = ModernHost(relay)
        first = host.call("time_ask")
        child_asks(server)
        state = first.result["requestState"]
        await server.wire.wait_for(lambda: bool(server.wire.answers()))
        assert server.wire.answers() == [
            {"jsonrpc": "2.0", "id": "c1", "error": {"code": INVALID_PARAMS, "message": "hub: the call ended"}}
        ]
        assert [n["params"]["requestId"] for n in server.wire.notifications("notifications/cancelled")] == [1]
        late = host.call("time_ask", inputResponses={"sampling-1": SAMPLED}, requestState=state)
        assert late.failure == {
            "code": INVALID_PARAMS,
            "message": "hub: this input-required round of 'time_ask' is unknown or expired; call the tool again",
        }


async def test_an_unknown_round_state_is_refused() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        request = ModernHost(relay).call("time_ask", requestState=ROUND_PREFIX + "made-up")
        assert request.failure["code"] == INVALID_PARAMS
        assert "unknown or expired" in request.failure["message"]
        assert server.wire.sent == []


async def test_a_2026_host_that_did_not_declare_sampling_leaves_the_call_running_and_the_child_refused() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        request = ModernHost(relay, capabilities={}).call("time_ask")
        child_asks(server)
        assert server.wire.answers() == [
            {
                "jsonrpc": "2.0",
                "id": "c1",
                "error": {
                    "code": INVALID_PARAMS,
                    "message": "hub: the host did not declare the sampling capability, so server 'time' cannot use "
                    "sampling",
                },
            }
        ]
        assert request.outcomes == []
        server.answer(1, TEXT)
        assert request.result["content"] == TEXT["content"]


async def test_a_childs_request_during_a_2026_request_without_input_rounds_is_refused() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", prompts=("p",))
        params = {"ref": {"type": "ref/prompt", "name": "time_p"}, "argument": {"name": "a", "value": ""}}
        request = relay.request("completion/complete", {**params, "_meta": modern_meta()}, version=MODERN)
        child_asks(server)
        (refused,) = server.wire.answers()
        assert refused["error"]["code"] == INVALID_REQUEST
        assert "during a completion/complete request of a 2026-07-28 host" in refused["error"]["message"]
        assert request.outcomes == []
