"""What a child offers (tools, resources, templates, prompts), read in full, and when to read it again: a
handshake-era child's `list_changed` notifications, coalesced; a 2026-07-28 child's `subscriptions/listen` stream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from hub.protocol import errors
from hub.protocol.jsonrpc import METHOD_NOT_FOUND
from hub.upstream.connection import Connection

# Bursts of list_changed from one child are coalesced over this window before its lists are read again.
LIST_CHANGED_DEBOUNCE = 0.05
# How long a listing request (or a child's logging/setLevel) may take.
LIST_TIMEOUT = 30.0
# Re-listen backoff when a 2026 child's subscriptions/listen stream ends.
RELISTEN_BASE = 0.5
RELISTEN_CAP = 30.0

_LIST_CHANGED = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    "notifications/resources/list_changed": ("resources", "templates"),
}
_LISTS = {  # kind -> (method, result key, the capability that offers it)
    "tools": ("tools/list", "tools", "tools"),
    "resources": ("resources/list", "resources", "resources"),
    "templates": ("resources/templates/list", "resourceTemplates", "resources"),
    "prompts": ("prompts/list", "prompts", "prompts"),
}


@dataclass(frozen=True)
class CacheHint:
    """How long a list may be cached and by whom (2026-07-28 `ttlMs`, `cacheScope`): of a child's list, the
    smallest ttl and the narrowest scope of its pages; of a merged list, of its children's (`merge`)."""

    ttl_ms: int = 0
    private: bool = True

    @classmethod
    def of(cls, page: dict[str, Any]) -> CacheHint:
        """What a page says. Said nothing (a child of an older revision): ttl 0, as the spec tells a client to
        assume; and private, since nothing says the list is the same for every caller."""
        ttl = page.get("ttlMs")
        ttl_ms = ttl if type(ttl) is int and ttl > 0 else 0  # negative: treated as 0, as the spec says
        return cls(ttl_ms, page.get("cacheScope") != "public")

    def merge(self, other: CacheHint) -> CacheHint:
        return CacheHint(min(self.ttl_ms, other.ttl_ms), self.private or other.private)


@dataclass(frozen=True)
class Listing:
    """Everything a child offers, as the raw dicts it sent (so unknown fields pass through), and the cache hints of
    each kind of list it was read for (`CacheHint`, by kind: "tools", "resources", "templates", "prompts")."""

    tools: tuple[dict[str, Any], ...] = ()
    resources: tuple[dict[str, Any], ...] = ()
    templates: tuple[dict[str, Any], ...] = ()
    prompts: tuple[dict[str, Any], ...] = ()
    hints: Mapping[str, CacheHint] = field(default_factory=dict, compare=False)


def offered(connection: Connection) -> list[str]:
    """The kinds of list the child's capabilities say it serves."""
    return [kind for kind, (_, _, capability) in _LISTS.items() if connection.capabilities.get(capability) is not None]


async def read_lists(connection: Connection, kinds: list[str], base: Listing) -> Listing:
    """`base` with each of `kinds` read again in full from the child, page by page until no new cursor (a cursor seen
    before ends it too: a child that loops cannot keep the hub reading).

    Raises:
        errors.HubError, TimeoutError: a page could not be read (a kind advertised but not served reads as empty).
    """
    updates: dict[str, tuple[dict[str, Any], ...]] = {}
    hints = dict(base.hints)
    for kind in kinds:
        method, key, _ = _LISTS[kind]
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        hint: CacheHint | None = None
        while True:
            try:
                page = await connection.request(method, {"cursor": cursor} if cursor else {}, LIST_TIMEOUT)
            except errors.ChildError as exc:
                if exc.code == METHOD_NOT_FOUND:
                    break  # advertised but not served (templates, often): empty
                raise
            hint = CacheHint.of(page) if hint is None else hint.merge(CacheHint.of(page))
            found = page.get(key)
            items.extend(item for item in (found if isinstance(found, list) else ()) if isinstance(item, dict))
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or cursor in seen:
                break
            seen.add(cursor)
        updates[kind] = tuple(items)
        if hint is None:  # not served: no list of this kind to merge
            hints.pop(kind, None)
        else:
            hints[kind] = hint
    return Listing(**{**base.__dict__, **updates, "hints": hints})


class ListChanges:
    """The kinds of list a child said changed, not yet read again."""

    def __init__(self) -> None:
        self._kinds: set[str] = set()
        self._event = anyio.Event()

    def notified(self, method: str) -> bool:
        """Whether `method` is a list_changed notification (then its kinds are marked to be read again)."""
        kinds = _LIST_CHANGED.get(method)
        if kinds is None:
            return False
        self._kinds.update(kinds)
        self._event.set()
        return True

    async def next(self) -> list[str]:
        """The kinds changed since the last call, once there are some and the burst is over."""
        await self._event.wait()
        await anyio.sleep(LIST_CHANGED_DEBOUNCE)
        self._event = anyio.Event()
        kinds, self._kinds = sorted(self._kinds), set()
        return kinds


async def listen(connection: Connection, log: structlog.typing.FilteringBoundLogger) -> None:
    """A 2026-07-28 child announces list changes only on a `subscriptions/listen` stream: keep one open (its
    notifications arrive as any other's, through the connection's events)."""
    notifications = {
        f"{kind}ListChanged": True
        for kind in ("tools", "prompts", "resources")
        if (connection.capabilities.get(kind) or {}).get("listChanged")
    }
    if not notifications:
        return
    delay = RELISTEN_BASE
    while True:
        try:  # the stream is answered only when it ends; the connection's end ends it too
            await connection.request("subscriptions/listen", {"notifications": notifications}, math.inf)
            reason = "the stream ended"
        except errors.HubError as exc:
            if isinstance(exc, errors.ChildError) and exc.code == METHOD_NOT_FOUND:
                log.warning("child_listen_unsupported")
                return
            reason = exc.message
        log.warning("child_listen_lost", error=reason)
        await anyio.sleep(delay)
        delay = min(RELISTEN_CAP, delay * 2)
