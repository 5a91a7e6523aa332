"""A 2026-07-28 host's `subscriptions/listen` (hub.host.received.Listen): the resource subscriptions it asks for are
honoured as its identity may read them, and held at the hub (hub.relay.hosts) for as long as the stream lasts."""

from __future__ import annotations

from typing import Any

import pytest

from hub.access.identity import Identity
from hub.access.policy import View
from hub.host.session import HostSession
from tests.host.test_session import Stream, make_hub, request
from tests.relay.harness import FakeSession, modern_meta

pytestmark = pytest.mark.anyio


class Hidden(View):
    """Every URI but those under `secret+` may be read."""

    def allows(self, exposed: str, *, writes: bool) -> bool:
        return not exposed.startswith("secret+")


def listen(uris: list[str]) -> bytes:
    params: dict[str, Any] = {"notifications": {"resourceSubscriptions": uris}, "_meta": modern_meta()}
    return request("l1", "subscriptions/listen", params)


async def test_a_listen_holds_the_uris_its_identity_may_read_until_it_ends() -> None:
    hub, stream = make_hub(), Stream()
    hub.view = lambda identity: Hidden((), "allow")  # type: ignore[method-assign]
    session = HostSession(hub, "conn-1", stream)
    session.receive(listen(["docs+file:///a", "secret+file:///b", 7]), stream)  # type: ignore[list-item]
    (ack,) = stream.messages
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"resourceSubscriptions": ["docs+file:///a"]}
    other = FakeSession("conn-2", identity=Identity("bob"))
    assert not hub.hosts.subscribe(other, "docs+file:///a"), "the stream holds it: the child is subscribed already"
    assert hub.hosts.subscribe(other, "secret+file:///b"), "not honoured, not held"
    assert not hub.hosts.unsubscribe(other, "docs+file:///a"), "the stream still holds it"
    assert hub.hosts.subscribe(other, "docs+file:///a") is False
    session.close()  # the host went away: its stream ends
    assert hub.hosts.unsubscribe(other, "docs+file:///a"), "the last holder let go: the child is told"
