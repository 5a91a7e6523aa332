"""The tools/call pass-through (hub/passthrough.py, hub/http_passthrough.py), seen from both ends.

The recorder child (no SDK) writes down every message the hub sends it, so these tests see what travelled: the
pass-through's request ids (from 2**40 up; the SDK session counts from 0), the stripped name, the hub's own
progress token, cancellations and the concurrency the child saw. The host is the SDK's client, over stdio and over
HTTP (there it declares no sampling, elicitation or roots: the HTTP pass-through takes only such hosts' calls).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.support.children import python_child, write_config
from tests.support.logs import wait_for_log
from tests.support.mcp_client import Host, connect_host, connect_hub, hub_params, wait_for_tools
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["stdio", "http"])
def front(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def recorded(path: Path, method: str | None) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [m for m in map(json.loads, lines) if m.get("method") == method]


async def wait_recorded(path: Path, method: str, count: int = 1) -> list[dict[str, Any]]:
    """Bounded wait for the child to have received `count` messages of `method` (another process writes them)."""
    with anyio.fail_after(WAIT):
        while len(found := recorded(path, method)) < count:  # noqa: ASYNC110 - another process writes the file
            await anyio.sleep(0.02)
    return found


@asynccontextmanager
async def through_hub(
    tmp_path: Path, tool: str, front: str = "stdio", host: Host | None = None, **child: Any
) -> AsyncIterator[tuple[Client, Path]]:
    """A hub with one recorder child ("rec", more settings in `child`), once `tool` is listed; and its record."""
    record = tmp_path / "record.jsonl"
    config = write_config(
        tmp_path, {"rec": python_child("tests.children.recorder", str(record), **child)}, {"log_arguments": True}
    )
    host = host or Host()
    log = tmp_path / "hub.log"
    if front == "stdio":
        async with connect_hub(hub_params(config, log), host) as client:
            await wait_for_tools(client, host, {tool})
            yield client, record
        return
    async with serve_hub_http(config, log) as url, connect_host(url, host, capabilities=False) as client:
        await wait_for_tools(client, host, {tool})
        yield client, record


def first_text(result: Any) -> str:
    text: str = result.content[0].text
    return text


async def test_a_call_reaches_the_child_and_comes_back_unchanged(tmp_path: Path, front: str) -> None:
    log = tmp_path / "hub.log"
    async with through_hub(tmp_path, "rec_echo", front) as (client, record):
        result = await client.call_tool("rec_echo", {"text": "héllo"}, meta={"com.example/trace": "t1"})
        assert [c.model_dump(exclude_none=True) for c in result.content] == [{"type": "text", "text": "héllo"}]
        assert not result.is_error
        (sent,) = await wait_recorded(record, "tools/call")
        meta = dict(sent["params"]["_meta"])
        assert isinstance(meta.pop("progressToken"), int), "the hub asks the child for progress under its own token"
        assert {**sent["params"], "_meta": meta} == {
            "name": "echo",
            "arguments": {"text": "héllo"},
            "_meta": {"com.example/trace": "t1"},
        }
        line = await wait_for_log(log, "call", lambda e: e["name"] == "rec_echo")
    assert line["child"] == "rec" and line["original"] == "echo" and line["outcome"] == "ok"
    assert line["arguments"] == {"text": "héllo"} and line["bytes_in"] == len('{"text":"héllo"}'.encode())
    assert line["bytes_out"] == len('{"content":[{"type":"text","text":"héllo"}]}'.encode())


@pytest.mark.parametrize("sessions", ["shared", "per-host"])
async def test_calls_beyond_max_concurrency_wait_for_a_slot_and_all_come_back(
    tmp_path: Path, front: str, sessions: str
) -> None:
    """With `sessions: per-host` the session's own connection counts against the child's limit too."""
    answers: list[str] = []
    async with through_hub(tmp_path, "rec_sleep", front, max_concurrency=2, sessions=sessions) as (client, record):

        async def one() -> None:
            answers.append(first_text(await client.call_tool("rec_sleep", {"seconds": 0.2})))

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for _ in range(8):
                    tg.start_soon(one)
    assert answers == ["slept"] * 8
    calls = recorded(record, "tools/call")
    assert len(calls) == 8
    assert max(c["in_flight"] for c in calls) == 2, "the child saw more calls at once than max_concurrency"


async def test_a_cancelled_call_is_cancelled_at_the_child_under_the_child_side_id(tmp_path: Path, front: str) -> None:
    async with through_hub(tmp_path, "rec_sleep", front) as (client, record):
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "rec_sleep", {"seconds": 30})
            (sent,) = await wait_recorded(record, "tools/call")
            tg.cancel_scope.cancel()  # the SDK client sends notifications/cancelled for it
        (cancelled,) = await wait_recorded(record, "notifications/cancelled")
        assert cancelled["params"]["requestId"] == sent["id"]
        # The hub is undisturbed and the slot is free again.
        assert first_text(await client.call_tool("rec_echo", {"text": "after"})) == "after"


async def test_a_timeout_cancels_at_the_child_and_answers_is_error_naming_it(tmp_path: Path, front: str) -> None:
    async with through_hub(tmp_path, "rec_sleep", front, tool_timeouts={"sleep": 0.5}) as (client, record):
        result = await client.call_tool("rec_sleep", {"seconds": 30})
        text = first_text(result)
        assert result.is_error and "server 'rec' did not answer within" in text and "timeout 0.5s" in text, text
        (sent,) = recorded(record, "tools/call")
        (cancelled,) = await wait_recorded(record, "notifications/cancelled")
        assert cancelled["params"] == {"requestId": sent["id"], "reason": "timeout"}


async def test_progress_comes_back_under_the_hosts_token(tmp_path: Path, front: str) -> None:
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async with through_hub(tmp_path, "rec_progress", front) as (client, record):
        result = await client.call_tool("rec_progress", {"steps": 3}, progress_callback=on_progress)
        assert first_text(result) == "done 3"
    assert seen == [(1, 3), (2, 3), (3, 3)]
    (sent,) = recorded(record, "tools/call")
    assert sent["params"]["_meta"] == {"progressToken": sent["id"]}, "the child gets the hub's token, not the host's"


async def test_a_child_that_exits_mid_call_gives_is_error_with_its_exit_status(tmp_path: Path, front: str) -> None:
    async with through_hub(tmp_path, "rec_exit", front) as (client, _):
        result = await client.call_tool("rec_exit", {"code": 7})
    text = first_text(result)
    assert result.is_error and "server 'rec' closed the connection" in text and "exited with code 7" in text, text
    assert "recorder: exiting as asked" in text, "the stderr tail is part of the error"


async def test_per_host_children_keep_the_sdk_path(tmp_path: Path, front: str) -> None:
    async with through_hub(tmp_path, "rec_echo", front, sessions="per-host") as (client, record):
        assert first_text(await client.call_tool("rec_echo", {"text": "x"})) == "x"
    sent = recorded(record, "tools/call")
    assert sent
