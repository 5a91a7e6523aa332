"""Each identity's requests per minute: ONE sliding-window algorithm (decision 013), spelled twice only where it must
run: `decide`, the rule as a pure function (`MemoryState.take` applies it to a deque), and TAKE_SCRIPT, the same steps
as one Redis script (atomic across replicas); tests/integration/test_rate_parity.py asserts they answer alike.

At most N requests taken in any WINDOW; a refused request is not recorded, and its refusal says when to retry (when
the request that must leave the window leaves it, rounded up to the millisecond in both spellings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WINDOW = 60.0  # seconds: "per minute" as a sliding window, not a calendar minute


@dataclass(frozen=True, slots=True)
class RateDecision:
    """Whether a request is taken; if not, `retry_after` seconds from now one would be (0.0 when taken)."""

    allowed: bool
    retry_after: float = 0.0


TAKEN = RateDecision(True)  # one instance for every request taken: nothing allocated on the hot path


def horizon(now: float) -> float:
    """Requests taken at or before this time have left the window ending at `now`."""
    return now - WINDOW


def decide(stamps: Sequence[float], now: float, per_minute: int) -> RateDecision:
    """The answer for one more request at `now`, given `stamps`: the times of the identity's taken requests still in
    the window (each later than `horizon(now)`), oldest first. More stamps than `per_minute` (a reload lowered the
    limit) wait for as many more to leave."""
    excess = len(stamps) - per_minute
    if excess < 0:
        return TAKEN
    leaves = stamps[excess] if per_minute >= 1 else now  # a limit below 1 (never valid in the config) takes none
    return RateDecision(False, max(1, math.ceil((leaves + WINDOW - now) * 1000)) / 1000)  # TAKE_SCRIPT's last line


# KEYS[1]: the identity's window, a sorted set (score: when a request was taken; member: unique per request).
# ARGV: now, per_minute, member, WINDOW. Returns {1, 0} (taken) or {0, milliseconds to wait}.
# Scores cross as '%.17g' text, so Redis holds the same doubles `decide` compares.
TAKE_SCRIPT = """
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.17g', now - window))
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window * 1000))
  return {1, 0}
end
local leaves = now
if limit >= 1 then
  leaves = tonumber(redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')[2])
end
return {0, math.max(1, math.ceil((leaves + window - now) * 1000))}
"""
