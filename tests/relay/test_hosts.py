"""The host sessions and listen streams (hub.relay.hosts): a child is subscribed to a URI on its first holder,
whether a handshake session's resources/subscribe or a 2026-07-28 listen stream, and unsubscribed on its last."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hub.access.identity import Identity
from hub.relay.hosts import Hosts
from tests.relay.harness import FakeSession

UPDATED = "notifications/resources/updated"


@dataclass(eq=False)
class Stream:
    """A 2026-07-28 listen stream (`hub.relay.hosts.Listener`)."""

    uris: frozenset[str]
    identity: Identity = field(default_factory=lambda: Identity("ada"))
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def wants(self, method: str, uri: str | None) -> bool:
        return method == UPDATED and uri in self.uris

    def send(self, method: str, params: dict[str, Any]) -> None:
        self.sent.append((method, params))


def hosts() -> tuple[Hosts, list[tuple[str, bool]]]:
    told: list[tuple[str, bool]] = []
    return Hosts(lambda uri, subscribe: told.append((uri, subscribe))), told


def test_a_listen_stream_subscribes_the_child_to_its_uris_and_unsubscribes_when_it_ends() -> None:
    registry, told = hosts()
    stream = Stream(frozenset({"a+x://1", "a+x://2"}))
    registry.listen(stream)
    assert told == [("a+x://1", True), ("a+x://2", True)]
    registry.resource_updated("a+x://2")
    assert stream.sent == [(UPDATED, {"uri": "a+x://2"})]
    registry.unlisten(stream)
    registry.unlisten(stream)  # once only
    assert told[2:] == [("a+x://1", False), ("a+x://2", False)]


def test_streams_and_sessions_share_one_subscription_per_uri() -> None:
    registry, told = hosts()
    session = FakeSession("conn-1")
    first, second = Stream(frozenset({"a+x://1"})), Stream(frozenset({"a+x://1"}))
    registry.listen(first)
    registry.listen(second)
    assert not registry.subscribe(session, "a+x://1"), "the child is subscribed already"
    registry.unlisten(first)
    assert not registry.unsubscribe(session, "a+x://1"), "the second stream still holds it"
    assert told == [("a+x://1", True)]
    registry.unlisten(second)
    assert told == [("a+x://1", True), ("a+x://1", False)]


def test_a_session_that_ends_leaves_a_uri_a_stream_still_holds() -> None:
    registry, told = hosts()
    session = FakeSession("conn-1")
    assert registry.subscribe(session, "a+x://1")
    registry.listen(Stream(frozenset({"a+x://1"})))
    assert told == [], "the session's subscription told the child already"
    assert registry.discard(session) == []
