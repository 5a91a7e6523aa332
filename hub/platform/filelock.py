"""An exclusive lock on a file, between the processes of one machine: `flock` where there is one, the C runtime's
byte-range lock on Windows. The system releases it when its holder ends, however it ends, so a hub killed while
holding it never blocks the next one.

The lock is polled (neither call can wait asynchronously) every POLL seconds, for at most `wait`: a process that
holds it longer makes the waiter give up with `Held`, never hang.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

POLL = 0.05


class Held(Exception):
    """Another process held the lock for longer than the caller would wait."""


@asynccontextmanager
async def file_lock(path: Path, wait: float, waiting: Callable[[], None] | None = None) -> AsyncIterator[None]:
    """Held while the body runs; `path` is created (0600) if it is not there, and left in place afterwards (removing
    it would let two processes lock two different files of one name). `waiting` is called once if another process
    holds it when asked."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    locked = False
    try:
        with anyio.move_on_after(wait):
            if not _lock(descriptor) and waiting is not None:
                waiting()
            while not _lock(descriptor):  # noqa: ASYNC110 - no wake-up exists for another process's unlock
                await anyio.sleep(POLL)
            locked = True
        if not locked:
            raise Held(f"{path} was held by another process for more than {wait:g} s")
        try:
            yield
        finally:
            _lock(descriptor, release=True)
    finally:
        os.close(descriptor)


def _lock(descriptor: int, release: bool = False) -> bool:
    """Take the lock if no other process holds it (whether it was taken), or `release` it."""
    # Imported here, not at the top: a module of hub/ imports on every system (tests/integration/test_portable.py
    # takes fcntl away), and only a refresh of a sign-in kept in files ever takes this lock.
    if sys.platform == "win32":
        import msvcrt

        os.lseek(descriptor, 0, os.SEEK_SET)
        try:
            msvcrt.locking(descriptor, msvcrt.LK_UNLCK if release else msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(descriptor, fcntl.LOCK_UN if release else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
