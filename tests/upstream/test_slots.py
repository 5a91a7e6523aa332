"""A child's concurrency limit (hub.upstream.slots): max_concurrency in flight, max_queue waiting in arrival order,
a refusal naming the fix beyond that."""

from __future__ import annotations

import pytest

from hub.protocol.errors import Busy
from hub.upstream.slots import Slots


class Waiter:
    def __init__(self, name: str, admitted: list[str], on_admit: Slots | None = None) -> None:
        self.name = name
        self._admitted = admitted
        self._release_at_once = on_admit  # a waiter that was cancelled meanwhile gives its slot straight back

    def admitted(self) -> None:
        self._admitted.append(self.name)
        if self._release_at_once is not None:
            self._release_at_once.release()


def test_requests_up_to_max_concurrency_are_admitted_at_once() -> None:
    slots = Slots("time", 2, 0)
    admitted: list[str] = []
    assert slots.take(Waiter("a", admitted)) is True
    assert slots.take(Waiter("b", admitted)) is True
    assert (slots.in_flight, slots.waiting) == (2, 0)
    assert admitted == [], "admitted at once is not a callback"


def test_beyond_max_concurrency_requests_wait_and_are_admitted_in_arrival_order() -> None:
    slots = Slots("time", 1, 3)
    admitted: list[str] = []
    assert slots.take(Waiter("first", admitted)) is True
    for name in ("a", "b", "c"):
        assert slots.take(Waiter(name, admitted)) is False
    assert (slots.in_flight, slots.waiting) == (1, 3)
    slots.release()
    assert admitted == ["a"]
    slots.release()
    slots.release()
    assert admitted == ["a", "b", "c"]
    assert (slots.in_flight, slots.waiting) == (1, 0)
    slots.release()
    assert (slots.in_flight, slots.waiting) == (0, 0)


def test_beyond_max_queue_a_request_is_refused_naming_the_fix() -> None:
    slots = Slots("time", 2, 1)
    admitted: list[str] = []
    for name in ("a", "b", "c"):
        slots.take(Waiter(name, admitted))
    with pytest.raises(Busy) as refused:
        slots.take(Waiter("d", admitted))
    assert refused.value.message == (
        "server 'time' is busy: 2 requests in flight and 1 waiting; try again, or raise max_concurrency / max_queue "
        "in servers.yaml"
    )
    assert refused.value.outcome == "busy"
    assert (slots.in_flight, slots.waiting) == (2, 1), "a refusal changes nothing"


def test_with_no_queue_a_full_child_refuses_at_once() -> None:
    slots = Slots("time", 1, 0)
    slots.take(Waiter("a", []))
    with pytest.raises(Busy):
        slots.take(Waiter("b", []))


def test_a_newcomer_never_jumps_the_queue() -> None:
    slots = Slots("time", 1, 5)
    admitted: list[str] = []
    slots.take(Waiter("first", admitted))
    slots.take(Waiter("waiting", admitted))
    slots.in_flight = 0  # as if a slot were free without the queue having moved yet
    assert slots.take(Waiter("newcomer", admitted)) is False
    assert slots.waiting == 2


def test_a_withdrawn_waiter_is_never_admitted() -> None:
    slots = Slots("time", 1, 2)
    admitted: list[str] = []
    slots.take(Waiter("first", admitted))
    gone, stays = Waiter("gone", admitted), Waiter("stays", admitted)
    slots.take(gone)
    slots.take(stays)
    slots.withdraw(gone)
    slots.withdraw(gone)  # twice, or never queued: nothing happens
    slots.withdraw(Waiter("never", admitted))
    slots.release()
    assert admitted == ["stays"]
    assert (slots.in_flight, slots.waiting) == (1, 0)


def test_a_slot_given_straight_back_goes_to_the_next_waiter() -> None:
    slots = Slots("time", 1, 2)
    admitted: list[str] = []
    slots.take(Waiter("first", admitted))
    slots.take(Waiter("cancelled", admitted, on_admit=slots))
    slots.take(Waiter("next", admitted))
    slots.release()
    assert admitted == ["cancelled", "next"]
    assert (slots.in_flight, slots.waiting) == (1, 0)
