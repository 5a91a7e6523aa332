"""Why a listing is empty (hub.access.hidden): the identity, its groups, the rules that match it, and per deciding
rule (or default_policy) how many items it hid, in words, in `hub list --json`'s document and in a log line."""

from __future__ import annotations

from hub.access.hidden import Explanation, Tally
from hub.access.identity import Identity
from hub.access.policy import Policy, Rule

RULES = (
    Rule("oncall-reads", groups=frozenset({"oncall"}), allow=("time_*", "git_status")),
    Rule("no-drops", subjects=frozenset({"*"}), deny=("*_drop",)),
    Rule("dba", groups=frozenset({"dba"}), allow=("pg_*",)),
)
NAMES = ("time_now", "git_status", "git_commit", "pg_query", "pg_drop")


def tally(identity: Identity, policy: Policy, names: tuple[str, ...] = NAMES) -> Tally:
    """What a listing of `names` filtered by `policy.decide` shows and hides (as the catalog's filter counts)."""
    counted = Tally()
    for name in names:
        decision = policy.decide(identity, name, writes=False)
        if decision.allowed:
            counted.shown += 1
        else:
            counted.hide(decision.rule)
    return counted


def explain(identity: Identity, policy: Policy, names: tuple[str, ...] = NAMES) -> Explanation:
    return Explanation(identity, policy.view(identity), {"tools": tally(identity, policy, names), "prompts": Tally()})


def test_an_identity_no_rule_names_is_told_that_default_policy_deny_hid_everything() -> None:
    policy = Policy((RULES[0], RULES[2]), "deny")
    bob = Identity("bob", method="local")
    explained = explain(bob, policy)
    assert explained.empty and explained.worth_saying and explained.hidden == 5
    assert explained.lines() == [
        "nothing listed for bob (groups: none): the policy hid 5 tools",
        "  5 tools by default_policy: deny (no rule of policies: names bob or one of its groups)",
    ]
    assert explained.document() == {
        "open": False,
        "default_policy": "deny",
        "matching_rules": [],
        "hidden": {"tools": 5, "prompts": 0},
        "hidden_by": [{"rule": None, "tools": 5, "prompts": 0}],
    }
    assert explained.fields() == {
        "identity": "bob",
        "auth": "local",
        "groups": [],
        "matching_rules": [],
        "default_policy": "deny",
        "hidden": {"tools": 5},
        "hidden_by": {"default_policy: deny": 5},
    }


def test_each_deciding_rule_is_named_with_what_it_hid() -> None:
    policy = Policy(RULES, "deny")
    alice = Identity("alice", frozenset({"oncall", "dev"}), "token")
    explained = explain(alice, policy)
    assert not explained.empty and explained.shown == 2  # time_now, git_status
    assert explained.rules == ["oncall-reads", "no-drops"]
    assert explained.by_rule() == {None: {"tools": 2, "prompts": 0}, "no-drops": {"tools": 1, "prompts": 0}}
    assert explained.lines() == [
        "the policy hid 3 tools from alice (groups: dev, oncall)",
        "  2 tools by default_policy: deny (the rules that match alice, oncall-reads, no-drops, allow none of them)",
        "  1 tool by rule 'no-drops' (its deny globs, or its read_only for a tool that may write)",
    ]
    assert explained.fields()["hidden_by"] == {"default_policy: deny": 2, "rule 'no-drops'": 1}


def test_a_full_listing_is_not_worth_a_word_and_an_empty_one_always_is() -> None:
    admin = Identity("root", frozenset({"dba"}))
    everything = Policy((Rule("all", subjects=frozenset({"*"}), allow=("*",)),), "deny")
    assert not explain(admin, everything).worth_saying
    nothing_listed = explain(admin, everything, names=())
    assert nothing_listed.worth_saying and nothing_listed.hidden == 0
    assert nothing_listed.lines() == ["nothing listed for root (groups: dba): the policy hid nothing"]


def test_without_policies_an_empty_listing_says_nothing_was_hidden() -> None:
    explained = explain(Identity("me"), Policy(), names=())
    assert explained.document()["open"] is True
    assert explained.document()["hidden_by"] == []
    assert explained.lines() == [
        "nothing listed for me (groups: none): no server listed anything (no policies:, so nothing was hidden)"
    ]


def test_the_kinds_are_counted_apart_and_in_the_plural_only_when_more_than_one() -> None:
    policy = Policy((), "deny")
    carol = Identity("carol")
    view = policy.view(carol)
    one, two = Tally(), Tally()
    one.hide(None)
    two.hide(None)
    two.hide(None)
    explained = Explanation(carol, view, {"tools": one, "resources": two, "prompts": Tally()})
    assert explained.lines()[0] == "nothing listed for carol (groups: none): the policy hid 1 tool, 2 resources"
