"""Policy per identity on the relay core: what an identity is shown is exactly what it may use.

The property test draws random catalogs, rules and identities, and checks for every exposed name (and names that
do not exist) that listed <=> routed to its child <=> `Policy.decide` allows it, and that a hidden name is refused
exactly like a name that does not exist.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import anyio
import pytest

from hub.access.identity import Identity
from hub.access.policy import Limits, Policy, Rule
from hub.protocol.revisions import LATEST_HANDSHAKE
from hub.state import MemoryState
from tests.relay.harness import FakeSession, Relay, running_relay

pytestmark = pytest.mark.anyio

WORDS = ("query", "read", "write", "drop", "status", "ack")
GROUPS = ("oncall", "dba", "admin", "dev")
PEOPLE = ("alice", "bob", "carol", "dave")


def _glob(rng: random.Random, names: list[str]) -> str:
    """A glob that matches some names: a prefix wildcard, a suffix wildcard, an exact name, or everything."""
    name = rng.choice(names)
    return rng.choice([name.split("_")[0] + "_*", "*_" + name.split("_")[-1], name, "*"])


def _rules(rng: random.Random, names: list[str]) -> tuple[Rule, ...]:
    rules = []
    for i in range(rng.randint(0, 4)):
        subjects = frozenset(rng.sample(PEOPLE, rng.randint(0, 2)))
        groups = frozenset(rng.sample(GROUPS, rng.randint(0 if subjects else 1, 2)))
        allow = tuple(_glob(rng, names) for _ in range(rng.randint(0, 3)))
        deny = tuple(_glob(rng, names) for _ in range(rng.randint(0, 2)))
        rules.append(Rule(f"rule{i}", subjects, groups, allow, deny))
    return tuple(rules)


def _listed(relay: Relay, session: FakeSession) -> set[str]:
    view = relay.policy.view(session.identity)
    body = relay.catalog.namespace.listing("tools/list", LATEST_HANDSHAKE, (), view)
    return {tool["name"] for tool in json.loads(body)["tools"]}


async def _routed(relay: Relay, session: FakeSession, name: str, upstreams: dict[str, Any]) -> tuple[bool, Any]:
    """Whether a call of `name` reached a child, and else the error the host got."""
    before = {child: len(u.wire.requests("tools/call")) for child, u in upstreams.items()}
    request = relay.call_tool(name, session=session)
    reached = any(len(u.wire.requests("tools/call")) > before[c] for c, u in upstreams.items())
    if reached:
        return True, None
    await request.answered()
    return False, request.failure


async def test_listed_is_callable_over_random_identities_and_catalogs() -> None:
    rng = random.Random(20261201)
    for _ in range(60):
        async with running_relay() as relay:
            upstreams = {}
            for child in ("icinga", "postgres"):
                tools = tuple(sorted(set(rng.sample(WORDS, rng.randint(1, len(WORDS))))))
                upstreams[child] = relay.add_child(child, tools=tools)
            names = [t["name"] for t in relay.catalog.namespace.tools]
            relay.policy = Policy(_rules(rng, names), rng.choice(["allow", "deny"]))
            for person in PEOPLE:
                identity = Identity(person, frozenset(rng.sample(GROUPS, rng.randint(0, 2))), "token")
                session = FakeSession(f"conn-{person}", identity=identity)
                listed = _listed(relay, session)
                # The listing's filter counted what it hid by the rule that decided (hub list's explanation).
                tally = relay.catalog.namespace.tally("tools/list", (), relay.policy.view(identity))
                hidden = Counter(relay.policy.decide(identity, n, writes=False).rule for n in names if n not in listed)
                assert (tally.shown, tally.hidden) == (len(listed), dict(hidden))
                for name in [*names, "icinga_nosuch", "hub_nosuch"]:
                    allowed = name in names and relay.policy.decide(identity, name, writes=False).allowed
                    reached, error = await _routed(relay, session, name, upstreams)
                    assert (name in listed) == allowed == reached, (name, identity, relay.policy)
                    if not reached:
                        assert error == {"code": -32602, "message": f"Unknown tool: {name!r}"}


async def test_a_denied_call_is_logged_as_denied_with_its_rule() -> None:
    async with running_relay() as relay:
        relay.add_child("postgres", tools=("query", "write"))
        relay.policy = Policy((Rule("oncall-reads", groups=frozenset({"oncall"}), deny=("postgres_write",)),))
        session = FakeSession("conn-alice", identity=Identity("alice", frozenset({"oncall"}), "token"))
        request = relay.call_tool("postgres_write", session=session)
        await request.answered()
        (line,) = relay.lines(request)
        assert (line["outcome"], line["rule"], line["identity"], line["auth"]) == (
            "denied",
            "oncall-reads",
            "alice",
            "token",
        )
        assert request.failure["message"] == "Unknown tool: 'postgres_write'"


async def test_the_health_tool_obeys_the_policy_too() -> None:
    async with running_relay() as relay:
        relay.add_child("postgres", tools=("query",))
        relay.policy = Policy((Rule("dba", groups=frozenset({"dba"}), allow=("postgres_*",)),), "deny")
        dba = FakeSession("conn-d", identity=Identity("dave", frozenset({"dba"}), "jwt"))
        request = relay.call_tool("hub_health", session=dba)
        await request.answered()
        assert request.failure["message"] == "Unknown tool: 'hub_health'"
        assert _listed(relay, dba) == {"postgres_query"}


async def test_an_identity_over_its_concurrency_limit_is_refused_and_others_are_not() -> None:
    async with running_relay() as relay:
        upstream = relay.add_child("postgres", tools=("query",))
        relay.policy = Policy(
            (Rule("oncall", groups=frozenset({"oncall"}), allow=("*",), max_concurrency=2),),
            "allow",
        )
        alice = FakeSession("conn-a", identity=Identity("alice", frozenset({"oncall"}), "token"))
        bob = FakeSession("conn-b", identity=Identity("bob", frozenset(), "token"))
        first, second = (relay.call_tool("postgres_query", session=alice) for _ in range(2))
        third = relay.call_tool("postgres_query", session=alice)
        await third.answered()
        assert third.result["isError"] is True
        assert "identity 'alice' has 2 requests in flight, its limit (2, policy oncall)" in str(third.result)
        assert relay.lines(third)[0]["outcome"] == "rate_limited"
        other = relay.call_tool("postgres_query", session=bob)  # bob has no limit: not refused
        assert len(upstream.wire.requests("tools/call")) == 3
        # One of alice's calls ends: she may start another.
        upstream.answer(upstream.wire.requests("tools/call")[0]["id"], {"content": []})
        await first.answered()
        fourth = relay.call_tool("postgres_query", session=alice)
        assert len(upstream.wire.requests("tools/call")) == 4
        assert not fourth.done.is_set() and not second.done.is_set() and not other.done.is_set()


async def test_the_per_minute_limit_is_a_sliding_window_per_identity() -> None:
    """hub.state.rate through the router with the memory state: a burst up to the limit, then a refusal naming when
    the oldest request leaves the window; another identity has its own window."""
    now = [1000.0]
    async with running_relay(shared=MemoryState(clock=lambda: now[0])) as relay:
        upstream = relay.add_child("postgres", tools=("query",))
        relay.policy = Policy((), "allow", Limits(None, 2))
        alice = FakeSession("conn-a", identity=Identity("alice", frozenset(), "token"))
        bob = FakeSession("conn-b", identity=Identity("bob", frozenset(), "token"))

        async def call(session: FakeSession) -> Any:
            request = relay.call_tool("postgres_query", session=session)
            with anyio.fail_after(5):
                while not request.done.is_set() and len(upstream.wire.requests("tools/call")) == sent:
                    await anyio.lowlevel.checkpoint()
            return request

        sent = 0
        for _ in range(2):
            await call(alice)
            sent += 1
        now[0] += 30.0
        third = await call(alice)
        await third.answered()
        assert "over its limit of 2 requests per minute (hub.per_identity); retry in 30.0 s" in str(third.result)
        assert relay.lines(third)[0]["outcome"] == "rate_limited"
        await call(bob)  # bob's window is his own
        sent += 1
        now[0] += 30.0  # the first request leaves alice's window
        await call(alice)
        sent += 1
        assert len(upstream.wire.requests("tools/call")) == sent == 4


def test_rules_lower_the_hub_wide_limits_for_the_identities_they_match() -> None:
    policy = Policy(
        (
            Rule("interns", groups=frozenset({"intern"}), allow=("*",), requests_per_minute=10),
            Rule("batch", subjects=frozenset({"etl"}), allow=("*",), max_concurrency=100),
        ),
        "deny",
        Limits(8, 600),
    )
    assert policy.limits_for(Identity("ann", frozenset({"intern"}))) == Limits(8, 10, "policy interns")
    assert policy.limits_for(Identity("etl")) == Limits(8, 600, "hub.per_identity"), "a rule only lowers a limit"


async def test_the_health_report_shows_only_the_servers_of_names_the_caller_may_see() -> None:
    async with running_relay() as relay:
        relay.add_child("icinga", tools=("status",))
        relay.add_child("postgres", tools=("query",))
        relay.health = lambda: {
            "servers": [{"name": "icinga"}, {"name": "postgres"}],
            "collisions": [{"kind": "tool", "exposed": "icinga_status", "kept": "icinga", "dropped": "x"}],
        }
        relay.policy = Policy((Rule("dba", groups=frozenset({"dba"}), allow=("postgres_*", "hub_health")),), "deny")
        dba = FakeSession("conn-d", identity=Identity("dave", frozenset({"dba"}), "jwt"))
        request = relay.call_tool("hub_health", session=dba)
        await request.answered()
        report = request.result["structuredContent"]
        assert report == {
            "caller": {"identity": "dave", "groups": ["dba"], "auth": "jwt", "matching_rules": ["dba"]},
            "servers": [{"name": "postgres"}],
            "collisions": [],
        }
