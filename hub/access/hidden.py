"""Why a listing is empty, or shorter than the catalog: what an identity's policy left out, and which rule did.

The one listing filter (`hub.relay.catalog`) counts what each decision hid in a `Tally`; this module says it in words
a person acts on (`hub list`, and the log line of a host's listing that policy left empty), so that "I see no tools"
is answered without reading servers.yaml against a token file. Names and groups only: no token, no other claim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hub.access.identity import Identity
from hub.access.policy import View

# The listings a host asks for, by their result key, in the order a person reads them; the word for one item.
KINDS = {"tools": "tool", "prompts": "prompt", "resources": "resource", "resourceTemplates": "resource template"}


@dataclass
class Tally:
    """One listing through the policy filter: how many items it shows, and how many each deciding rule hid
    (None: `default_policy`, as in the call log's `rule`)."""

    shown: int = 0
    hidden: dict[str | None, int] = field(default_factory=dict)

    def hide(self, rule: str | None) -> None:
        self.hidden[rule] = self.hidden.get(rule, 0) + 1


@dataclass(frozen=True)
class Explanation:
    """What `identity`'s policy (`view`) did to its listings (`tallies`: result key -> Tally)."""

    identity: Identity
    view: View
    tallies: Mapping[str, Tally]

    @property
    def shown(self) -> int:
        return sum(t.shown for t in self.tallies.values())

    @property
    def hidden(self) -> int:
        return sum(self.hidden_by_kind.values())

    @property
    def hidden_by_kind(self) -> dict[str, int]:
        return {kind: sum(tally.hidden.values()) for kind, tally in self.tallies.items()}

    @property
    def empty(self) -> bool:
        return self.shown == 0

    @property
    def worth_saying(self) -> bool:
        return self.empty or self.hidden > 0

    @property
    def rules(self) -> list[str]:
        """The rules of `policies:` that match the identity, in order."""
        return [rule.name for rule in self.view.rules]

    def by_rule(self) -> dict[str | None, dict[str, int]]:
        """Deciding rule (None: default_policy) -> result key -> how many it hid; rules in the order they hid."""
        out: dict[str | None, dict[str, int]] = {}
        for kind, tally in self.tallies.items():
            for rule, count in tally.hidden.items():
                out.setdefault(rule, dict.fromkeys(self.tallies, 0))[kind] += count
        return out

    def document(self) -> dict[str, Any]:
        """The `policy` object of `hub list --json` (docs/cli.md): always the same keys; a `rule` of None (null) is
        default_policy, as in the call log."""
        return {
            "open": self.view.open,
            "default_policy": self.view.default,
            "matching_rules": self.rules,
            "hidden": self.hidden_by_kind,
            "hidden_by": [{"rule": rule, **counts} for rule, counts in self.by_rule().items()],
        }

    def fields(self) -> dict[str, Any]:
        """One structured log line's fields: who, which rules, what was hidden by which (no secret is in them)."""
        return {
            "identity": self.identity.name,
            "auth": self.identity.method,
            "groups": sorted(self.identity.groups),
            "matching_rules": self.rules,
            "default_policy": self.view.default,
            "hidden": {kind: n for kind, n in self.hidden_by_kind.items() if n},
            "hidden_by": {_label(rule): sum(counts.values()) for rule, counts in self.by_rule().items()},
        }

    def lines(self) -> list[str]:
        """For a person (`hub list` on stderr): who the listing was made for, then one line per deciding rule."""
        who = f"{self.identity.name} (groups: {', '.join(sorted(self.identity.groups)) or 'none'})"
        if self.view.open:
            return [f"nothing listed for {who}: no server listed anything (no policies:, so nothing was hidden)"]
        hidden = _counts(self.hidden_by_kind)
        if self.empty:
            head = f"nothing listed for {who}: the policy hid {hidden or 'nothing'}"
        else:
            head = f"the policy hid {hidden} from {who}"
        return [head] + [
            f"  {_counts(n)} by {_label(rule)} ({self._because(rule)})" for rule, n in self.by_rule().items()
        ]

    def _because(self, rule: str | None) -> str:
        if rule is not None:
            return "its deny globs, or its read_only for a tool that may write"
        if not self.view.rules:
            return f"no rule of policies: names {self.identity.name} or one of its groups"
        return f"the rules that match {self.identity.name}, {', '.join(self.rules)}, allow none of them"


def _label(rule: str | None) -> str:
    return "default_policy: deny" if rule is None else f"rule '{rule}'"


def _counts(counts: Mapping[str, int]) -> str:
    """`3 tools, 1 prompt` for the non-zero counts, in KINDS order."""
    parts = [f"{n} {KINDS.get(kind, kind)}{'' if n == 1 else 's'}" for kind, n in counts.items() if n]
    return ", ".join(parts)
