"""The tools/call pass-through (hub/passthrough.py), seen from both ends: a real host and a child that records.

The recorder child (no SDK) writes down every message the hub sends it, so these tests see what travelled: the
pass-through's request ids (from 2**40 up; the SDK session counts from 0), the stripped name, the hub's own
progress token, cancellations and the concurrency the child saw. The host is the SDK's client over stdio.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from hub.passthrough import FIRST_ID
from tests.conftest import WAIT, Host, connect_hub, hub_params, python_child, wait_for_log, wait_for_tools, write_config

pytestmark = pytest.mark.anyio


def recorded(path: Path, method: str) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [m for m in map(json.loads, lines) if m.get("method") == method]


async def wait_recorded(path: Path, method: str, count: int = 1) -> list[dict[str, Any]]:
    """Bounded wait for the child to have received `count` messages of `method` (another process writes them)."""
    with anyio.fail_after(WAIT):
        while len(found := recorded(path, method)) < count:  # noqa: ASYNC110 - another process writes the file
            await anyio.sleep(0.02)
    return found


def hub_with_recorder(tmp_path: Path, **child: Any) -> tuple[Path, Path]:
    record = tmp_path / "record.jsonl"
    config = write_config(
        tmp_path, {"rec": python_child("tests.children.recorder", str(record), **child)}, {"log_arguments": True}
    )
    return config, record


async def test_a_call_reaches_the_child_around_the_sdk_and_comes_back_unchanged(tmp_path: Path) -> None:
    config, record = hub_with_recorder(tmp_path)
    log = tmp_path / "hub.log"
    host = Host()
    async with connect_hub(hub_params(config, log), host) as client:
        await wait_for_tools(client, host, {"rec_echo"})
        result = await client.call_tool("rec_echo", {"text": "héllo"}, meta={"com.example/trace": "t1"})
        assert [c.model_dump(exclude_none=True) for c in result.content] == [{"type": "text", "text": "héllo"}]
        assert not result.is_error
        (sent,) = await wait_recorded(record, "tools/call")
        assert sent["id"] >= FIRST_ID, "the call took the SDK session, not the pass-through"
        assert sent["params"] == {"name": "echo", "arguments": {"text": "héllo"}, "_meta": {"com.example/trace": "t1"}}
        line = await wait_for_log(log, "call", lambda e: e["name"] == "rec_echo")
    assert line["child"] == "rec" and line["original"] == "echo" and line["outcome"] == "ok"
    assert line["arguments"] == {"text": "héllo"} and line["bytes_in"] == len('{"text":"héllo"}'.encode())
    assert line["bytes_out"] == len('{"content":[{"type":"text","text":"héllo"}]}'.encode())


async def test_calls_beyond_max_concurrency_wait_in_the_lane_and_all_come_back(tmp_path: Path) -> None:
    config, record = hub_with_recorder(tmp_path, max_concurrency=2)
    host = Host()
    answers: list[str] = []
    async with connect_hub(hub_params(config, tmp_path / "hub.log"), host) as client:
        await wait_for_tools(client, host, {"rec_sleep"})

        async def one() -> None:
            result = await client.call_tool("rec_sleep", {"seconds": 0.2})
            answers.append(result.content[0].text)  # type: ignore[union-attr]

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for _ in range(6):
                    tg.start_soon(one)
    assert answers == ["slept"] * 6
    calls = recorded(record, "tools/call")
    assert len(calls) == 6 and all(c["id"] >= FIRST_ID for c in calls)
    assert max(c["in_flight"] for c in calls) == 2, "the child saw more calls at once than max_concurrency"


async def test_a_cancelled_call_is_cancelled_at_the_child_under_the_child_side_id(tmp_path: Path) -> None:
    config, record = hub_with_recorder(tmp_path)
    host = Host()
    async with connect_hub(hub_params(config, tmp_path / "hub.log"), host) as client:
        await wait_for_tools(client, host, {"rec_sleep"})
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "rec_sleep", {"seconds": 30})
            (sent,) = await wait_recorded(record, "tools/call")
            tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled for it
        (cancelled,) = await wait_recorded(record, "notifications/cancelled")
        assert cancelled["params"]["requestId"] == sent["id"]
        # The hub is undisturbed and the slot is free again.
        assert (await client.call_tool("rec_echo", {"text": "after"})).content[0].text == "after"  # type: ignore[union-attr]


async def test_a_timeout_cancels_at_the_child_and_answers_is_error_naming_it(tmp_path: Path) -> None:
    config, record = hub_with_recorder(tmp_path, tool_timeouts={"sleep": 0.5})
    host = Host()
    async with connect_hub(hub_params(config, tmp_path / "hub.log"), host) as client:
        await wait_for_tools(client, host, {"rec_sleep"})
        result = await client.call_tool("rec_sleep", {"seconds": 30})
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert "server 'rec' did not answer within" in text and "timeout 0.5s" in text, text
        (sent,) = recorded(record, "tools/call")
        (cancelled,) = await wait_recorded(record, "notifications/cancelled")
        assert cancelled["params"] == {"requestId": sent["id"], "reason": "timeout"}


async def test_progress_comes_back_under_the_hosts_token(tmp_path: Path) -> None:
    config, record = hub_with_recorder(tmp_path)
    host = Host()
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async with connect_hub(hub_params(config, tmp_path / "hub.log"), host) as client:
        await wait_for_tools(client, host, {"rec_progress"})
        result = await client.call_tool("rec_progress", {"steps": 3}, progress_callback=on_progress)
        assert result.content[0].text == "done 3"  # type: ignore[union-attr]
    assert seen == [(1, 3), (2, 3), (3, 3)]
    (sent,) = recorded(record, "tools/call")
    assert sent["params"]["_meta"] == {"progressToken": sent["id"]}, "the child gets the hub's token, not the host's"


async def test_a_child_that_exits_mid_call_gives_is_error_with_its_exit_status(tmp_path: Path) -> None:
    config, _ = hub_with_recorder(tmp_path)
    host = Host()
    async with connect_hub(hub_params(config, tmp_path / "hub.log"), host) as client:
        await wait_for_tools(client, host, {"rec_exit"})
        result = await client.call_tool("rec_exit", {"code": 7})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "server 'rec' closed the connection" in text and "exited with code 7" in text, text
    assert "recorder: exiting as asked" in text, "the stderr tail is part of the error"


async def test_per_host_children_keep_the_sdk_path(tmp_path: Path) -> None:
    config, record = hub_with_recorder(tmp_path, sessions="per-host")
    host = Host()
    async with connect_hub(hub_params(config, tmp_path / "hub.log"), host) as client:
        await wait_for_tools(client, host, {"rec_echo"})
        assert (await client.call_tool("rec_echo", {"text": "x"})).content[0].text == "x"  # type: ignore[union-attr]
    sent = recorded(record, "tools/call")
    assert sent and all(c["id"] < FIRST_ID for c in sent)
