"""Policy decisions: which rule decides a name for an identity; pure logic, no processes.

(The relay's enforcement of a policy, listed <=> callable, is tested on the relay core: tests/relay/test_policy.py.)
"""

from __future__ import annotations

from hub.access.identity import Identity
from hub.access.policy import Policy, Rule


def test_deny_wins_over_allow_among_the_rules_that_match() -> None:
    policy = Policy(
        (
            Rule("oncall", groups=frozenset({"oncall"}), allow=("icinga_*", "postgres_query")),
            Rule("no-writes", subjects=frozenset({"*"}), deny=("*_write",)),
            Rule("dba", groups=frozenset({"dba"}), allow=("postgres_*",)),
        ),
        "deny",
    )
    alice = Identity("alice", frozenset({"oncall"}))
    dave = Identity("dave", frozenset({"dba"}))
    assert policy.decide(alice, "icinga_ack", writes=False).allowed
    assert policy.decide(alice, "postgres_query", writes=False).rule == "oncall"
    assert not policy.decide(alice, "postgres_drop", writes=False).allowed
    assert policy.decide(alice, "postgres_drop", writes=False).rule is None  # the default decided
    assert policy.decide(dave, "postgres_write", writes=False).rule == "no-writes"
    assert not policy.decide(dave, "postgres_write", writes=False).allowed
    assert policy.view(alice) != policy.view(dave)
    assert policy.view(alice) == policy.view(Identity("erin", frozenset({"oncall"})))


def test_no_policy_allows_everything() -> None:
    assert Policy().open and Policy().decide(Identity("x"), "anything", writes=False).allowed
