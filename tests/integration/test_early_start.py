"""Children start while the hub imports the SDK (hub/spawn.py): their first connection adopts that process, none
is started twice, and a hub stopped before it adopted them leaves none behind.

The child notes its pid and the wall clock at its first line, before its own imports; the hub logs `hub_started`
once its SDK is imported and its children are being connected. An early start is a note older than that line.
"""

from __future__ import annotations

import datetime
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.conftest import REPO, WAIT, log_events, wait_for_file, write_config
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
