"""Load: 1,000 concurrent calls over three children under the default limits, each answered exactly once, none lost,
none mixed up; and the per-child limit on requests in flight with its bounded queue, when one is set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.faults._helpers import AT_ONCE, KITCHEN, fault_child, first_text, running_hub
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

CALLS = 1000


async def test_a_thousand_concurrent_calls_over_three_children_are_all_answered_once(tmp_path: Path) -> None:
    """All at once, under the default limits: a shared hub does not refuse what its children can take."""
    names = ["k1", "k2", "k3"]
    servers = {name: KITCHEN for name in names}
    async with running_hub(tmp_path, servers, ready=[f"{n}_echo" for n in names]) as hub:
        answers: dict[int, dict[str, Any]] = {}

        async def one(i: int) -> None:
            name = names[i % len(names)]
            answers[i] = await hub.call(f"{name}_echo", {"text": f"{name}-{i}"})

        with anyio.fail_after(WAIT * 2):
            async with anyio.create_task_group() as tg:
                for i in range(CALLS):
                    tg.start_soon(one, i)
        assert len(answers) == CALLS, f"{CALLS - len(answers)} calls lost"
        wrong = {i: a for i, a in answers.items() if a.get("isError") or first_text(a) != f"{names[i % 3]}-{i}"}
        assert not wrong, f"{len(wrong)} wrong answers, e.g. {list(wrong.items())[:3]}"

        def logged() -> int:
            calls = hub.events("call", method="tools/call")
            return sum(c.get("name", "").endswith("_echo") and c.get("outcome") == "ok" for c in calls)

        # A result's call-log line is written just after its answer: wait (bounded) for the last ones.
        with anyio.move_on_after(WAIT):
            while logged() < CALLS:  # noqa: ASYNC110 - another process writes the file; no event exists
                await anyio.sleep(0.05)
        assert logged() >= CALLS
        for name in names:
            state = await hub.server(name)
            assert state["state"] == "ready" and state["restarts"] == 0, state
        hub.assert_each_request_answered_once()


async def test_beyond_max_concurrency_and_max_queue_calls_are_refused_at_once_as_busy(tmp_path: Path) -> None:
    # One call runs, two wait, the other seven are refused at once, long before the first 2 s sleep ends.
    servers = {"kitchen": KITCHEN, "narrow": {**fault_child("hang"), "max_concurrency": 1, "max_queue": 2}}
    async with running_hub(tmp_path, servers, ready=["kitchen_echo", "narrow_sleep"]) as hub:
        order: list[tuple[str, str]] = []

        async def one() -> None:
            result = await hub.call("narrow_sleep", {"seconds": 2})
            order.append(("error" if result.get("isError") else "ok", first_text(result)))

        with anyio.fail_after(3 * 2 + AT_ONCE):
            async with anyio.create_task_group() as tg:
                for _ in range(10):
                    tg.start_soon(one)
        assert len(order) == 10
        busy = [text for kind, text in order if kind == "error"]
        assert [kind for kind, _ in order] == ["error"] * 7 + ["ok"] * 3, order
        for text in busy:
            assert "narrow" in text and "busy" in text, text
        await hub.assert_kitchen_fine()
        hub.assert_each_request_answered_once()
