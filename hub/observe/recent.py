"""What the status page shows of the calls: the last `LAST_CALLS` calls, and per child the last `WINDOW_MINUTES`
minutes as per-minute counts, errors (any outcome but `ok`, as in `hub logs`) and latency quantiles.

Fed by the one place every call-log line is made (`hub.relay.record.Record.line`), with the redacted fields: a call
is on the page exactly when it has a call-log line. Memory is bounded whatever the traffic: fields are cut, each
child keeps at most `WINDOW_MINUTES` minutes, each a sparse latency histogram of log-spaced cells (a quantile read
from it is within 5 % of the true one), at most `MAX_SERIES` children (further ones count as "other"), and a child
without a call in the window is forgotten. A clock that goes back counts in the newest minute. Event loop only.
"""

from __future__ import annotations

import json
import math
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

LAST_CALLS = 100
WINDOW_MINUTES = 60
MAX_SERIES = 256
# A string field of a record is cut to this many characters (the call log already cuts them to 1,000).
FIELD_CHARS = 300
ARGUMENT_CHARS = 1000  # logged arguments, as compact JSON
OTHER = "other"
HUB = "hub"
# Latency histogram: cell i holds durations in [_BASE * _FACTOR**i, _BASE * _FACTOR**(i+1)) milliseconds.
_BASE = 0.01
_FACTOR = 2 ** (1 / 8)
_LOG_FACTOR = math.log(_FACTOR)
_BUCKETS = 256  # 0.01 ms to about 43 minutes; longer durations fall in the last cell


class RecentCall(NamedTuple):
    """One call as the page lists it (a tuple: made on every call, it must be cheap to make)."""

    at: float  # the clock's seconds when its line was made
    identity: str
    child: str | None
    method: str
    name: str
    outcome: str
    duration_ms: float
    error: str | None = None
    arguments: str | None = None  # compact JSON, cut to ARGUMENT_CHARS; only when the call-log line carried them


@dataclass(slots=True)
class _Minute:
    minute: int
    calls: int = 0
    errors: int = 0
    low: float = math.inf
    high: float = 0.0
    cells: Counter[int] = field(default_factory=Counter)

    def add(self, duration_ms: float, error: bool) -> None:
        self.calls += 1
        self.errors += error
        self.low = min(self.low, duration_ms)
        self.high = max(self.high, duration_ms)
        self.cells[_cell(duration_ms)] += 1


@dataclass(frozen=True)
class ChildWindow:
    """One child's calls over the window: totals, quantiles in milliseconds (None without calls), and the count of
    each of the last `WINDOW_MINUTES` minutes, oldest first."""

    child: str
    calls: int
    errors: int
    per_minute: float  # calls over the minutes the window has covered so far (the recorder's age, at most 60)
    p50_ms: float | None
    p95_ms: float | None
    minutes: tuple[int, ...]

    @property
    def error_rate(self) -> float:
        return self.errors / self.calls if self.calls else 0.0


def _cell(duration_ms: float) -> int:
    if duration_ms <= _BASE:
        return 0
    return min(int(math.log(duration_ms / _BASE) / _LOG_FACTOR), _BUCKETS - 1)


def _cut(value: Any, limit: int = FIELD_CHARS) -> Any:
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 3] + "..."
    return value


def _quantile(cells: Mapping[int, int], total: int, q: float, low: float, high: float) -> float:
    """The q-quantile (nearest rank) of a histogram: its cell's geometric middle, within [low, high]."""
    rank = max(1, math.ceil(q * total))
    seen = 0
    for cell in sorted(cells):
        seen += cells[cell]
        if seen >= rank:
            middle = _BASE * math.exp((cell + 0.5) * _LOG_FACTOR)
            return round(min(max(middle, low), high), 2)
    return round(high, 2)


class Recent:
    """The recent-calls recorder; its contract is the module docstring."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._since = clock()
        self._calls: deque[RecentCall] = deque(maxlen=LAST_CALLS)
        self._series: dict[str, deque[_Minute]] = {}

    def record(self, line: Mapping[str, Any]) -> None:
        """One call-log line's call (the fields as written, redacted by the call log)."""
        now = self._clock()
        child = line.get("child")
        outcome = str(line.get("outcome"))
        duration = float(line.get("duration_ms") or 0.0)
        arguments = line.get("arguments")
        if arguments is not None:  # compact JSON: a request may be megabytes
            arguments = _cut(
                json.dumps(arguments, separators=(",", ":"), ensure_ascii=False, default=repr), ARGUMENT_CHARS
            )
        self._calls.append(
            RecentCall(
                now,
                _cut(str(line.get("identity"))),
                _cut(child),
                str(line.get("method")),
                _cut(str(line.get("name"))),
                outcome,
                duration,
                _cut(line.get("error_message")),
                arguments,
            )
        )
        minutes = self._minutes(HUB if child is None else str(child), now)
        minutes[-1].add(max(duration, 0.0), outcome != "ok")

    def _minutes(self, child: str, now: float) -> deque[_Minute]:
        """The child's minute buckets, the newest being the current minute; older than the window dropped."""
        minute = int(now // 60)
        series = self._series.get(child)
        if series is None:
            self._expire(minute)
            if len(self._series) + (OTHER not in self._series) >= MAX_SERIES:  # a place kept for "other"
                child = OTHER
            series = self._series.setdefault(child, deque())
        if not series or series[-1].minute < minute:
            series.append(_Minute(minute))
        while series[0].minute <= minute - WINDOW_MINUTES:
            series.popleft()
        return series

    def _expire(self, minute: int) -> None:
        """Forget every child without a call in the window."""
        for name in [n for n, s in self._series.items() if s[-1].minute <= minute - WINDOW_MINUTES]:
            del self._series[name]

    def calls(self) -> list[RecentCall]:
        """The last `LAST_CALLS` calls, newest first."""
        return list(reversed(self._calls))

    def windows(self, children: Iterable[str] = ()) -> dict[str, ChildWindow]:
        """Each child's window by name: every child in `children` (with zeros if it had no call), then any other
        that had calls (a child removed by a reload, the hub's own answers)."""
        now = self._clock()
        minute = int(now // 60)
        self._expire(minute)
        covered = min(WINDOW_MINUTES, max(1, math.ceil((now - self._since) / 60)))
        names = list(dict.fromkeys([*children, *self._series]))
        return {name: self._window(name, minute, covered) for name in names}

    def _window(self, name: str, minute: int, covered: int) -> ChildWindow:
        kept = [m for m in self._series.get(name, ()) if m.minute > minute - WINDOW_MINUTES]
        calls = sum(m.calls for m in kept)
        per_minute = [0] * WINDOW_MINUTES
        cells: Counter[int] = Counter()
        for m in kept:
            per_minute[min(WINDOW_MINUTES - 1, m.minute - minute + WINDOW_MINUTES - 1)] += m.calls
            cells.update(m.cells)
        low = min((m.low for m in kept), default=0.0)
        high = max((m.high for m in kept), default=0.0)
        return ChildWindow(
            child=name,
            calls=calls,
            errors=sum(m.errors for m in kept),
            per_minute=round(calls / covered, 2),
            p50_ms=_quantile(cells, calls, 0.5, low, high) if calls else None,
            p95_ms=_quantile(cells, calls, 0.95, low, high) if calls else None,
            minutes=tuple(per_minute),
        )
