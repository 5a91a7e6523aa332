"""Admission: whether a routed request may become a call, decided before anything of it starts (the checks and
their order: docs/architecture.md). Each check passes (the policy's `Decision`; the checked params) or raises the
`HubError` the host is answered with; none sends anything to a child. The two that wait (the identity's rate window
in the shared state, `hub.state.rate`; the user's answer to a confirmation) are awaited in the router's staged step.
An identity's limits (`Policy.limits_for`) count every routed request but subscriptions; listings are not counted.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

from hub.access.identity import Identity
from hub.access.policy import Decision, Policy
from hub.protocol import errors, revisions
from hub.protocol.jsonrpc import encode
from hub.relay.catalog import Route
from hub.relay.exposure import NO_RULES, ToolRules, check_arguments
from hub.relay.ports import AskFailed, HostRequest
from hub.relay.record import Record
from hub.relay.rounds import INPUT_KEY, STATE_TTL, Seals, question, said_yes
from hub.state import SharedState

SUBSCRIPTIONS = frozenset({"resources/subscribe", "resources/unsubscribe"})


class RateLimited(errors.HubError):
    outcome = "rate_limited"


class Admission:
    """The checks of a routed request, with what they read: the policy as it is now, the shared state, the round
    seals, the redaction of what the user is shown, each child's timeout."""

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
        self._in_flight: dict[str, int] = {}  # each identity's calls in flight in this process
        self._record = record
        self._redact = redact
        self._timeout_of = timeout_of  # a child's `timeout` by name (None: removed): how long a user is asked

    def decide(self, identity: Identity, exposed: str, writes: bool) -> Decision:
        return self.policy().decide(identity, exposed, writes=writes)

    def per_minute(self, request: HostRequest) -> int | None:
        """The identity's requests per minute, if it has a limit (then `take_rate` is awaited first), else None."""
        policy = self.policy()
        if not policy.limited or request.method in SUBSCRIPTIONS:
            return None
        return policy.limits_for(request.session.identity).requests_per_minute

    async def take_rate(self, identity: Identity) -> None:
        """Take the request from its identity's window (this process's or the replicas'); RateLimited if over."""
        limits = self.policy().limits_for(identity)
        if limits.requests_per_minute is not None:
            taken = await self.shared.take(identity.name, limits.requests_per_minute)
            if not taken.allowed:
                where = ", counted across the replicas" if self.shared.shared else ""
                raise RateLimited(
                    f"identity '{identity.name}' is over its limit of {limits.requests_per_minute} requests per minute "
                    f"({limits.source}{where}); retry in {math.ceil(taken.retry_after * 10) / 10:.1f} s"
                )

    def arguments(self, exposed: str, params: dict[str, Any], rules: ToolRules) -> dict[str, Any]:
        """The params with the tool's argument rules applied (fixed arguments set, constraints checked)."""
        if rules is NO_RULES or not rules.checks_arguments:
            return params
        return {**params, "arguments": check_arguments(rules, exposed, params.get("arguments"))}

    def take_quota(self, request: HostRequest) -> str | None:
        """Count the call against its identity's limits in this process; the identity to `release` it for, or None.
        RateLimited if over its limit in flight."""
        policy = self.policy()
        if not policy.limited or request.method in SUBSCRIPTIONS:
            return None
        identity = request.session.identity
        limits = policy.limits_for(identity)
        name = identity.name
        if limits.unlimited:
            return name
        in_flight = self._in_flight.get(name, 0)
        if limits.max_concurrency is not None and in_flight >= limits.max_concurrency:
            raise RateLimited(
                f"identity '{name}' has {in_flight} requests in flight, its limit "
                f"({limits.max_concurrency}, {limits.source}); retry when one has finished"
            )
        self._in_flight[name] = in_flight + 1
        return name

    def release(self, quota: str) -> None:
        in_flight = self._in_flight.get(quota, 0) - 1
        if in_flight > 0:
            self._in_flight[quota] = in_flight
        else:
            self._in_flight.pop(quota, None)  # nothing kept for an identity with nothing in flight

    async def confirmed(self, request: HostRequest, route: Route, exposed: str, rule: str | None) -> bool:
        """True on the user's explicit yes; False when a 2026-07-28 host was answered with the question (its answer
        comes as a request of its own, with the round's sealed state). NotConfirmed on a no, when the host cannot be
        asked (it declared no elicitation), or for a round's state that is not accepted."""
        arguments = request.params.get("arguments")  # the host's own, which the user is shown and the state binds
        identity = request.session.identity.name
        state = request.params.get("requestState")
        modern = revisions.is_modern(request.version)
        if modern and isinstance(state, str):
            await self.seals.open(state, identity, exposed, arguments)
            responses = request.params.get("inputResponses")
            answer = responses.get(INPUT_KEY) if isinstance(responses, dict) else None
        elif not request.declared("elicitation"):
            raise errors.NotConfirmed(
                f"the tool {exposed!r} needs its user's confirmation (`confirm:` of server '{route.child}'), "
                "and this host cannot ask for it: it did not declare the elicitation capability. Call it from a "
                "host that supports elicitation, or ask the hub's operator"
            )
        else:
            shown = json.dumps(self._redact(arguments if arguments is not None else {}), indent=2, default=repr)
            asked = question(exposed, route.child, shown)
            if modern:
                round_ = {
                    "resultType": "input_required",
                    "inputRequests": {INPUT_KEY: {"method": "elicitation/create", "params": asked}},
                    "requestState": await self.seals.seal(identity, exposed, arguments),
                }
                body = encode(revisions.stamp(round_, request.method))
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
            raise errors.NotConfirmed(f"the user did not confirm the call of {exposed!r}; it was not run")
        return True
