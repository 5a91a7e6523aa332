"""`state: {backend: redis, url: redis://...}`: the state in Redis (`redis.asyncio`), shared by every replica that
names the same Redis. Every operation is bounded (REDIS_TIMEOUT); a Redis that cannot be reached refuses with an
error naming it (`errors.Unavailable`), never a hang and never an unchecked accept.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog

from hub.protocol import errors
from hub.state.rate import TAKE_SCRIPT, TAKEN, WINDOW, RateDecision

REDIS_TIMEOUT = 5.0
_log = structlog.get_logger("hub")
KEY_NAME = "hub:state:seal-key"
NONCE_PREFIX = "hub:state:nonce:"
WINDOW_PREFIX = "hub:state:window:"  # a sorted set per identity: its requests in the window (hub.state.rate)
OAUTH_KEY = "hub:state:oauth"  # a hash: record name -> a sealed OAuth record (hub.upstream.oauth)
PINS_KEY = "hub:state:pins"  # a hash: child -> its approved pins (the lock file's entry for it, as JSON)
PINS_CHANNEL = "hub:state:pins"  # published to on every approval: replicas read the pins again
LOCK_PREFIX = "hub:state:lock:"  # a refresh of one OAuth record in progress (hub.upstream.oauth_refresh)
LOCK_SECONDS = 30.0
LOCK_POLL = 0.05
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
TASK_PREFIX = "hub:state:task:"  # a hub-owned task's record, as JSON, expiring with the task (hub.relay.tasks)
TASKS_OF_PREFIX = "hub:state:tasks-of:"  # a set per identity: the keys of its tasks
TASK_CANCEL_PREFIX = "hub:state:task-cancel:"  # a task whose cancel was asked on a replica that does not run it
TASK_ANSWERS_PREFIX = "hub:state:task-answers:"  # a hash: a 2026-07-28 host's answers for a task's input requests
REPLICA_PREFIX = "hub:state:replica:"  # a replica running tasks, expiring unless it beats again
RESUBSCRIBE_BACKOFF = (0.5, 10.0)  # seconds between attempts to listen again after Redis went away


class RedisState:
    """Each used nonce is a key of its own that expires with its round (SET NX EX: one atomic check-and-mark)."""

    shared = True

    def __init__(self, url: str, key: bytes | None = None, clock: Callable[[], float] = time.time) -> None:
        import redis.asyncio

        self.url = url
        self._client: Any = redis.asyncio.from_url(url, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=5)
        self._key = key
        self._clock = clock
        self._take: Any = self._client.register_script(TAKE_SCRIPT)  # EVALSHA, loaded again if Redis lost it
        self._member_prefix = secrets.token_hex(6)  # members unique across replicas taking at the same instant
        self._sequence = itertools.count()

    async def seal_key(self) -> bytes:
        if self._key is None:
            fresh = secrets.token_bytes(32)
            await self._call(self._client.set, KEY_NAME, fresh, nx=True)
            stored = await self._call(self._client.get, KEY_NAME)
            self._key = bytes(stored) if stored else fresh
        return self._key

    @property
    def known_key(self) -> bytes | None:
        return self._key

    async def use_nonce(self, nonce: str, expiry: float) -> bool:
        seconds = max(1, int(expiry - time.time()) + 1)
        return bool(await self._call(self._client.set, NONCE_PREFIX + nonce, b"1", nx=True, ex=seconds))

    async def take(self, identity: str, per_minute: int) -> RateDecision:
        """The time is this replica's wall clock: replicas' clocks must agree (NTP) to the precision wanted."""
        now = self._clock()
        member = f"{now!r}:{self._member_prefix}{next(self._sequence)}"
        args = (repr(now), per_minute, member, repr(WINDOW))
        taken, wait_ms = await self._call(self._take, keys=(WINDOW_PREFIX + identity,), args=args)
        return TAKEN if taken else RateDecision(False, int(wait_ms) / 1000)

    async def approved_pins(self) -> dict[str, Any]:
        # A value that is not ours is left out (the lock file's entry, if any, stays in force).
        return _json_values(await self._call(self._client.hgetall, PINS_KEY))

    async def approve_pins(self, child: str, entry: dict[str, Any]) -> None:
        await self._call(self._client.hset, PINS_KEY, child, json.dumps(entry, sort_keys=True))
        await self._call(self._client.publish, PINS_CHANNEL, child)

    async def watch_pins(self, changed: Callable[[], Awaitable[None]]) -> None:
        """Subscribe to PINS_CHANNEL, read the pins once subscribed (nothing approved meanwhile is missed) and
        again on each message; listen again, with backoff, when Redis goes away."""
        delay = RESUBSCRIBE_BACKOFF[0]
        while True:
            try:
                async with self._client.pubsub() as pubsub:
                    with anyio.fail_after(REDIS_TIMEOUT):
                        await pubsub.subscribe(PINS_CHANNEL)
                    await changed()
                    delay = RESUBSCRIBE_BACKOFF[0]
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            await changed()
            except Exception as exc:  # Redis went away, or a read failed: listen again
                # Anything but Redis's own errors is the hub's fault: logged with its traceback, and still retried.
                expected = isinstance(exc, OSError | TimeoutError | errors.HubError) or "redis" in type(exc).__module__
                _log.warning("shared_pins_unavailable", error=type(exc).__name__, retry_s=delay, exc_info=not expected)
            await anyio.sleep(delay)
            delay = min(delay * 2, RESUBSCRIBE_BACKOFF[1])

    async def read(self, name: str) -> str | None:
        """The `Vault` of OAuth children's sign-ins (hub.upstream.oauth): sealed records in one hash."""
        value = await self._call(self._client.hget, OAUTH_KEY, name)
        return None if value is None else _text(value)

    async def write(self, name: str, value: str | None) -> None:
        if value is None:
            await self._call(self._client.hdel, OAUTH_KEY, name)
        else:
            await self._call(self._client.hset, OAUTH_KEY, name, value)

    @asynccontextmanager
    async def lock(self, name: str) -> AsyncIterator[None]:
        """Held by one replica at a time (SET NX PX, released only by its holder), for at most LOCK_SECONDS: a
        replica that dies holding it delays the others that long, never for ever."""
        key = LOCK_PREFIX + hashlib.sha256(name.encode()).hexdigest()[:32]
        mine = secrets.token_hex(8)
        try:
            with anyio.fail_after(LOCK_SECONDS + REDIS_TIMEOUT):
                # Redis tells nobody when a key goes: asked again, bounded.
                while not await self._call(self._client.set, key, mine, nx=True, px=int(LOCK_SECONDS * 1000)):  # noqa: ASYNC110
                    await anyio.sleep(LOCK_POLL)
        except TimeoutError:
            raise errors.Unavailable(f"another replica held the refresh of {name!r} too long") from None
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self._call(self._client.eval, _RELEASE, 1, key, mine)

    async def names(self) -> list[str]:
        keys = await self._call(self._client.hkeys, OAUTH_KEY)
        return sorted(map(_text, keys or ()))

    # ---- tasks (hub.relay.tasks): shared by every replica --------------------------------------------------------

    async def put_task(self, key: str, record: dict[str, Any], keep_s: float) -> None:
        seconds = max(1, int(keep_s) + 1)
        await self._call(self._client.set, TASK_PREFIX + key, json.dumps(record, separators=(",", ":")), ex=seconds)
        index = TASKS_OF_PREFIX + str(record.get("identity"))
        await self._call(self._client.sadd, index, key)
        await self._call(self._client.expire, index, seconds, gt=True)
        await self._call(self._client.expire, index, seconds, nx=True)

    async def get_task(self, key: str) -> dict[str, Any] | None:
        raw = await self._call(self._client.get, TASK_PREFIX + key)
        if raw is None:
            return None
        try:
            record = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return None
        return record if isinstance(record, dict) else None

    async def task_keys(self, identity: str) -> list[str]:
        index = TASKS_OF_PREFIX + identity
        members = await self._call(self._client.smembers, index)
        keys = sorted(map(_text, members or ()))
        if keys:
            present = await self._call(self._client.mget, [TASK_PREFIX + k for k in keys])
            gone = [k for k, value in zip(keys, present, strict=True) if value is None]
            if gone:
                await self._call(self._client.srem, index, *gone)
            keys = [k for k in keys if k not in gone]
        return keys

    async def cancel_task(self, key: str, keep_s: float) -> None:
        await self._call(self._client.set, TASK_CANCEL_PREFIX + key, b"1", ex=max(1, int(keep_s) + 1))

    async def task_cancelled(self, key: str) -> bool:
        return bool(await self._call(self._client.exists, TASK_CANCEL_PREFIX + key))

    async def put_answers(self, key: str, answers: dict[str, Any], keep_s: float) -> None:
        name = TASK_ANSWERS_PREFIX + key
        await self._call(self._client.hset, name, mapping={k: json.dumps(v) for k, v in answers.items()})
        await self._call(self._client.expire, name, max(1, int(keep_s) + 1))

    async def take_answers(self, key: str) -> dict[str, Any]:
        """The answers stored for a task, removed as they are read (one transaction: none is taken twice)."""
        pipe = self._client.pipeline(transaction=True)
        pipe.hgetall(TASK_ANSWERS_PREFIX + key)
        pipe.delete(TASK_ANSWERS_PREFIX + key)
        stored, _ = await self._call(pipe.execute)
        return _json_values(stored)

    async def beat(self, replica: str, keep_s: float) -> None:
        await self._call(self._client.set, REPLICA_PREFIX + replica, b"1", px=max(1, int(keep_s * 1000)))

    async def alive(self, replica: str) -> bool:
        return bool(await self._call(self._client.exists, REPLICA_PREFIX + replica))

    async def close(self) -> None:
        with anyio.move_on_after(REDIS_TIMEOUT):
            await self._client.aclose()

    async def _call(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            with anyio.fail_after(REDIS_TIMEOUT):
                return await method(*args, **kwargs)
        except Exception as exc:  # connection refused, timeout, an error of Redis's own
            raise errors.Unavailable(
                f"the hub's shared state (Redis at {_safe(self.url)}) cannot be reached: {type(exc).__name__}"
            ) from None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _json_values(stored: dict[Any, Any] | None) -> dict[str, Any]:
    """A Redis hash of JSON values, decoded; a field that is not JSON is left out."""
    found: dict[str, Any] = {}
    for name, raw in (stored or {}).items():
        try:
            found[_text(name)] = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
    return found


def _safe(url: str) -> str:
    """The URL without a password in it (redis://user:password@host)."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.rpartition('@')[2]}" if "@" in rest else url
