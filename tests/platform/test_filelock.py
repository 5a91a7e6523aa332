"""hub.platform.filelock: one holder at a time across processes, a bounded wait, and a lock its dead holder no
longer holds (the system releases it), so a hub killed mid-refresh never blocks the next."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from hub.platform.filelock import Held, file_lock

pytestmark = pytest.mark.anyio

HOLDER = """
import sys, anyio
from hub.platform.filelock import file_lock
async def main():
    async with file_lock(__import__("pathlib").Path(sys.argv[1]), 5):
        print("held", flush=True)
        sys.stdin.read()
anyio.run(main)
"""


async def test_a_second_taker_gives_up_after_its_wait(tmp_path: Path) -> None:
    path = tmp_path / "record.lock"
    async with file_lock(path, 5):
        with pytest.raises(Held, match="held by another process"):
            async with file_lock(path, 0.2):
                pass
    async with file_lock(path, 0.2):  # released on leaving
        assert path.exists()


async def test_a_waiting_taker_gets_it_when_the_holder_lets_go(tmp_path: Path) -> None:
    path = tmp_path / "record.lock"
    order: list[str] = []
    release = anyio.Event()

    async def holder(started: anyio.Event) -> None:
        async with file_lock(path, 5):
            order.append("held")
            started.set()
            await release.wait()
            order.append("released")

    async with anyio.create_task_group() as tg:
        started = anyio.Event()
        tg.start_soon(holder, started)
        await started.wait()

        async def waiter() -> None:
            async with file_lock(path, 10):
                order.append("taken")

        tg.start_soon(waiter)
        release.set()
    assert order == ["held", "released", "taken"]


async def test_the_lock_of_a_killed_holder_is_free(tmp_path: Path) -> None:
    path = tmp_path / "record.lock"
    process = await anyio.open_process([sys.executable, "-c", HOLDER, str(path)], cwd=Path.cwd())
    try:
        assert process.stdout is not None
        said = b""
        with anyio.fail_after(30):
            while not said.endswith(b"\n"):
                said += await process.stdout.receive()
        assert said == b"held\n"
        with pytest.raises(Held):
            async with file_lock(path, 0.2):
                pass
        process.kill()
        with anyio.fail_after(30):
            await process.wait()
        async with file_lock(path, 5):
            pass
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
