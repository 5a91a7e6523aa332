"""`state: {backend: memory}` (the default): one process's state, shared with no other replica."""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from hub.state.rate import WINDOW, RateDecision, decide, horizon


class MemoryState:
    """Rate windows are on `clock` (monotonic: nothing outside this process reads it)."""

    shared = False

    def __init__(self, key: bytes | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._key = key or secrets.token_bytes(32)
        self._used: dict[str, float] = {}
        self._clock = clock
        self._windows: dict[str, deque[float]] = {}
        self._next_sweep = clock() + WINDOW
        self._tasks: dict[str, tuple[dict[str, Any], float]] = {}  # key -> (record, wall-clock expiry)
        self._task_keys: dict[str, dict[str, None]] = {}  # identity -> its task keys, oldest first
        self._cancels: set[str] = set()
        self._answers: dict[str, dict[str, Any]] = {}
        self._beats: dict[str, float] = {}

    async def take(self, identity: str, per_minute: int) -> RateDecision:
        now = self._clock()
        stamps = self._windows.get(identity)
        if stamps is None:
            stamps = self._windows[identity] = deque()
        oldest_kept = horizon(now)
        while stamps and stamps[0] <= oldest_kept:
            stamps.popleft()
        decision = decide(stamps, now, per_minute)
        if decision.allowed:
            stamps.append(now)
        if now >= self._next_sweep:  # identities that stopped asking: forgotten, at most once per window
            self._windows = {name: kept for name, kept in self._windows.items() if kept and kept[-1] > oldest_kept}
            self._next_sweep = now + WINDOW
        return decision

    async def approved_pins(self) -> dict[str, Any]:
        return {}  # without shared state, servers.lock is the only record of approvals

    async def approve_pins(self, child: str, entry: dict[str, Any]) -> None:
        return None

    async def watch_pins(self, changed: Callable[[], Awaitable[None]]) -> None:
        return None

    async def seal_key(self) -> bytes:
        return self._key

    @property
    def known_key(self) -> bytes | None:
        return self._key

    async def use_nonce(self, nonce: str, expiry: float) -> bool:
        now = time.time()
        self._used = {n: e for n, e in self._used.items() if e >= now}
        if nonce in self._used:
            return False
        self._used[nonce] = expiry
        return True

    # ---- tasks (hub.relay.tasks): this process's own -------------------------------------------------------------

    async def put_task(self, key: str, record: dict[str, Any], keep_s: float) -> None:
        now = time.time()
        self._tasks = {k: v for k, v in self._tasks.items() if v[1] >= now}
        self._tasks[key] = (dict(record), now + keep_s)
        self._task_keys.setdefault(str(record.get("identity")), {})[key] = None

    async def get_task(self, key: str) -> dict[str, Any] | None:
        entry = self._tasks.get(key)
        if entry is None or entry[1] < time.time():
            return None
        return dict(entry[0])

    async def task_keys(self, identity: str) -> list[str]:
        keys = self._task_keys.get(identity, {})
        for gone in [k for k in keys if k not in self._tasks]:
            del keys[gone]
        return list(keys)

    async def cancel_task(self, key: str, keep_s: float) -> None:
        self._cancels.add(key)

    async def task_cancelled(self, key: str) -> bool:
        return key in self._cancels

    async def put_answers(self, key: str, answers: dict[str, Any], keep_s: float) -> None:
        self._answers[key] = {**self._answers.get(key, {}), **answers}

    async def take_answers(self, key: str) -> dict[str, Any]:
        return self._answers.pop(key, {})

    async def beat(self, replica: str, keep_s: float) -> None:
        self._beats[replica] = time.time() + keep_s

    async def alive(self, replica: str) -> bool:
        return self._beats.get(replica, 0.0) >= time.time()

    async def close(self) -> None:
        return None
