"""No orphans: however the hub ends (SIGKILL, SIGTERM, SIGINT, stdin EOF), every child process and every descendant
of one is gone within a few seconds, checked in the process table (/proc), with bounded polling.

The hub is spawned directly here (not through the SDK's client) because the test needs its pid and its stdin.
Whatever a failing check leaves behind is killed by the test, so that no run leaves processes on the machine.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from tests.faults._helpers import (
    GONE_WAIT,
    KITCHEN,
    SHUTDOWN_WAIT,
    Proc,
    alive,
    descendants,
    fault_child,
    hub_command,
    kill_leftovers,
    proc,
    wait_all_gone,
    wait_log_event,
)
from tests.support.children import write_config
from tests.support.paths import REPO
from tests.support.waits import WAIT, wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


@contextmanager
def spawned_hub(config: Path, log_file: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`hub serve` with a stdin we hold open (closing it is one of the ways to end the hub)."""
    process = subprocess.Popen(
        hub_command(config, log_file),
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=WAIT)
        if process.stdin:
            process.stdin.close()


def _start(tmp_path: Path, detach: bool = False) -> tuple[Path, Path, Path]:
    pid_file = tmp_path / "spawner.pids"
    spawner_args = ["--pid-file", str(pid_file), *(["--detach"] if detach else [])]
    servers = {
        "kitchen": KITCHEN,
        "stuck": fault_child("hang"),
        "spawner": fault_child("spawner", *spawner_args),
    }
    return write_config(tmp_path, servers), tmp_path / "hub.log", pid_file


async def _running_tree(process: subprocess.Popen[bytes], log_file: Path, pid_file: Path) -> dict[int, Proc]:
    """Once the three children are ready: every process below the hub, and the spawner's grandchildren."""
    for name in ("kitchen", "stuck", "spawner"):
        await wait_log_event(log_file, "child_ready", child=name)
    await wait_for_file(pid_file)
    tree = descendants(process.pid)
    for pid in _pids(pid_file):
        found = proc(pid)
        assert found is not None, f"spawner's process {pid} is not running"
        tree[pid] = found
    commands = " / ".join(p.cmdline for p in tree.values())
    assert sum("sleep 300" in p.cmdline for p in tree.values()) >= 1, commands
    for module in ("tests.children.kitchen", "tests.faults.children.hang", "tests.faults.children.spawner"):
        assert module in commands, f"{module} not running under the hub: {commands}"
    return tree


def _pids(pid_file: Path) -> list[int]:
    """The spawner's "PID GRANDCHILD [DETACHED]"."""
    return [int(p) for p in pid_file.read_text().split()]


def _describe(left: list[Proc]) -> str:
    return "; ".join(f"{p.pid}: {p.cmdline}" for p in left)


async def test_sigkill_of_the_hub_leaves_no_child_or_grandchild(tmp_path: Path) -> None:
    config, log_file, pid_file = _start(tmp_path)
    with spawned_hub(config, log_file) as process:
        tree = await _running_tree(process, log_file, pid_file)
        await _sigkill_leaves_nothing(process, tree)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "stdin EOF"])
async def test_graceful_shutdown_is_bounded_and_leaves_nothing(tmp_path: Path, how: str) -> None:
    config, log_file, pid_file = _start(tmp_path)
    with spawned_hub(config, log_file) as process:
        tree = await _running_tree(process, log_file, pid_file)
        try:
            if how == "stdin EOF":
                assert process.stdin is not None
                process.stdin.close()
            else:
                process.send_signal(getattr(signal, how))
            try:
                await anyio.to_thread.run_sync(lambda: process.wait(timeout=SHUTDOWN_WAIT))
            except subprocess.TimeoutExpired:
                pytest.fail(f"the hub did not exit within {SHUTDOWN_WAIT}s of {how} (its stdin still open)")
            left = await wait_all_gone(tree.values(), GONE_WAIT)
            assert not left, f"still running after the hub exited on {how}: {_describe(left)}"
        finally:
            kill_leftovers(tree.values())


async def test_sigkill_also_ends_a_grandchild_that_left_the_childs_process_group(tmp_path: Path) -> None:
    """A descendant that called setsid() (daemonizing tools do) is still a descendant of the child."""
    config, log_file, pid_file = _start(tmp_path, detach=True)
    with spawned_hub(config, log_file) as process:
        tree = await _running_tree(process, log_file, pid_file)
        detached = proc(_pids(pid_file)[2])
        assert detached is not None and alive(detached)
        await _sigkill_leaves_nothing(process, tree)


async def _sigkill_leaves_nothing(process: subprocess.Popen[bytes], tree: dict[int, Proc]) -> None:
    """SIGKILL the hub; every process of `tree` must be gone soon after (leftovers are killed either way)."""
    try:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=WAIT)
        left = await wait_all_gone(tree.values(), GONE_WAIT)
        assert not left, f"still running {GONE_WAIT}s after the hub was SIGKILLed: {_describe(left)}"
    finally:
        kill_leftovers(tree.values())
