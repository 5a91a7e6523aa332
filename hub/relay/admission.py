"""Admission: whether a routed request may become a call, decided before anything of it starts.

In order, for a request whose name resolves: the caller's policy (`hub.access.policy`: allowed, by which rule;
what it may not use answers as what does not exist); what the config holds back (pins, quarantine:
`Namespace.held_back`, refused as the name is routed); the identity's requests per minute, taken from its sliding
window in the shared state (`hub.state.rate`: this process's, or the replicas' with `state: redis`) before anything
else of it; the tool's argument rules (`hub.relay.exposure`: fixed arguments,
constraints); the user's confirmation (`confirm:`, asked through elicitation, or as a 2026-07-28 input round sealed
by `hub.relay.rounds`); and, as its call is made, the identity's limit in flight in this process
(`hub.relay.quotas`).

Each check either passes (the policy's `Decision`: allowed, by which rule; the checked params) or raises the
`HubError` the host is answered with; none sends anything to a child. The two that wait (the rate window, the
user's answer) are awaited in the router's staged step (`hub.relay.inflight`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from hub.access.identity import Identity
from hub.access.policy import Decision, Policy
from hub.protocol import errors, revisions
from hub.protocol.jsonrpc import encode
from hub.relay.exposure import NO_RULES, ToolRules, check_arguments
from hub.relay.ports import AskFailed, HostRequest
from hub.relay.quotas import Quotas, over_rate
from hub.relay.record import Record
from hub.relay.rounds import INPUT_KEY, STATE_TTL, Seals, question, said_yes
from hub.state import SharedState

SUBSCRIPTIONS = frozenset({"resources/subscribe", "resources/unsubscribe"})


class Routed(Protocol):
    """Where a request's name leads (hub.relay.catalog.Route)."""

    @property
    def child(self) -> str: ...

    @property
    def original(self) -> str: ...


class Admission:
    """The checks of a routed request, with what they read: the policy as it is now, the shared state, this
    process's quotas, the round seals, the redaction of what the user is shown, each child's timeout."""

    def __init__(
        self,
        policy: Callable[[], Policy],
        shared: SharedState,
        seals: Seals,
        record: Record,
        redact: Callable[[Any], Any],
        timeout_of: Callable[[str], float | None],
    ) -> None:
        self.policy = policy
        self.shared = shared
        self.seals = seals
        self.quotas = Quotas()
        self._record = record
        self._redact = redact
        self._timeout_of = timeout_of  # a child's `timeout` by name (None: removed): how long a user is asked

    def decide(self, identity: Identity, exposed: str, writes: bool) -> Decision:
        """The caller's policy on a name: allowed or not, and by which rule."""
        return self.policy().decide(identity, exposed, writes=writes)

    def per_minute(self, request: HostRequest) -> int | None:
        """The identity's requests per minute, if it has a limit (then `take_rate` is awaited first), else None."""
        policy = self.policy()
        if not policy.limited or request.method in SUBSCRIPTIONS:
            return None
        return policy.limits_for(request.session.identity).requests_per_minute

    async def take_rate(self, identity: Identity) -> None:
        """Take the request from its identity's window (hub.state: this process's or the replicas') before
        anything else of it.

        Raises:
            RateLimited: over the identity's limit.
        """
        limits = self.policy().limits_for(identity)
        if limits.requests_per_minute is not None:
            taken = await self.shared.take(identity.name, limits.requests_per_minute)
            if not taken.allowed:
                raise over_rate(identity.name, limits, taken.retry_after, self.shared.shared)

    def arguments(self, exposed: str, params: dict[str, Any], rules: ToolRules) -> dict[str, Any]:
        """The params with the tool's argument rules applied (fixed arguments set, constraints checked)."""
        if rules is NO_RULES or not rules.checks_arguments:
            return params
        return {**params, "arguments": check_arguments(rules, exposed, params.get("arguments"))}

    def take_quota(self, request: HostRequest) -> str | None:
        """Count the call against its identity's limits in this process; the identity to release it for, or None.

        Raises:
            RateLimited: over its limit in flight.
        """
        policy = self.policy()
        if not policy.limited or request.method in SUBSCRIPTIONS:
            return None
        identity = request.session.identity
        self.quotas.admit(identity.name, policy.limits_for(identity))
        return identity.name

    def release(self, quota: str) -> None:
        self.quotas.release(quota)

    # ---- the confirmation step ---------------------------------------------------------------------------------

    def can_confirm(self, request: HostRequest, exposed: str, child: str) -> None:
        """Refuse now a call that needs its user's yes from a host that cannot be asked.

        Raises:
            errors.NotConfirmed: the host declared no elicitation, and this is no 2026-07-28 round's answer.
        """
        modern = revisions.is_modern(request.version)
        if not (modern and isinstance(request.params.get("requestState"), str)) and not request.declared("elicitation"):
            raise errors.NotConfirmed(
                f"the tool {exposed!r} needs its user's confirmation (`confirm:` of server '{child}'), "
                "and this host cannot ask for it: it did not declare the elicitation capability. Call it from a "
                "host that supports elicitation, or ask the hub's operator"
            )

    async def confirmed(self, request: HostRequest, route: Routed, exposed: str, rule: str | None) -> bool:
        """True on the user's explicit yes; False when a 2026-07-28 host was answered with the question (its
        answer comes as a request of its own, with the round's sealed state).

        Raises:
            errors.NotConfirmed: no, or no way to ask, or a round's state that is not accepted.
        """
        arguments = request.params.get("arguments")  # the host's own, which the user is shown and the state binds
        identity = request.session.identity.name
        state = request.params.get("requestState")
        refused = errors.NotConfirmed(f"the user did not confirm the call of {exposed!r}; it was not run")
        if revisions.is_modern(request.version) and isinstance(state, str):
            await self.seals.open(state, identity, exposed, arguments)
            responses = request.params.get("inputResponses")
            if not said_yes(responses.get(INPUT_KEY) if isinstance(responses, dict) else None):
                raise refused
            return True
        shown = json.dumps(self._redact(arguments if arguments is not None else {}), indent=2, default=repr)
        asked = question(exposed, route.child, arguments, shown)
        if revisions.is_modern(request.version):
            answer = {
                "resultType": "input_required",
                "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": asked}},
                "requestState": await self.seals.seal(identity, exposed, arguments),
            }
            body = encode(revisions.stamp(answer, request.method))
            request.respond(body)
            self._record.line(
                request, route.child, exposed, route.original, time.perf_counter(), "input_required", None,
                len(body), None, rule, None, "asked",
            )  # fmt: skip
            return False
        limit = self._timeout_of(route.child)
        try:
            answer = await request.ask("elicitation/create", asked, STATE_TTL if limit is None else limit)
        except AskFailed as failure:
            why = failure.error.get("message")
            raise errors.NotConfirmed(
                f"the user could not be asked to confirm {exposed!r} ({why}); it was not run"
            ) from None
        if not said_yes(answer):
            raise refused
        return True
