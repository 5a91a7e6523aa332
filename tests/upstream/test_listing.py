"""A child's lists (hub.upstream.listing): read in full page by page, a looping cursor ends the read, a kind that is
advertised but not served reads as empty, and bursts of list_changed come out as one re-read of the changed kinds."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from hub.protocol import errors
from hub.protocol.jsonrpc import METHOD_NOT_FOUND
from hub.upstream.listing import CacheHint, ListChanges, Listing, offered, read_lists

pytestmark = pytest.mark.anyio


class Pages:
    """What `read_lists` uses of a `Connection`: capabilities, and one page per request."""

    def __init__(self, pages: dict[tuple[str, str | None], dict[str, Any]], capabilities: dict[str, Any]) -> None:
        self.pages = pages
        self.capabilities = capabilities
        self.asked: list[tuple[str, str | None]] = []

    async def request(self, method: str, params: dict[str, Any], limit_s: float) -> dict[str, Any]:
        key = (method, params.get("cursor"))
        self.asked.append(key)
        if method == "resources/templates/list":
            raise errors.ChildError(METHOD_NOT_FOUND, "not served", None)
        return self.pages[key]


async def test_lists_are_read_in_full_and_a_looping_cursor_ends_the_read() -> None:
    child = Pages(
        {
            ("tools/list", None): {"tools": [{"name": "a"}], "nextCursor": "2"},
            ("tools/list", "2"): {"tools": [{"name": "b"}, "not a dict"], "nextCursor": "3"},
            ("tools/list", "3"): {"tools": [{"name": "c"}], "nextCursor": "2"},  # back to a page already read
            ("resources/list", None): {"resources": [{"uri": "file:///x"}]},
        },
        {"tools": {}, "resources": {}},
    )
    kinds = offered(child)  # type: ignore[arg-type]
    assert kinds == ["tools", "resources", "templates"]
    base = Listing(prompts=({"name": "kept"},))
    listing = await read_lists(child, kinds, base)  # type: ignore[arg-type]
    assert [t["name"] for t in listing.tools] == ["a", "b", "c"]
    assert listing.resources == ({"uri": "file:///x"},)
    assert listing.templates == ()  # advertised, not served: empty
    assert listing.prompts == base.prompts  # not read again: kept
    assert child.asked.count(("tools/list", "2")) == 1


async def test_a_burst_of_list_changed_is_one_re_read_of_the_kinds_it_named() -> None:
    changes = ListChanges()
    assert not changes.notified("notifications/message")
    assert changes.notified("notifications/tools/list_changed")
    assert changes.notified("notifications/resources/list_changed")
    assert changes.notified("notifications/tools/list_changed")
    with anyio.fail_after(5):
        assert await changes.next() == ["resources", "templates", "tools"]
    with anyio.move_on_after(0.2) as waited:
        await changes.next()
    assert waited.cancelled_caught, "nothing changed since: nothing to read"


async def test_a_lists_cache_hint_is_its_pages_smallest_ttl_and_narrowest_scope() -> None:
    child = Pages(
        {
            ("tools/list", None): {
                "tools": [{"name": "a"}],
                "nextCursor": "2",
                "ttlMs": 60_000,
                "cacheScope": "public",
            },
            ("tools/list", "2"): {"tools": [{"name": "b"}], "ttlMs": 30_000, "cacheScope": "public"},
            ("prompts/list", None): {"prompts": [], "ttlMs": 10_000, "cacheScope": "private"},
            ("resources/list", None): {"resources": [], "ttlMs": -5, "cacheScope": "public"},  # negative: 0
        },
        {"tools": {}, "prompts": {}, "resources": {}},
    )
    listing = await read_lists(child, offered(child), Listing())  # type: ignore[arg-type]
    assert listing.hints["tools"] == CacheHint(30_000, private=False)
    assert listing.hints["prompts"] == CacheHint(10_000, private=True)
    assert listing.hints["resources"] == CacheHint(0, private=False)
    assert "templates" not in listing.hints, "not served: nothing said"


async def test_a_child_that_says_nothing_of_caching_gets_ttl_0_and_private() -> None:
    child = Pages({("tools/list", None): {"tools": [{"name": "a"}]}}, {"tools": {}})
    listing = await read_lists(child, ["tools"], Listing())  # type: ignore[arg-type]
    assert listing.hints == {"tools": CacheHint(0, private=True)}
    again = await read_lists(child, [], listing)  # type: ignore[arg-type]
    assert again.hints == listing.hints, "a kind not read again keeps its hint"
