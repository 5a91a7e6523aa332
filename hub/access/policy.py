"""Policy per identity: which exposed names (tools, prompts, resource URIs) an identity may see and use.

One predicate, `Policy.decide`, answers both "is it listed" and "may it be called, read, got or completed", so what
a host is shown is exactly what it may use; a name it may not use answers like a name that does not exist.

Rules match an identity by `subjects` (names; "*" for everyone) and/or `groups`. Among the rules that match, a
`deny` glob wins over every `allow` glob; a name that no matching rule mentions falls to `default`. A matching rule
with `read_only` denies every tool that may write (not effectively read-only, `hub.relay.exposure`), whatever the
globs say.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from hub.access.identity import Identity

Default = Literal["allow", "deny"]
Matcher = Callable[[str], re.Match[str] | None]  # a rule's globs compiled into one expression (`_globs`)


@dataclass(frozen=True)
class Limits:
    """How much one identity may ask at once and per minute; None: no limit."""

    max_concurrency: int | None = None
    requests_per_minute: int | None = None
    source: str = "hub.per_identity"  # what set them, for the error message

    @property
    def unlimited(self) -> bool:
        return self.max_concurrency is None and self.requests_per_minute is None


@dataclass(frozen=True)
class Rule:
    name: str
    subjects: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    max_concurrency: int | None = None
    requests_per_minute: int | None = None
    read_only: bool = False

    def applies_to(self, identity: Identity) -> bool:
        return "*" in self.subjects or identity.name in self.subjects or identity.in_any(self.groups)

    @cached_property
    def allows(self) -> Matcher:
        return _globs(self.allow).match

    @cached_property
    def denies(self) -> Matcher:
        return _globs(self.deny).match

    @cached_property
    def allowed(self) -> Decision:
        return Decision(True, self.name)

    @cached_property
    def denied(self) -> Decision:
        return Decision(False, self.name)

    @property
    def limited(self) -> bool:
        return self.max_concurrency is not None or self.requests_per_minute is not None


def _globs(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regular expression for a rule's globs (fnmatch's, case-sensitive): one match per rule and name."""
    if not patterns:
        return re.compile(r"(?!)")  # matches nothing
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns), re.DOTALL)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    rule: str | None  # the rule that decided; None: the default (or no policy at all)


ALLOWED = Decision(True, None)
DENIED = Decision(False, None)


@dataclass(frozen=True)
class Policy:
    rules: tuple[Rule, ...] = ()
    default: Default = "allow"
    limits: Limits = Limits()  # for every identity, before the rules that match it lower them

    @cached_property
    def open(self) -> bool:
        """Everything allowed to everyone: no rule, default allow (a hub without `policies:`)."""
        return not self.rules and self.default == "allow"

    @cached_property
    def limited(self) -> bool:
        """Whether any identity has a limit (else nothing is counted per identity)."""
        return not self.limits.unlimited or any(r.limited for r in self.rules)

    def decide(self, identity: Identity, exposed: str, *, writes: bool) -> Decision:
        """Whether `identity` may see and use `exposed` (a tool that `writes`, or not: always said, since a rule's
        `read_only` turns on it), and which rule said so."""
        return self.view(identity).decide(exposed, writes=writes)

    def limits_for(self, identity: Identity) -> Limits:
        """The hub-wide limits, each lowered by the matching rules that set a lower one."""
        concurrency, per_minute, source = self.limits.max_concurrency, self.limits.requests_per_minute, []
        for rule in self.rules:
            if not rule.limited or not rule.applies_to(identity):
                continue
            if rule.max_concurrency is not None and (concurrency is None or rule.max_concurrency < concurrency):
                concurrency = rule.max_concurrency
                source.append(rule.name)
            if rule.requests_per_minute is not None and (per_minute is None or rule.requests_per_minute < per_minute):
                per_minute = rule.requests_per_minute
                source.append(rule.name)
        named = f"policy {', '.join(dict.fromkeys(source))}" if source else self.limits.source
        return Limits(concurrency, per_minute, named)

    def view(self, identity: Identity) -> View:
        """What decides `identity`'s listings: equal views list the same names, so a listing is encoded once per
        view, and a reload that leaves a session's view as it was changes nothing for it."""
        if self.open:
            return OPEN
        return View(tuple(r for r in self.rules if r.applies_to(identity)), self.default)


@dataclass(frozen=True)
class View:
    """A policy as it applies to one identity: the rules that match it, in order, and the default."""

    rules: tuple[Rule, ...]
    default: Default
    open: bool = False  # everything allowed: no policy at all

    def decide(self, exposed: str, *, writes: bool) -> Decision:
        """By the rules of the module's docstring."""
        if self.open:
            return ALLOWED
        for rule in self.rules:
            if rule.denies(exposed) or (writes and rule.read_only):
                return rule.denied
        for rule in self.rules:
            if rule.allows(exposed):
                return rule.allowed
        return ALLOWED if self.default == "allow" else DENIED

    def allows(self, exposed: str, *, writes: bool) -> bool:
        return self.decide(exposed, writes=writes).allowed


OPEN = View((), "allow", open=True)
