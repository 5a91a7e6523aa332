"""A hub SIGKILLed at any moment of its first second leaves no child and no grandchild behind.

The children (tests/fuzz/stubborn_child.py) ignore SIGTERM and the end of their stdin, and each starts a grandchild
that ignores SIGTERM too: only the orphan watchdog, in place before the first child is spawned, can end them. The
hub is killed at fixed moments after it was spawned, and at the instant its first child shows in the process
table (the narrowest window: a child the hub may not have registered yet). Every process carrying the run's marker
in its argv must be gone GONE_WITHIN seconds after the kill (bounded polling); whatever is left is killed by the
test either way.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
import uuid
from contextlib import suppress
from pathlib import Path

import anyio
import psutil
import pytest

from tests.fuzz._drive import hub_command
from tests.support.children import write_config
from tests.support.paths import REPO

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

# Seconds after the hub is spawned; "first child" / "first grandchild": the instant one is first seen.
MOMENTS: list[float | str] = [0.05, 0.1, 0.2, 0.3, 0.5, 0.8, "first child", "first grandchild"]
GONE_WITHIN = 5.0
CHILDREN = 2


def marked(marker: str, grandchildren_only: bool = False) -> list[psutil.Process]:
    """The processes with `marker` in their argv (only the grandchildren, if asked)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info.get("cmdline") or []
        if marker in cmdline and (not grandchildren_only or "--grandchild" in cmdline):
            found.append(process)
    return found


def kill_all(processes: list[psutil.Process]) -> None:
    for process in processes:
        with suppress(psutil.Error):
            process.kill()


@pytest.mark.parametrize("moment", MOMENTS, ids=[str(m) for m in MOMENTS])
async def test_a_hub_killed_early_leaves_no_child_behind(tmp_path: Path, moment: float | str) -> None:
    marker = f"fz-early-kill-{uuid.uuid4().hex}"
    child = {
        "command": sys.executable,
        "args": ["-m", "tests.fuzz.stubborn_child", "--marker", marker],
        "cwd": str(REPO),
    }
    config = write_config(tmp_path, {f"stubborn{n}": dict(child) for n in range(CHILDREN)})
    log_file = tmp_path / "hub.log"
    with log_file.with_suffix(".err").open("wb") as err:
        hub = await anyio.open_process(hub_command(config, log_file), cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    spawned = time.monotonic()  # its stdin, a pipe, stays open: the hub does not end for lack of a host
    seen: dict[int, str] = {}
    try:
        with anyio.fail_after(10):
            if isinstance(moment, str):
                grandchild = moment == "first grandchild"
                while not (found := marked(marker, grandchild)):
                    assert hub.returncode is None, "the hub exited before starting its children"
                    await anyio.sleep(0.002)
                seen.update((p.pid, str(p.info.get("cmdline"))) for p in found)
            else:
                await anyio.sleep(max(0.0, spawned + float(moment) - time.monotonic()))
        hub.send_signal(signal.SIGKILL)
        killed_at = time.monotonic() - spawned
        with anyio.fail_after(10):
            await hub.wait()
        left: list[psutil.Process] = []
        deadline = time.monotonic() + GONE_WITHIN
        while time.monotonic() < deadline:
            left = marked(marker)
            seen.update((p.pid, str(p.info.get("cmdline"))) for p in left)
            if not left:
                break
            await anyio.sleep(0.05)
        print(f"killed at {killed_at:.3f}s; processes seen after: {len(seen)}; left after {GONE_WITHIN}s: {len(left)}")
        assert not left, f"still running {GONE_WITHIN}s after the hub was SIGKILLed at {killed_at:.2f}s: {left}"
    finally:
        if hub.returncode is None:
            hub.kill()
            with anyio.move_on_after(10, shield=True):
                await hub.wait()
        if hub.stdin is not None:
            await hub.stdin.aclose()
        kill_all(marked(marker))
