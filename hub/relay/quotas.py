"""Per-identity limits: how many requests an identity may have in flight at once, and how many it may start per
minute. One identity's burst must not take a shared hub's capacity from everyone else.

The limits come from the policy (`Policy.limits`): the hub-wide `hub.per_identity` values, lowered by the rules that
match the identity. Counted here, in the router's one path, for every routed request; listings are not counted.
The per-minute limit is a token bucket holding a minute's worth: bursts up to the limit, then the limit's rate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hub.access.policy import Limits
from hub.protocol import errors


class RateLimited(errors.HubError):
    outcome = "rate_limited"


@dataclass
class _Usage:
    in_flight: int = 0
    tokens: float = 0.0
    refilled: float = field(default_factory=time.monotonic)


class Quotas:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._usage: dict[str, _Usage] = {}

    def admit(self, name: str, limits: Limits, per_minute: bool = True) -> None:
        """Count one more request of identity `name` (its requests per minute too, unless `per_minute` is False:
        replicas sharing state count those together, hub.relay.state).

        Raises:
            RateLimited: the identity has `max_concurrency` requests in flight, or has used its requests per minute.
        """
        if limits.unlimited:
            return
        usage = self._usage.get(name)
        if usage is None:
            usage = self._usage[name] = _Usage(tokens=float(limits.requests_per_minute or 0), refilled=self._clock())
        if limits.max_concurrency is not None and usage.in_flight >= limits.max_concurrency:
            raise RateLimited(
                f"identity '{name}' has {usage.in_flight} requests in flight, its limit "
                f"({limits.max_concurrency}, {limits.source}); retry when one has finished"
            )
        if limits.requests_per_minute is not None and per_minute:
            now = self._clock()
            rate = limits.requests_per_minute / 60.0
            usage.tokens = min(float(limits.requests_per_minute), usage.tokens + (now - usage.refilled) * rate)
            usage.refilled = now
            if usage.tokens < 1.0:
                wait = (1.0 - usage.tokens) / rate
                raise RateLimited(
                    f"identity '{name}' is over its limit of {limits.requests_per_minute} requests per minute "
                    f"({limits.source}); retry in {wait:.1f} s"
                )
            usage.tokens -= 1.0
        usage.in_flight += 1

    def release(self, name: str) -> None:
        """One request of `name` that `admit` counted has ended."""
        usage = self._usage.get(name)
        if usage is None:
            return
        usage.in_flight = max(0, usage.in_flight - 1)  # the bucket is kept: a fresh one would reset the rate
