"""During start-up a listing waits (bounded) for the servers still starting: hub.startup_listing_wait.

A host that ignores tools/list_changed keeps its first listing; it must not be `hub_health` alone because the
servers were still booting. The slow child here is gated on a file, and the gate opens only once the hub has logged
that a listing is waiting, so a listing answered before that cannot hold the slow child's tools. The hub is a real
subprocess (no warm-start cache: every config is new), the host the SDK's client over stdio or HTTP.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from pydantic import TypeAdapter

from tests.support.children import python_child, write_config
from tests.support.logs import log_events, wait_for_log
from tests.support.mcp_client import Host, connect_host, connect_hub, hub_params
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http

pytestmark = pytest.mark.anyio

RAW: Any = TypeAdapter(dict[str, Any])
SLOW = {"slow_echo", "slow_pid"}
FAST = {"k_add"}


def setup(tmp_path: Path, **hub: Any) -> tuple[Path, Path]:
    """A gated child ("slow": starts once the gate file exists) and a kitchen child ("k") that starts at once."""
    gate = tmp_path / "gate"
    slow = {
        "command": sys.executable,
        "args": ["-m", "tests.faults.children.slow_start", "--gate", str(gate)],
        "cwd": str(REPO),
    }
    config = write_config(tmp_path, {"slow": slow, "k": python_child("tests.children.kitchen", "--tools", "add")}, hub)
    return config, gate


async def test_a_first_listing_waits_for_a_server_still_starting_while_calls_go_on(tmp_path: Path) -> None:
    config, gate = setup(tmp_path, startup_listing_wait=60)  # longer than this test, on any machine
    log = tmp_path / "hub.log"
    host = Host()
    async with connect_hub(hub_params(config, log), host) as client:
        listed: list[set[str]] = []

        async def list_tools() -> None:
            listed.append({t.name for t in (await client.list_tools()).tools})

        async with anyio.create_task_group() as tg:
            tg.start_soon(list_tools)
            waiting = await wait_for_log(log, "listing_waits_for_start")
            assert "slow" in waiting["servers"]
            # Nothing else waits: a call to the server that is up is answered while the listing is held.
            await wait_for_log(log, "child_ready")  # the kitchen child ("k"; "slow" is gated)
            # Sent raw: the SDK client's call_tool would first list tools itself, to validate the result.
            params = types.CallToolRequestParams(name="k_add", arguments={"a": 2, "b": 3})
            result = await client.session.send_request(types.CallToolRequest(params=params), RAW)
            assert result["isError"] is False
            assert listed == []  # still held: the slow server has not started
            await anyio.Path(gate).touch()
        assert listed and SLOW | FAST | {"hub_health"} <= listed[0]
        # Both servers came up while the listing was held, and the host was not told to list again: its first
        # listing has them all. (A ping's answer comes after anything the hub wrote before it.)
        await client.send_ping()
        assert not list_changes(host)


def list_changes(host: Host) -> list[Any]:
    return [n for n in host.notifications if isinstance(n, types.ToolListChangedNotification)]


async def test_a_listing_after_the_wait_ran_out_is_answered_with_what_is_up(tmp_path: Path) -> None:
    wait = 4.0  # counted from the hub's process start, which comes after `began`
    config, gate = setup(tmp_path, startup_listing_wait=wait)  # the gate opens only after the listing
    log = tmp_path / "hub.log"
    host = Host()
    began = time.monotonic()
    async with connect_hub(hub_params(config, log), host) as client:
        with anyio.fail_after(30):
            names = {t.name for t in (await client.list_tools()).tools}
        answered = time.monotonic() - began
        assert not SLOW & names
        assert "hub_health" in names
        # Held for the whole wait: never answered sooner (that would be the listing before this feature).
        assert answered >= wait
        # Once the wait is over, a server coming up is announced as ever: list on each list_changed until it is in.
        await anyio.Path(gate).touch()
        seen = 0
        with anyio.fail_after(30):
            while True:
                while len(list_changes(host)) == seen:
                    await host.changed.wait()
                seen = len(list_changes(host))
                if {t.name for t in (await client.list_tools()).tools} >= SLOW:
                    break


async def test_no_wait_answers_at_once(tmp_path: Path) -> None:
    config, gate = setup(tmp_path, startup_listing_wait=0)
    log = tmp_path / "hub.log"
    async with connect_hub(hub_params(config, log)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert not SLOW & names  # the gate is shut: only what was up
        await anyio.Path(gate).touch()
    assert not log_events(log, "listing_waits_for_start")


async def test_an_http_host_s_first_listing_waits_too(tmp_path: Path) -> None:
    config, gate = setup(tmp_path, startup_listing_wait=60)
    log = tmp_path / "hub.log"
    async with serve_hub_http(config, log) as url, connect_host(url) as client:
        listed: list[set[str]] = []

        async def list_tools() -> None:
            listed.append({t.name for t in (await client.list_tools()).tools})

        async with anyio.create_task_group() as tg:
            tg.start_soon(list_tools)
            await wait_for_log(log, "listing_waits_for_start")
            assert listed == []
            await anyio.Path(gate).touch()
        assert listed[0] >= SLOW | FAST
