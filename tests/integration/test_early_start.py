"""Children start while the hub imports the SDK (hub/spawn.py): their first connection adopts that process, none
is started twice, and a hub stopped before it adopted them leaves none behind. On a warm start they start before
the config is even loaded (hub/early_launch.py), and a config that no longer loads ends them.

The child notes its pid and the wall clock at its first line, before its own imports; the hub logs `hub_started`
once its SDK is imported and its children are being connected. An early start is a note older than that line.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from hub.config import load_config
from hub.spawn import EarlySpawns, end_unadopted, launch_for
from hub.warm_start import Answers, cache_file
from tests.conftest import (
    REPO,
    WAIT,
    Host,
    connect_hub,
    hub_params,
    log_events,
    wait_for_file,
    wait_for_tools,
    write_config,
)
from tests.faults._helpers import (
    GONE_WAIT,
    SHUTDOWN_WAIT,
    fault_child,
    hub_command,
    kill_leftovers,
    proc,
    wait_all_gone,
)

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def _config(tmp_path: Path, *extra: str) -> tuple[Path, Path]:
    starts = tmp_path / "starts"
    child = fault_child("note_start", "--start-file", str(starts), *extra)
    return write_config(tmp_path, {"early": child}), starts


def _starts(starts: Path) -> list[tuple[int, float]]:
    return [(int(pid), float(at)) for pid, at in (line.split() for line in starts.read_text().splitlines())]


def _serve(config: Path, log: Path) -> subprocess.Popen[bytes]:
    """`hub serve` with a stdin held open: its end is the signal, not end of input."""
    return subprocess.Popen(hub_command(config, log), cwd=REPO, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _seconds(timestamp: str) -> float:
    return datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def test_check_adopts_the_child_it_started_before_importing_the_sdk(tmp_path: Path) -> None:
    config, starts = _config(tmp_path)
    log = tmp_path / "hub.log"
    command = [sys.executable, "-m", "hub", "check", "--config", str(config), "--log-file", str(log),
               "--log-format", "json", "--log-level", "info"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=WAIT * 2)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1/1 servers ready" in result.stdout
    noted = _starts(starts)
    assert len(noted) == 1, f"one process, adopted by the connection, not a second one: {noted}"
    (hub_started,) = log_events(log, "hub_started")
    assert noted[0][1] < _seconds(hub_started["timestamp"]), "the child started before the SDK was imported"


async def test_a_hub_stopped_while_it_imports_the_sdk_ends_the_children_it_started(tmp_path: Path) -> None:
    # A child stuck in its start-up ignores the end of its stdin: only the hub's signal ends it.
    config, starts = _config(tmp_path, "--stuck")
    log = tmp_path / "hub.log"
    process = _serve(config, log)
    child = None
    try:
        await wait_for_file(starts)  # the child's first line: the hub is, most likely, still importing
        child = proc(_starts(starts)[0][0])
        assert child is not None
        process.send_signal(signal.SIGTERM)
        try:
            await anyio.to_thread.run_sync(lambda: process.wait(timeout=SHUTDOWN_WAIT))
        except subprocess.TimeoutExpired:
            pytest.fail(f"the hub did not exit within {SHUTDOWN_WAIT}s of SIGTERM")
        left = await wait_all_gone([child], GONE_WAIT)
        assert not left, f"the early child {child.pid} outlived its hub"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=WAIT)
        assert process.stdin is not None
        process.stdin.close()
        if child is not None:
            kill_leftovers([child])


async def _first_run(config: Path, log: Path, env: dict[str, str] | None = None) -> None:
    """A run that keeps the complete listing for the next start (written once every server has settled)."""
    host = Host()
    async with connect_hub(hub_params(config, log, env=env), host) as client:
        await wait_for_tools(client, host, {"early_echo", "early_pid"})
        path = cache_file(config)
        assert path is not None
        with anyio.fail_after(WAIT):
            while (kept := Answers.load(path)) is None or "early_pid" not in kept.listing.decode():  # noqa: ASYNC110
                await anyio.sleep(0.05)  # another process writes the file


async def test_a_warm_start_starts_its_children_before_loading_the_config_and_adopts_them(tmp_path: Path) -> None:
    config, starts = _config(tmp_path)
    await _first_run(config, tmp_path / "first.log")
    log = tmp_path / "warm.log"
    async with connect_hub(hub_params(config, log)) as client:
        result = await client.call_tool("early_pid", {})
    (early,) = log_events(log, "children_started_early")
    assert (early["servers"], early["ended"]) == (["early"], [])
    first, warm = _starts(starts)  # one process per run: the warm start's connection took the one started early
    assert int(result.content[0].text) == warm[0] != first[0]  # type: ignore[union-attr]


async def test_a_warm_start_whose_config_no_longer_loads_ends_the_children_it_started(tmp_path: Path) -> None:
    # The disabled server's ${HUB_TEST_TOKEN} is expanded by the loader (every value is), not by the early reader.
    starts, stuck = tmp_path / "starts", tmp_path / "stuck"
    servers = {
        "early": fault_child("note_start", "--start-file", str(starts), "--stuck-if", str(stuck)),
        "resting": {"command": "python3", "enabled": False, "env": {"TOKEN": "${HUB_TEST_TOKEN}"}},
    }
    config = write_config(tmp_path, servers)
    await _first_run(config, tmp_path / "first.log", {"HUB_TEST_TOKEN": "t"})
    stuck.touch()  # from now on the child ignores the end of its stdin: only the hub's signal ends it
    second = _serve_once(config, tmp_path / "warm.log", {})
    assert second.returncode == 2
    assert "HUB_TEST_TOKEN" in second.stderr
    started = _starts(starts)
    # The hub waits for a child to exit after closing its stdin before it signals it: time enough for its note.
    assert len(started) == 2, "the warm start started its child before it found the config invalid"
    child = proc(started[1][0])
    left = await wait_all_gone([child] if child is not None else [], GONE_WAIT)
    if left:
        kill_leftovers(left)
    assert not left, "a child started before the config load outlived its hub"


def _serve_once(config: Path, log: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`hub serve` on stdio until its host hangs up: an initialize and a tools/list, then the end of input."""
    environ = {k: v for k, v in os.environ.items() if k != "HUB_TEST_TOKEN"} | env
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    text = "".join(json.dumps(r) + "\n" for r in requests)
    return subprocess.run(hub_command(config, log), cwd=REPO, input=text, capture_output=True, text=True,
                          env=environ, timeout=WAIT * 2)


async def test_a_child_started_from_the_file_but_started_otherwise_by_the_config_is_ended(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    config = write_config(
        tmp_path, {name: fault_child("note_start", "--start-file", str(starts)) for name in ("same", "changed")}
    )
    loaded = load_config(config)
    launches = {name: launch_for(server) for name, server in loaded.config.servers.items()}
    # As if the file had been edited between the early reading and the load: "changed" was started stuck.
    changed = launches["changed"]
    launches["changed"] = dataclasses.replace(changed, argv=(*changed.argv, "--stuck"))
    spawns = EarlySpawns()
    taken = None
    try:
        await spawns.start_launches(launches)
        pids = {name: spawned.process.pid for name, spawned in spawns.waiting().items()}
        await wait_for_file(starts)
        assert await spawns.reconcile(loaded) == ["changed"]
        assert spawns.take("changed", loaded.config.servers["changed"]) is None
        taken = spawns.take("same", loaded.config.servers["same"])
        assert taken is not None and taken.process.pid == pids["same"]
        assert taken.process.returncode is None
        stale = proc(pids["changed"])
        assert stale is None or not await wait_all_gone([stale], GONE_WAIT)
    finally:
        await spawns.aclose()
        if taken is not None:
            await end_unadopted(taken)
