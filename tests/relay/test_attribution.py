"""Which host a child's own request or log message goes to (hub.relay.attribution): the session whose requests are
in flight on the connection, the connection's owner, or the only session; refused rather than asked of the wrong
host when several could have caused it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from hub.access.identity import Identity
from hub.protocol.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from hub.relay.attribution import Ambiguous, owner_of
from hub.relay.ports import AskFailed
from tests.relay.harness import MODERN, FakeSession, Relay, Upstream, modern_meta, running_relay

pytestmark = pytest.mark.anyio

SAMPLING = {"messages": [{"role": "user", "content": {"type": "text", "text": "q"}}], "maxTokens": 5}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "a"}, "model": "m"}
ROOTS = {"roots": [{"uri": "file:///work", "name": "work"}]}
ALL: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {}}


def asks(child: Upstream, method: str = "sampling/createMessage", request_id: Any = "c1") -> None:
    child.receive({"jsonrpc": "2.0", "id": request_id, "method": method, "params": SAMPLING})


async def answered(child: Upstream) -> dict[str, Any]:
    """The hub's one answer to the child's request."""
    await child.wire.wait_for(lambda: bool(child.wire.answers()))
    (answer,) = child.wire.answers()
    return answer


# ---- owner_of ---------------------------------------------------------------------------------------------------


def calls_of(*owners: object) -> list[Any]:
    return [SimpleNamespace(attribution=owner) for owner in owners]


def test_nothing_in_flight_has_no_owner() -> None:
    assert owner_of([]) is None


def test_calls_of_one_session_are_owned_by_the_newest() -> None:
    session = object()
    calls = calls_of(session, session, session)
    assert owner_of(calls) is calls[-1]


def test_calls_of_several_sessions_are_ambiguous_and_counted() -> None:
    first, second = object(), object()
    owner = owner_of(calls_of(first, second, first))
    assert isinstance(owner, Ambiguous)
    assert owner.sessions == 2


# ---- a child's request ------------------------------------------------------------------------------------------


async def test_the_one_session_in_flight_is_asked_on_its_newest_request() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        older = relay.call_tool("time_ask")
        newer = relay.call_tool("time_ask", replies={"sampling/createMessage": SAMPLED})
        asks(server)
        assert await answered(server) == {"jsonrpc": "2.0", "id": "c1", "result": SAMPLED}
        assert [method for method, _, _ in newer.asked] == ["sampling/createMessage"]
        assert newer.asked[0][1] == SAMPLING
        assert older.asked == []


async def test_a_roots_request_during_a_call_is_the_sessions_asked_on_its_own_channel() -> None:
    """roots/list is about the session, not the call in flight (decision 017): asked on the session's channel,
    which outlives the call, so that the call ending cannot fail it."""
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        session = FakeSession("conn-1", capabilities=ALL, replies={"roots/list": ROOTS})
        call = relay.call_tool("time_ask", session=session)
        asks(server, "roots/list")
        assert await answered(server) == {"jsonrpc": "2.0", "id": "c1", "result": ROOTS}
        assert [method for method, _ in session.asked] == ["roots/list"]
        assert call.asked == []


async def test_a_roots_request_during_a_2026_hosts_call_stays_an_input_round() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        session = FakeSession("modern", modern=True)
        params = {"name": "time_ask", "arguments": {}, "_meta": modern_meta()}
        call = relay.request("tools/call", params, session=session, version=MODERN, capabilities=ALL)
        asks(server, "roots/list")
        assert call.result["resultType"] == "input_required", call.result
        assert [r["method"] for r in call.result["inputRequests"].values()] == ["roots/list"]
        assert session.asked == [] and server.wire.answers() == []


async def test_requests_of_several_sessions_in_flight_are_refused_naming_per_host() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        one = relay.call_tool("time_ask", session=FakeSession("conn-1", capabilities=ALL))
        two = relay.call_tool("time_ask", session=FakeSession("conn-2", capabilities=ALL))
        asks(server)
        error = (await answered(server))["error"]
        assert error["code"] == INVALID_REQUEST
        assert "requests of 2 host sessions are in flight to server 'time'" in error["message"]
        assert "set 'sessions: per-host' for this server in servers.yaml" in error["message"]
        assert one.asked == two.asked == []


async def test_with_nothing_in_flight_the_only_session_is_asked() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        session = FakeSession("conn-only", capabilities=ALL, replies={"roots/list": ROOTS})
        relay.hosts.add(session)
        asks(server, "roots/list")
        assert await answered(server) == {"jsonrpc": "2.0", "id": "c1", "result": ROOTS}
        assert [method for method, _ in session.asked] == ["roots/list"]


async def test_with_nothing_in_flight_and_several_sessions_nobody_is_asked() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        sessions = [FakeSession(f"conn-{n}", capabilities=ALL, replies={"roots/list": ROOTS}) for n in range(2)]
        for session in sessions:
            relay.hosts.add(session)
        asks(server, "roots/list")
        error = (await answered(server))["error"]
        assert error["code"] == INVALID_REQUEST
        assert error["message"].startswith(
            "hub: no host request is in flight to server 'time' and 2 host sessions are connected, so its roots "
            "request has no host to go to"
        )
        assert "sessions: per-host" in error["message"]
        assert [s.asked for s in sessions] == [[], []]


async def test_with_nothing_in_flight_the_connections_own_session_is_asked() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",), sessions="per-host")
        owner = FakeSession("conn-owner", capabilities=ALL, replies={"roots/list": ROOTS})
        for session in (owner, FakeSession("conn-other", capabilities=ALL)):
            relay.hosts.add(session)
        server.connection.owner = owner
        asks(server, "roots/list")
        assert (await answered(server))["result"] == ROOTS
        assert len(owner.asked) == 1


async def test_a_2026_session_is_never_asked_outside_a_request() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        modern = FakeSession("modern", modern=True, capabilities=ALL, replies={"roots/list": ROOTS})
        relay.hosts.add(modern)
        asks(server, "roots/list")
        assert (await answered(server))["error"]["code"] == INVALID_REQUEST
        assert modern.asked == []


@pytest.mark.parametrize("in_flight", [True, False], ids=["during-a-call", "outside-any-call"])
async def test_a_host_that_did_not_declare_the_capability_is_refused(in_flight: bool) -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        session = FakeSession("conn-bare", capabilities={"roots": {}}, replies={"sampling/createMessage": SAMPLED})
        if in_flight:
            relay.call_tool("time_ask", session=session)
        else:
            relay.hosts.add(session)
        asks(server)
        assert (await answered(server))["error"] == {
            "code": INVALID_PARAMS,
            "message": "hub: the host did not declare the sampling capability, so server 'time' cannot use sampling",
        }
        assert session.asked == []


async def test_the_hosts_error_answer_reaches_the_child() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        rejected = AskFailed({"code": -1, "message": "User rejected sampling request"})
        relay.call_tool("time_ask", replies={"sampling/createMessage": rejected})
        asks(server)
        assert (await answered(server))["error"] == {"code": -1, "message": "User rejected sampling request"}


async def test_a_child_request_the_hub_does_not_relay_is_method_not_found() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        relay.call_tool("time_ask")
        asks(server, "tools/list")
        assert (await answered(server))["error"] == {
            "code": METHOD_NOT_FOUND,
            "message": "hub: 'tools/list' is not relayed to hosts",
        }


async def test_a_childs_ping_is_answered_by_its_connection() -> None:
    relay = Relay()
    server = relay.add_child("time")
    server.receive({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert server.wire.answers() == [{"jsonrpc": "2.0", "id": 9, "result": {}}]


# ---- a child's log messages -------------------------------------------------------------------------------------


def log(child: Upstream, logger: str | None = "db") -> None:
    params: dict[str, Any] = {"level": "info", "data": "connected"}
    if logger is not None:
        params["logger"] = logger
    child.receive({"jsonrpc": "2.0", "method": "notifications/message", "params": params})


async def test_a_log_message_during_a_call_goes_to_that_request_named_after_the_child() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        bystander = FakeSession("conn-bystander")
        relay.hosts.add(bystander)
        request = relay.call_tool("time_now")
        log(server)
        log(server, None)
        assert request.logs == [
            {"level": "info", "data": "connected", "logger": "time/db"},
            {"level": "info", "data": "connected", "logger": "time"},
        ]
        assert bystander.logs == []


async def test_a_log_message_outside_any_call_goes_to_every_session() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        sessions = [FakeSession("conn-1"), FakeSession("conn-2")]
        for session in sessions:
            relay.hosts.add(session)
        log(server)
        assert [s.logs for s in sessions] == [[{"level": "info", "data": "connected", "logger": "time/db"}]] * 2


async def test_a_log_message_of_an_identitys_connection_goes_to_that_identitys_sessions_only() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        alice, bob = Identity("alice", method="token"), Identity("bob", method="token")
        sessions = [FakeSession("conn-a1", identity=alice), FakeSession("conn-a2", identity=alice)]
        bystander = FakeSession("conn-b", identity=bob)
        for session in (*sessions, bystander):
            relay.hosts.add(session)
        server.connection.identity = alice  # as `sessions: per-identity` opens it
        log(server)
        assert [s.logs for s in sessions] == [[{"level": "info", "data": "connected", "logger": "time/db"}]] * 2
        assert bystander.logs == [], "one person's server does not talk to another's session"


async def test_a_log_message_outside_any_call_goes_to_the_connections_owner_only() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        owner, other = FakeSession("conn-owner"), FakeSession("conn-other")
        for session in (owner, other):
            relay.hosts.add(session)
        server.connection.owner = owner
        log(server)
        assert len(owner.logs) == 1
        assert other.logs == []


async def test_a_log_message_with_several_sessions_in_flight_reaches_none_of_them() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("now",))
        one = relay.call_tool("time_now", session=FakeSession("conn-1"))
        two = relay.call_tool("time_now", session=FakeSession("conn-2"))
        log(server)
        assert one.logs == two.logs == []


# ---- URL-mode elicitation ---------------------------------------------------------------------------------------

URL_ASK = {"mode": "url", "elicitationId": "flow-1", "url": "https://auth.example.com/f", "message": "Sign in"}
COMPLETE = "notifications/elicitation/complete"


def completes(child: Upstream, elicitation: str = "flow-1") -> None:
    child.receive({"jsonrpc": "2.0", "method": COMPLETE, "params": {"elicitationId": elicitation}})


def completions(session: FakeSession) -> list[Any]:
    return [params for method, params in session.notifications if method == COMPLETE]


async def test_a_url_elicitations_completion_reaches_only_the_session_that_was_asked() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        ada, bob = (FakeSession(name, capabilities=ALL) for name in ("conn-ada", "conn-bob"))
        for session in (ada, bob):
            relay.hosts.add(session)
        call = relay.call_tool("time_ask", session=ada, replies={"elicitation/create": {"action": "accept"}})
        server.receive({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": URL_ASK})
        assert await answered(server) == {"jsonrpc": "2.0", "id": "e1", "result": {"action": "accept"}}
        assert [method for method, _, _ in call.asked] == ["elicitation/create"]
        server.answer(1, {"content": []})
        relay.call_tool("time_ask", session=bob)  # bob's call is in flight when the completion comes
        completes(server)
        assert completions(ada) == [{"elicitationId": "flow-1"}]
        assert completions(bob) == []
        completes(server)  # once only: the elicitation is over
        assert len(completions(ada)) == 1


async def test_a_completion_of_an_unknown_elicitation_goes_to_the_one_session_or_nobody() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        ada = FakeSession("conn-ada", capabilities=ALL)
        relay.hosts.add(ada)
        completes(server, "from-an-error")  # named by a -32042 error's data: the hub relayed no request for it
        assert completions(ada) == [{"elicitationId": "from-an-error"}]
        bob = FakeSession("conn-bob", capabilities=ALL)
        relay.hosts.add(bob)
        completes(server, "another")
        assert len(completions(ada)) == 1 and completions(bob) == [], "two sessions share the child: nobody"


async def test_a_completion_of_an_elicitation_named_by_a_32042_error_reaches_that_calls_session() -> None:
    async with running_relay() as relay:
        server = relay.add_child("time", tools=("ask",))
        ada, bob = (FakeSession(name, capabilities=ALL) for name in ("conn-ada", "conn-bob"))
        for session in (ada, bob):
            relay.hosts.add(session)
        call = relay.call_tool("time_ask", session=ada)
        data = {"elicitations": [URL_ASK]}
        server.error(1, {"code": -32042, "message": "sign in first", "data": data})
        assert call.failure == {"code": -32042, "message": "time: sign in first", "data": data}
        relay.call_tool("time_ask", session=bob)
        completes(server)
        assert completions(ada) == [{"elicitationId": "flow-1"}]
        assert completions(bob) == []
