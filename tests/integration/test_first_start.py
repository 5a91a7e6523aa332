"""First start (hub/first_start.py): the host's first answers from the children themselves, before the SDK is there.

The hub is a real subprocess on a config it has never seen (no warm-start cache), the host the SDK's client over
stdio. The recorder child writes down every message the hub sends it, so the tests can tell how many handshakes
it really got.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from hub.identity import CLIENT_PARAMS, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE, initialize_result
from tests.conftest import (
    REPO,
    WAIT,
    Host,
    connect_hub,
    hub_params,
    log_events,
    python_child,
    serve_hub_http,
    wait_for_log,
    write_config,
)
from tests.integration.test_passthrough import recorded, wait_recorded

pytestmark = pytest.mark.anyio


def raw_child(*args: str, **extra: Any) -> dict[str, Any]:
    """The bench's child without the SDK: `echo`, `payload`, `sleep` and `--tools K` realistic tools."""
    return {"command": sys.executable, "args": ["-m", "bench.child_raw", *args], "cwd": str(REPO), **extra}


def test_the_probe_speaks_as_the_sdk_client_does() -> None:
    assert tuple(sorted(HANDSHAKE_PROTOCOL_VERSIONS)) == HANDSHAKE_VERSIONS
    assert LATEST_HANDSHAKE == LATEST_HANDSHAKE_VERSION


def test_the_sdk_shapes_a_listing_alike_for_every_handshake_revision_and_keeps_what_it_knows() -> None:
    """Why a first start may answer a host of any handshake revision with its merge unshaped."""
    tool = {
        "name": "t",
        "title": "T",
        "description": "d",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0}}, "required": ["x"]},
        "outputSchema": {"type": "object", "properties": {"y": {"type": "string"}}},
        "annotations": {"title": "A", "readOnlyHint": True, "destructiveHint": False, "openWorldHint": True},
        "icons": [{"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}],
        "execution": {"taskSupport": "optional"},
        "_meta": {"k": "v"},
    }
    listing = {"tools": [tool, {"name": "plain", "inputSchema": {"type": "object"}}]}
    for version in HANDSHAKE_VERSIONS:
        assert serialize_server_result("tools/list", version, listing) == listing, version


async def test_its_initialize_params_are_the_sdk_client_s(tmp_path: Path) -> None:
    """What the hub's SDK connection sends a child (here in a one-shot command, which has no probe)."""
    record = tmp_path / "record.jsonl"
    config = write_config(tmp_path, {"rec": python_child("tests.children.recorder", str(record))})
    process = await anyio.run_process(
        [sys.executable, "-m", "hub", "check", "--config", str(config)], cwd=REPO, check=False
    )
    assert process.returncode == 0, process.stderr.decode()
    (initialize,) = recorded(record, "initialize")
    assert initialize["params"] == CLIENT_PARAMS


async def test_its_initialize_answers_are_the_sdk_server_s(tmp_path: Path) -> None:
    """For every handshake revision (the only ones the early front answers), over HTTP, where the SDK answers."""
    config = write_config(tmp_path, {"rec": python_child("tests.children.recorder", str(tmp_path / "r.jsonl"))})
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    async with serve_hub_http(config, tmp_path / "hub.log") as url, httpx2.AsyncClient(timeout=30) as http:
        for requested in HANDSHAKE_VERSIONS:
            params = {"protocolVersion": requested, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
            answer = await http.post(url, json=message, headers=headers)
            (data,) = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
            assert json.loads(data)["result"] == initialize_result(requested), requested


async def test_a_first_start_lists_every_child_before_the_sdk_is_there(tmp_path: Path) -> None:
    """Two children without a prefix that both have `echo` and `sleep` (the first declared keeps them), one with a
    deny rule: the listing answered from the probe is the one the hub gives once it runs, no list_changed follows,
    each child got one handshake, and calls reach the adopted connections."""
    record = tmp_path / "record.jsonl"
    config = write_config(
        tmp_path,
        {
            "rec": python_child("tests.children.recorder", str(record), prefix=""),
            "raw": raw_child("--tools", "2", prefix="", tools={"deny": ["payload"]}),
        },
    )
    log = tmp_path / "hub.log"
    host = Host()
    async with connect_hub(hub_params(config, log), host) as client:
        first = (await client.list_tools()).tools
        started = await wait_for_log(log, "first_start")
        assert started["answered"] == ["initialize", "tools/list"], "the early front did not answer the listing"
        assert (await wait_for_log(log, "warm_start_listing_checked"))["stale"] is False
        await client.send_ping()  # anything the hub wrote before this answer has been read
        changed = [n for n in host.notifications if isinstance(n, types.ToolListChangedNotification)]
        assert changed == []
        later = (await client.list_tools()).tools
        assert [t.model_dump() for t in later] == [t.model_dump() for t in first]
        names = [t.name for t in first]
        assert names[:7] == ["hub_health", "echo", "sleep", "progress", "log", "ask", "exit"]
        assert "payload" not in names and len(names) == len(set(names))
        assert {"search_issues", "read_file"} <= set(names)  # the raw child's realistic tools
        echo = await client.call_tool("echo", {"text": "from the recorder"})
        assert echo.content[0].text == "from the recorder"  # type: ignore[union-attr]
        searched = await client.call_tool("search_issues", {"repository": "o/r", "query": "q"})
        assert not searched.is_error
    assert len(recorded(record, "initialize")) == 1
    assert len(recorded(record, "notifications/initialized")) == 1
    # The next start is a warm one: the cache was written from this run.
    async with connect_hub(hub_params(config, tmp_path / "second.log")) as client:
        assert [t.name for t in (await client.list_tools()).tools] == names
    assert log_events(tmp_path / "second.log", "warm_start")[0]["answered"] == ["initialize", "tools/list"]


async def test_a_child_slower_than_the_import_is_adopted_mid_handshake(tmp_path: Path) -> None:
    """The recorder starts only after the hub has imported the SDK, so the probe's initialize is still unanswered
    when the connection takes over: the answer goes to the SDK's initialize, and the child still gets one."""
    record = tmp_path / "record.jsonl"
    gate = tmp_path / "gate"
    waits = ["-m", "tests.faults.children.gated", str(gate), "tests.children.recorder", str(record)]
    config = write_config(tmp_path, {"rec": {"command": sys.executable, "args": waits, "cwd": str(REPO)}})
    log = tmp_path / "hub.log"
    async with connect_hub(hub_params(config, log)) as client:
        await wait_for_log(log, "hub_started")  # the SDK is imported and the children's connections are starting
        await anyio.Path(gate).touch()
        with anyio.fail_after(30):
            while "rec_echo" not in {t.name for t in (await client.list_tools()).tools}:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        echo = await client.call_tool("rec_echo", {"text": "late"})
        assert echo.content[0].text == "late"  # type: ignore[union-attr]
    (initialize,) = await wait_recorded(record, "initialize")
    assert initialize["id"] == "hub-first-start-initialize"
    assert len(recorded(record, "notifications/initialized")) == 1
    assert not [e for e in log_events(log, "child_handshake_differs")]


async def test_a_host_of_an_earlier_revision_gets_the_early_listing_too(tmp_path: Path) -> None:
    """A host at 2025-06-18 (as many desktop hosts are), without the SDK: its first tools/list is the probe's, and
    the hub's own listing later is the same, with no list_changed."""
    config = write_config(tmp_path, {"raw": raw_child("--tools", "2")})
    log = tmp_path / "hub.log"
    command = [sys.executable, "-m", "hub", "serve", "--config", str(config), "--log-file", str(log)]
    async with await anyio.open_process(command, cwd=REPO) as process:
        assert process.stdin is not None and process.stdout is not None
        seen: list[dict[str, Any]] = []
        buffered = b""

        async def answer(request_id: int) -> dict[str, Any]:
            nonlocal buffered
            with anyio.fail_after(WAIT):
                while not any(m.get("id") == request_id for m in seen):
                    buffered += await process.stdout.receive()  # type: ignore[union-attr]
                    *lines, buffered = buffered.split(b"\n")
                    seen.extend(json.loads(line) for line in lines if line.strip())
            (found,) = [m for m in seen if m.get("id") == request_id]
            return found

        async def send(message: dict[str, Any]) -> None:
            await process.stdin.send(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")  # type: ignore[union-attr]

        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}
        await send({"id": 1, "method": "initialize", "params": hello})
        assert (await answer(1))["result"]["protocolVersion"] == "2025-06-18"
        await send({"method": "notifications/initialized"})
        await send({"id": 2, "method": "tools/list"})
        first = (await answer(2))["result"]
        assert (await wait_for_log(log, "first_start"))["answered"] == ["initialize", "tools/list"]
        assert (await wait_for_log(log, "warm_start_listing_checked"))["stale"] is False
        await send({"id": 3, "method": "tools/list"})
        assert (await answer(3))["result"] == first
        assert "raw_search_issues" in {t["name"] for t in first["tools"]}
        assert not [m for m in seen if m.get("method") == "notifications/tools/list_changed"]
        await process.stdin.aclose()
        with anyio.fail_after(WAIT):
            await process.wait()
