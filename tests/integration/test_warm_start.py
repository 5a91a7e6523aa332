"""Warm start (hub/warm_start.py): a stdio host's initialize and tools/list answered from the last run's cache.

The child here is gated: it does not start until the test creates a file, so anything the host gets before that
cannot have come from the child this time. The host is the SDK's client over stdio; the hub a real subprocess.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from hub.warm_start import Answers, cache_file
from tests.conftest import (
    REPO,
    WAIT,
    Host,
    connect_hub,
    hub_params,
    log_events,
    python_child,
    wait_for_log,
    wait_for_tools,
    write_config,
)

pytestmark = pytest.mark.anyio

TOOLS = {"hub_health", "slow_echo", "slow_pid", "k_add", "k_sample"}


def setup(tmp_path: Path, **slow: Any) -> tuple[Path, Path]:
    """A config with a gated child ("slow": starts once the gate file exists) and a kitchen child ("k")."""
    gate = tmp_path / "gate"
    config = write_config(
        tmp_path,
        {
            "slow": {
                "command": sys.executable,
                "args": ["-m", "tests.faults.children.slow_start", "--gate", str(gate)],
                "cwd": str(REPO),
                **slow,
            },
            "k": python_child("tests.children.kitchen", "--tools", "add,sample"),
        },
    )
    return config, gate


async def first_run(tmp_path: Path, config: Path, gate: Path) -> list[str]:
    """A run with every child up: the host's complete tools/list is kept for the next start."""
    await anyio.Path(gate).touch()
    host = Host()
    async with connect_hub(hub_params(config, tmp_path / "first.log"), host) as client:
        tools = await wait_for_tools(client, host, TOOLS)
        # A first start may answer the listing before the SDK is loaded (hub/first_start.py); the file is written
        # once every server has settled, so the host stays until it is there.
        path = cache_file(config)
        assert path is not None
        with anyio.fail_after(WAIT):
            while not _keeps(path, TOOLS):  # noqa: ASYNC110 - another process writes the file
                await anyio.sleep(0.05)
    await anyio.Path(gate).unlink()
    return sorted(t.name for t in tools)


def _keeps(path: Path, names: set[str]) -> bool:
    kept = Answers.load(path)
    return kept is not None and names <= {t["name"] for t in json.loads(kept.listing)["tools"]}


async def kept_by_a_first_run(tmp_path: Path) -> tuple[Path, Path, list[str], Path, Answers]:
    """`setup` and `first_run`: the config, its gate, the listing, the cache file and what it holds."""
    config, gate = setup(tmp_path)
    listed = await first_run(tmp_path, config, gate)
    path = cache_file(config)
    assert path is not None
    kept = Answers.load(path)
    assert kept is not None
    return config, gate, listed, path, kept


async def test_the_next_start_answers_from_the_cache_and_a_call_waits_for_its_child(tmp_path: Path) -> None:
    config, gate = setup(tmp_path)
    listed = await first_run(tmp_path, config, gate)
    path = cache_file(config)
    assert path is not None and path.exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    log = tmp_path / "second.log"
    host = Host()
    async with connect_hub(hub_params(config, log), host) as client:
        # The gated child cannot be up: its tools come from the cache.
        assert sorted(t.name for t in (await client.list_tools()).tools) == listed
        answered = await wait_for_log(log, "warm_start")
        assert answered["answered"] == ["initialize", "tools/list"]

        async with anyio.create_task_group() as tg:
            results: list[Any] = []

            async def call() -> None:
                results.append(await client.call_tool("slow_echo", {"text": "after the gate"}))

            tg.start_soon(call)
            await wait_for_log(log, "call_waits_for_start", lambda e: e["tool"] == "slow_echo")
            await anyio.Path(gate).touch()
        assert not results[0].is_error and results[0].content[0].text == "after the gate"

        # The SDK session knows the host from the replayed initialize: a child's sampling request reaches it.
        sampled = await client.call_tool("k_sample", {"prompt": "hi"})
        assert host.sampled and "host says hi" in sampled.content[0].text
        checked = await wait_for_log(log, "warm_start_listing_checked")
    assert checked["stale"] is False
    assert not log_events(log, "warm_start_mismatch")


async def test_a_stale_cache_is_corrected_and_rewritten(tmp_path: Path) -> None:
    config, gate, listed, path, kept = await kept_by_a_first_run(tmp_path)
    # As if the last run had listed a tool that is gone now, and had another server version.
    listing = json.loads(kept.listing)
    listing["tools"].append({"name": "slow_gone", "inputSchema": {"type": "object"}})
    initialize = {**kept.initialize, "serverInfo": {**kept.initialize["serverInfo"], "version": "0.0.0-stale"}}
    Answers(kept.requested, initialize, json.dumps(listing).encode()).save(path)

    log = tmp_path / "second.log"
    host = Host()
    async with connect_hub(hub_params(config, log), host) as client:
        assert client.server_info is not None and client.server_info.version == "0.0.0-stale"
        assert "slow_gone" in {t.name for t in (await client.list_tools()).tools}
        await anyio.Path(gate).touch()
        checked = await wait_for_log(log, "warm_start_listing_checked")
        assert checked["stale"] is True
        # The host is told to list again, and the listing is the hub's own.
        await host.wait_for(
            lambda: any(n.method == "notifications/tools/list_changed" for n in host.notifications), "list_changed"
        )
        assert sorted(t.name for t in (await client.list_tools()).tools) == listed
    mismatch = log_events(log, "warm_start_mismatch")
    assert mismatch and mismatch[0]["differs"] == ["serverInfo"]
    rewritten = Answers.load(path)
    assert rewritten is not None and rewritten.initialize["serverInfo"]["version"] != "0.0.0-stale"
    assert "slow_gone" not in rewritten.listing.decode()


async def test_no_warm_start_when_asked_or_when_the_config_changed(tmp_path: Path) -> None:
    config, gate = setup(tmp_path)
    await first_run(tmp_path, config, gate)
    await anyio.Path(gate).touch()
    log = tmp_path / "off.log"
    async with connect_hub(hub_params(config, log, "--no-warm-start")) as client:
        await client.list_tools()
    before = cache_file(config)
    config.write_text(config.read_text() + "\n# edited\n")
    assert cache_file(config) != before
    changed = tmp_path / "changed.log"
    async with connect_hub(hub_params(config, changed)) as client:
        await client.list_tools()
    assert not log_events(log, "warm_start") and not log_events(changed, "warm_start")
    # The changed config is a first start: initialize answered at once, as the SDK would (hub/first_start.py).
    assert not log_events(log, "first_start") and log_events(changed, "first_start")


async def test_a_cached_tool_whose_server_does_not_come_up_is_an_error_naming_it(tmp_path: Path) -> None:
    config, gate = setup(tmp_path, connect_timeout=5)
    await first_run(tmp_path, config, gate)
    log = tmp_path / "second.log"
    async with connect_hub(hub_params(config, log)) as client:
        assert "slow_echo" in {t.name for t in (await client.list_tools()).tools}  # from the cache
        result = await client.call_tool("slow_echo", {"text": "never"})  # waits out slow's connect_timeout
    assert result.is_error
    text = result.content[0].text
    assert "'slow_echo' is not available" in text and "server 'slow'" in text and "within 5s" in text


async def test_a_changed_initialize_alone_is_rewritten_even_if_the_host_never_lists_again(tmp_path: Path) -> None:
    config, gate, listed, path, kept = await kept_by_a_first_run(tmp_path)
    stale = {**kept.initialize, "serverInfo": {**kept.initialize["serverInfo"], "version": "0.0.0-stale"}}
    Answers(kept.requested, stale, kept.listing).save(path)

    log = tmp_path / "second.log"
    async with connect_hub(hub_params(config, log)) as client:
        assert sorted(t.name for t in (await client.list_tools()).tools) == listed  # the one listing it asks for
        await anyio.Path(gate).touch()
        checked = await wait_for_log(log, "warm_start_listing_checked")
    assert checked["stale"] is False, "the listing was right: the host is not asked to list again"
    assert log_events(log, "warm_start_mismatch")[0]["differs"] == ["serverInfo"]
    rewritten = Answers.load(path)
    assert rewritten is not None and rewritten.initialize["serverInfo"]["version"] != "0.0.0-stale"
    assert rewritten.listing == kept.listing


async def test_hub_health_never_waits_for_a_starting_server_without_a_prefix(tmp_path: Path) -> None:
    gate = tmp_path / "gate"  # never opened: the server stays starting
    slow = {"command": sys.executable, "args": ["-m", "tests.faults.children.slow_start", "--gate", str(gate)]}
    config = write_config(tmp_path, {"slow": {**slow, "cwd": str(REPO), "prefix": ""}})
    log = tmp_path / "hub.log"
    async with connect_hub(hub_params(config, log)) as client:
        health = await client.call_tool("hub_health", {})
    assert not health.is_error and health.structured_content is not None
    assert [s["state"] for s in health.structured_content["servers"]] == ["starting"]
    assert not log_events(log, "call_waits_for_start"), "the builtin is served before any wait"
