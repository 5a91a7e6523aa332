"""Per-identity limits: how many requests an identity may have in flight at once (here, per process), and how many
it may start per minute (the shared state's window, hub.state.rate: per process or across replicas, as `state:`
says). One identity's burst must not take a shared hub's capacity from everyone else.

The limits come from the policy (`Policy.limits`): the hub-wide `hub.per_identity` values, lowered by the rules that
match the identity. Counted in the router's one path, for every routed request; listings are not counted.
"""

from __future__ import annotations

import math

from hub.access.policy import Limits
from hub.protocol import errors


class RateLimited(errors.HubError):
    outcome = "rate_limited"


def over_rate(name: str, limits: Limits, retry_after: float, across_replicas: bool) -> RateLimited:
    """The refusal of a request the identity's window (`SharedState.take`) did not take, saying when to retry."""
    where = ", counted across the replicas" if across_replicas else ""
    return RateLimited(
        f"identity '{name}' is over its limit of {limits.requests_per_minute} requests per minute "
        f"({limits.source}{where}); retry in {math.ceil(retry_after * 10) / 10:.1f} s"
    )


class Quotas:
    """Each identity's requests in flight in this process."""

    def __init__(self) -> None:
        self._in_flight: dict[str, int] = {}

    def admit(self, name: str, limits: Limits) -> None:
        """Count one more request of identity `name` in flight (its requests per minute are taken before, from the
        shared state's window).

        Raises:
            RateLimited: the identity has `max_concurrency` requests in flight.
        """
        if limits.unlimited:
            return
        in_flight = self._in_flight.get(name, 0)
        if limits.max_concurrency is not None and in_flight >= limits.max_concurrency:
            raise RateLimited(
                f"identity '{name}' has {in_flight} requests in flight, its limit "
                f"({limits.max_concurrency}, {limits.source}); retry when one has finished"
            )
        self._in_flight[name] = in_flight + 1

    def release(self, name: str) -> None:
        """One request of `name` that `admit` counted has ended."""
        in_flight = self._in_flight.get(name, 0) - 1
        if in_flight > 0:
            self._in_flight[name] = in_flight
        else:
            self._in_flight.pop(name, None)  # nothing kept for an identity with nothing in flight
