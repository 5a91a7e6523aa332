"""State that replicas of one hub must share (decision 011): the key that seals input rounds, the rounds' used
nonces, each identity's rate window (hub.state.rate), pin approvals, hub-owned tasks (hub.relay.tasks), and a `Vault`
for OAuth children's sign-ins (RedisState's; hub.upstream.oauth_vaults). `backend: memory` (the default) keeps it in
the process; `backend: redis` shares it, with the sealing key `state.key` or else one the first replica stores there.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from hub.state.memory import MemoryState
from hub.state.rate import RateDecision
from hub.state.redis import RedisState

__all__ = ["MemoryState", "RateDecision", "RedisState", "SharedState", "open_state"]


class SharedState(Protocol):
    @property
    def shared(self) -> bool:
        """Whether other replicas see this state (then `take` counts the requests of all of them)."""

    async def take(self, identity: str, per_minute: int) -> RateDecision:
        """Take one request of `identity` from its window of `per_minute` requests per minute (hub.state.rate), or
        refuse it, saying when to retry. Refused requests are not counted.

        Raises:
            errors.Unavailable: the shared state cannot be reached (Redis).
        """

    async def approved_pins(self) -> dict[str, Any]:
        """Each child's approved pins in the shared state (the lock file's entry for it), by child."""

    async def approve_pins(self, child: str, entry: dict[str, Any]) -> None:
        """Store a child's approved pins and tell every replica."""

    async def watch_pins(self, changed: Callable[[], Awaitable[None]]) -> None:
        """Call `changed` now and after every approval any replica stores, until cancelled."""

    async def seal_key(self) -> bytes:
        """The key input rounds are sealed with (the same on every replica sharing this state)."""

    @property
    def known_key(self) -> bytes | None:
        """The key, once `seal_key` has been awaited (the hub does at start); None before, or if it failed."""

    async def use_nonce(self, nonce: str, expiry: float) -> bool:
        """Mark a round's nonce used until `expiry` (wall clock); False if it was used already."""

    # ---- hub-owned tasks (hub.relay.tasks) -------------------------------------------------------------------

    async def put_task(self, key: str, record: dict[str, Any], keep_s: float) -> None:
        """Store a task's record (a JSON object naming its `identity`), kept `keep_s` seconds from now."""

    async def get_task(self, key: str) -> dict[str, Any] | None:
        """A task's record; None once it has expired, or if there never was one."""

    async def task_keys(self, identity: str) -> list[str]:
        """The keys of `identity`'s tasks still kept."""

    async def cancel_task(self, key: str, keep_s: float) -> None:
        """Mark a task's cancel asked, for the replica that runs it."""

    async def task_cancelled(self, key: str) -> bool: ...

    async def put_answers(self, key: str, answers: dict[str, Any], keep_s: float) -> None:
        """A 2026-07-28 host's answers to a task's input requests, for the replica that runs it."""

    async def take_answers(self, key: str) -> dict[str, Any]:
        """The answers stored for a task since the last take, removed."""

    async def beat(self, replica: str, keep_s: float) -> None:
        """`replica` runs tasks and is alive for `keep_s` seconds more."""

    async def alive(self, replica: str) -> bool:
        """Whether `replica` has beaten within its last `keep_s`."""

    async def close(self) -> None: ...


def open_state(backend: str, url: str | None, key: str | None) -> SharedState:
    """The shared state the configuration names (`state:`)."""
    raw = key.encode() if key else None
    if backend == "redis":
        assert url is not None
        return RedisState(url, raw)
    return MemoryState(raw)
