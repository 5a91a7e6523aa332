"""The status page's recent-calls recorder (hub.observe.recent): the last calls, the last hour per child by minute,
p50/p95 from a bounded histogram, and everything bounded and forgotten after the hour, on an injected clock."""

from __future__ import annotations

from typing import Any

import pytest

from hub.observe.recent import ARGUMENT_CHARS, FIELD_CHARS, LAST_CALLS, MAX_SERIES, OTHER, WINDOW_MINUTES, Recent

START = 1_800_000_000.0  # a whole minute: 30_000_000 * 60


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def line(child: str | None = "time", outcome: str = "ok", duration_ms: float = 5.0, **extra: Any) -> dict[str, Any]:
    """A call-log line's fields, as hub.relay.record.Record.line makes them."""
    return {
        "method": "tools/call",
        "identity": "alice",
        "child": child,
        "name": f"{child}_tool",
        "duration_ms": duration_ms,
        "outcome": outcome,
        **extra,
    }


def test_the_last_hundred_calls_are_kept_newest_first() -> None:
    recent = Recent(Clock())
    for i in range(LAST_CALLS + 50):
        recent.record(line(duration_ms=float(i)))
    calls = recent.calls()
    assert len(calls) == LAST_CALLS
    assert [c.duration_ms for c in calls[:2]] == [149.0, 148.0]
    assert calls[-1].duration_ms == 50.0, "the oldest fifty were evicted"


def test_a_call_keeps_who_what_how_and_how_long_and_arguments_only_when_the_line_had_them() -> None:
    clock = Clock()
    recent = Recent(clock)
    recent.record(line(outcome="error", error_message="Unknown tool: 'x'", request_id=7, bytes_in=2))
    recent.record(line(arguments={"q": 1}))
    with_arguments, plain = recent.calls()
    assert (plain.identity, plain.child, plain.name, plain.outcome, plain.error) == (
        "alice",
        "time",
        "time_tool",
        "error",
        "Unknown tool: 'x'",
    )
    assert plain.at == START and plain.arguments is None
    assert with_arguments.arguments == '{"q":1}', "as compact JSON"


def test_logged_arguments_are_kept_cut() -> None:
    recent = Recent(Clock())
    recent.record(line(arguments={"text": "x" * 10 * ARGUMENT_CHARS}))
    kept = recent.calls()[0].arguments or ""
    assert len(kept) == ARGUMENT_CHARS and kept.startswith('{"text":"xxx') and kept.endswith("...")


def test_long_fields_are_cut() -> None:
    recent = Recent(Clock())
    recent.record(line(name="n" * 5000, error_message="e" * 5000, identity="i" * 5000))
    call = recent.calls()[0]
    assert len(call.name) == len(call.error or "") == len(call.identity) == FIELD_CHARS


def test_p50_and_p95_are_within_five_percent() -> None:
    recent = Recent(Clock())
    for ms in range(1, 1001):  # 1 .. 1000 ms: p50 = 500, p95 = 950
        recent.record(line(duration_ms=float(ms)))
    window = recent.windows()["time"]
    assert window.calls == 1000
    assert window.p50_ms == pytest.approx(500, rel=0.05)
    assert window.p95_ms == pytest.approx(950, rel=0.05)


def test_a_single_call_is_its_own_p50_and_p95() -> None:
    recent = Recent(Clock())
    recent.record(line(duration_ms=12.34))
    window = recent.windows()["time"]
    assert window.p50_ms == window.p95_ms == 12.34


def test_a_child_without_calls_has_zeros_and_no_quantiles() -> None:
    window = Recent(Clock()).windows(["git"])["git"]
    assert (window.calls, window.errors, window.error_rate, window.p50_ms, window.p95_ms) == (0, 0, 0.0, None, None)
    assert window.minutes == (0,) * WINDOW_MINUTES


def test_errors_are_every_outcome_but_ok() -> None:
    recent = Recent(Clock())
    for outcome in ("ok", "ok", "tool_error", "timeout", "ok", "ok", "ok", "denied"):
        recent.record(line(outcome=outcome))
    window = recent.windows()["time"]
    assert (window.calls, window.errors, window.error_rate) == (8, 3, 3 / 8)


def test_calls_are_counted_in_their_minute_and_per_minute_over_the_minutes_covered() -> None:
    clock = Clock()
    recent = Recent(clock)
    for _ in range(3):
        recent.record(line())
    clock.advance(60)
    recent.record(line())
    clock.advance(120)
    for _ in range(2):
        recent.record(line())
    window = recent.windows()["time"]
    assert window.minutes[-4:] == (3, 1, 0, 2)
    assert sum(window.minutes) == window.calls == 6
    # The recorder is three minutes (and a moment) old: four minutes covered.
    clock.advance(1)
    assert recent.windows()["time"].per_minute == pytest.approx(6 / 4)


def test_per_minute_is_over_an_hour_once_the_recorder_is_older() -> None:
    clock = Clock()
    recent = Recent(clock)
    clock.advance(3 * 3600)
    for _ in range(120):
        recent.record(line())
    assert recent.windows()["time"].per_minute == 2.0


def test_calls_older_than_the_hour_are_dropped_and_a_quiet_child_forgotten() -> None:
    clock = Clock()
    recent = Recent(clock)
    recent.record(line("time", duration_ms=1000.0))
    clock.advance(30 * 60)
    recent.record(line("time", duration_ms=1.0))
    recent.record(line("git"))
    clock.advance(31 * 60)  # the first call is 61 minutes old, the others 31
    window = recent.windows()["time"]
    assert window.calls == 1 and window.p95_ms == 1.0
    clock.advance(30 * 60)
    assert recent.windows() == {}, "no child had a call in the last hour"
    assert recent.windows(["time"])["time"].calls == 0
    assert len(recent.calls()) == 3, "the last calls stay, however old"


def test_a_clock_that_goes_back_counts_in_the_newest_minute() -> None:
    clock = Clock()
    recent = Recent(clock)
    clock.advance(120)
    recent.record(line())
    clock.advance(-90)
    recent.record(line())
    clock.advance(90)
    window = recent.windows()["time"]
    assert window.calls == 2 and window.minutes[-1] == 2


def test_unrouted_calls_count_under_the_hub() -> None:
    recent = Recent(Clock())
    recent.record(line(None, outcome="error"))
    assert list(recent.windows()) == ["hub"]
    assert recent.calls()[0].child is None


def test_children_are_listed_in_the_given_order_then_the_others() -> None:
    recent = Recent(Clock())
    recent.record(line("gone"))
    recent.record(line("time"))
    assert list(recent.windows(["git", "time"])) == ["git", "time", "gone"]


def test_memory_is_bounded_whatever_the_traffic() -> None:
    clock = Clock()
    recent = Recent(clock)
    for _ in range(3 * WINDOW_MINUTES):
        for i in range(50):
            recent.record(line(duration_ms=10 ** (i % 12 - 4)))  # 0.0001 ms .. 10^7 ms
        clock.advance(60)
    series = recent._series["time"]
    assert len(series) <= WINDOW_MINUTES
    assert all(len(m.cells) <= 256 for m in series)
    for i in range(MAX_SERIES + 10):
        recent.record(line(f"child{i}"))
    assert len(recent._series) == MAX_SERIES
    assert OTHER in recent._series
