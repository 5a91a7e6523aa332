"""The relay's stages on their own: the record sink (hub.relay.record), what is in flight (hub.relay.inflight) and
the one sealed scheme of input rounds (hub.relay.rounds)."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from hub.access.hidden import Explanation, Tally
from hub.access.identity import Identity
from hub.access.policy import Policy, Rule
from hub.observe.metrics import Metrics
from hub.observe.recent import Recent
from hub.protocol import errors
from hub.relay.inflight import InFlight
from hub.relay.record import Observers, Record
from hub.relay.rounds import CONFIRM, PARKED, ROUND_PREFIX, Seals
from hub.state import MemoryState
from tests.relay.harness import FakeRequest, FakeSession

pytestmark = pytest.mark.anyio


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_a_listing_is_counted_with_its_real_duration() -> None:
    metrics = Metrics(children=list, sessions=lambda: 0)
    record = Record(lambda fields: None, "r1", Observers(metrics=metrics))
    record.listing("tools/list", time.perf_counter() - 0.25)  # arrived a quarter second ago
    assert sample(metrics, "hub_requests_total", child="hub", method="tools/list", outcome="ok") == 1
    assert sample(metrics, "hub_request_duration_seconds_sum", child="hub", method="tools/list") >= 0.25


def test_a_listing_the_policy_left_empty_is_logged_with_who_and_which_rule() -> None:
    """An MCP listing carries no prose: the hub's log says why it is empty, once per such listing, names only."""
    view = Policy((Rule("dba", groups=frozenset({"dba"}), allow=("pg_*",)),), "deny").view(Identity("eve"))
    empty, full = Tally(hidden={None: 3}), Tally(shown=1, hidden={None: 2})
    record = Record(lambda fields: None, "r1")
    with capture_logs() as logs:
        record.listing(
            "tools/list", time.perf_counter(), Explanation(Identity("eve", method="token"), view, {"tools": empty})
        )
        record.listing("tools/list", time.perf_counter(), Explanation(Identity("eve"), view, {"tools": full}))
        record.listing("tools/list", time.perf_counter())
    assert logs == [
        {
            "event": "listing_hidden_by_policy",
            "log_level": "info",
            "method": "tools/list",
            "replica": "r1",
            "identity": "eve",
            "auth": "token",
            "groups": [],
            "matching_rules": [],
            "default_policy": "deny",
            "hidden": {"tools": 3},
            "hidden_by": {"default_policy: deny": 3},
        }
    ]


def test_one_line_reaches_the_call_log_then_recent_then_metrics() -> None:
    lines: list[dict[str, Any]] = []
    metrics, recent = Metrics(children=list, sessions=lambda: 0), Recent()
    record = Record(lines.append, "r1", Observers(metrics=metrics, recent=recent))
    request = FakeRequest(FakeSession("conn-1"), 7, "tools/call", {"name": "time_now", "arguments": {}})
    record.line(
        request, "time", "time_now", "now", time.perf_counter(), "busy", errors.Busy("full"), 0, None, None, None
    )
    assert [(line["replica"], line["outcome"], line["request_id"]) for line in lines] == [("r1", "busy", 7)]
    assert [call.name for call in recent.calls()] == ["time_now"]
    assert sample(metrics, "hub_rejections_total", reason="busy") == 1


async def test_in_flight_reports_ready_through_task_group_start_and_refuses_to_spawn_before() -> None:
    flight = InFlight()
    with pytest.raises(RuntimeError, match="not running"):
        flight.spawn(anyio.sleep, 0)
    ran = anyio.Event()

    async def task() -> None:
        ran.set()

    async with anyio.create_task_group() as tg:
        await tg.start(flight.run)
        flight.spawn(task)
        with anyio.fail_after(5):
            await ran.wait()
        tg.cancel_scope.cancel()


async def test_both_kinds_of_round_share_one_prefix_and_neither_passes_for_the_other() -> None:
    seals = Seals(MemoryState(), replica="r1")
    confirm = await seals.seal("ann", "pg_drop", {"table": "t"})
    parked = seals.seal_parked("ann", "pg_drop", "token-1", 30.0)
    assert confirm.startswith(ROUND_PREFIX) and parked.startswith(ROUND_PREFIX)
    confirm_payload, parked_payload = seals.peek(confirm), seals.peek(parked)
    assert confirm_payload is not None and parked_payload is not None
    assert (confirm_payload["k"], parked_payload["k"]) == (CONFIRM, PARKED)
    assert set(confirm_payload) == set(parked_payload), "one payload format"
    assert seals.parked_token(parked_payload, "ann", "pg_drop") == "token-1"
    with pytest.raises(errors.BadRequest, match="unknown or expired"):
        seals.parked_token(confirm_payload, "ann", "pg_drop")
    with pytest.raises(errors.NotConfirmed, match="not one the hub issued"):
        await seals.open(parked, "ann", "pg_drop", {"table": "t"})
    with pytest.raises(errors.BadRequest, match="belongs to replica 'r1'"):
        Seals(seals.state, replica="r2").parked_token(parked_payload, "ann", "pg_drop")
