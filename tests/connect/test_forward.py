"""`Forwarder` against a stand-in for the hub: bad lines, one answer per request, order, cancellation."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from hub.connect.forward import Forwarder
from hub.connect.remote import Deliver, Dropped, Refused
from hub.protocol.jsonrpc import Request, error_line, result_line

pytestmark = pytest.mark.anyio

WAIT = 5.0
ENVELOPE = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}


class FakeRemote:
    """What `Forwarder` uses of `Remote`: each request handled by `handlers[method]`; notifications and answers kept."""

    url = "http://hub.test/mcp"

    def __init__(self) -> None:
        self.handlers: dict[str, Callable[[Request, Deliver], Awaitable[None]]] = {}
        self.requests: list[tuple[str, bool]] = []
        self.posted: list[tuple[dict[str, Any], bool]] = []
        self.posted_event = anyio.Event()
        self.hold_posts: anyio.Event | None = None

    async def request(self, request: Request, deliver: Deliver, modern: bool) -> None:
        self.requests.append((request.method, modern))
        await self.handlers.get(request.method, answer_ok)(request, deliver)

    async def post(self, line: bytes, initialized: bool) -> None:
        if self.hold_posts is not None:
            await self.hold_posts.wait()
        self.posted.append((json.loads(line), initialized))
        self.posted_event.set()
        self.posted_event = anyio.Event()


async def answer_ok(request: Request, deliver: Deliver) -> None:
    deliver(result_line(request.id, {"ok": True}))


class Wire:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.changed = anyio.Event()

    def write(self, line: bytes) -> None:
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        self.lines.append(json.loads(line))
        self.changed.set()
        self.changed = anyio.Event()

    async def answer(self, request_id: Any) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            while True:
                found = [m for m in self.lines if m.get("id") == request_id and "method" not in m]
                if found:
                    return found[0]
                await self.changed.wait()


@asynccontextmanager
async def forwarder_with_stand_ins() -> AsyncIterator[tuple[Forwarder, FakeRemote, Wire]]:
    remote, wire = FakeRemote(), Wire()
    async with anyio.create_task_group() as tg:
        forwarder = Forwarder(remote, wire.write, tg)  # type: ignore[arg-type]
        tg.start_soon(forwarder.run)
        yield forwarder, remote, wire
        tg.cancel_scope.cancel()


def send(forwarder: Forwarder, message: dict[str, Any] | str) -> None:
    forwarder.line(message.encode() if isinstance(message, str) else json.dumps(message).encode())


async def test_lines_that_are_not_messages_get_the_errors_the_hub_gives_and_the_forwarder_goes_on() -> None:
    async with forwarder_with_stand_ins() as (forwarder, remote, wire):
        send(forwarder, "not JSON at all")  # no id: nothing can be answered
        send(forwarder, '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}')
        send(forwarder, '[{"jsonrpc":"2.0","id":2,"method":"ping"}]')
        send(forwarder, {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": [1]})
        forwarder.oversized(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"x":"', 99_999_999, 1000)
        send(forwarder, {"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert (await wire.answer(5))["result"] == {"ok": True}
        assert (await wire.answer(1))["error"]["code"] == -32700
        assert "batches are not supported" in (await wire.answer(2))["error"]["message"]
        assert (await wire.answer(3))["error"]["code"] == -32602
        assert "99999999 bytes" in (await wire.answer(4))["error"]["message"]
        assert len(wire.lines) == 5
        assert remote.requests == [("ping", False)]


async def test_every_request_gets_one_answer_even_when_the_hub_gives_none() -> None:
    async def dropped(request: Request, deliver: Deliver) -> None:
        raise Dropped("the connection to the hub was lost before the answer")

    async def refused(request: Request, deliver: Deliver) -> None:
        raise Refused("the hub refused the request: the token from $HUB_TOKEN was refused (HTTP 401: nope)")

    async def silent(request: Request, deliver: Deliver) -> None:
        deliver(b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}')

    async def twice(request: Request, deliver: Deliver) -> None:
        deliver(result_line(request.id, {"first": True}))
        deliver(
            b'{\n  "jsonrpc": "2.0", "method": "notifications/message",\n  "params": {"level": "info", "data": 1}\n}'
        )

    async with forwarder_with_stand_ins() as (forwarder, remote, wire):
        remote.handlers = {"a": dropped, "b": refused, "c": silent, "d": twice}
        for number, method in enumerate("abcd", 1):
            send(forwarder, {"jsonrpc": "2.0", "id": number, "method": method})
        assert "lost before the answer" in (await wire.answer(1))["error"]["message"]
        assert (await wire.answer(2))["error"] == {
            "code": -32600,
            "message": "the hub refused the request: the token from $HUB_TOKEN was refused (HTTP 401: nope)",
        }
        assert "ended its response without an answer" in (await wire.answer(3))["error"]["message"]
        assert (await wire.answer(4))["result"] == {"first": True}
        with anyio.fail_after(WAIT):
            while not any(m.get("method") == "notifications/message" for m in wire.lines):
                await wire.changed.wait()


async def test_notifications_reach_the_hub_before_the_requests_written_after_them() -> None:
    async with forwarder_with_stand_ins() as (forwarder, remote, wire):
        remote.hold_posts = anyio.Event()
        send(forwarder, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(forwarder, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        await anyio.wait_all_tasks_blocked()
        assert remote.requests == []  # the request waits for the notification to be delivered
        remote.hold_posts.set()
        await wire.answer(1)
        assert remote.posted == [({"jsonrpc": "2.0", "method": "notifications/initialized"}, True)]
        assert remote.requests == [("tools/list", False)]


async def test_a_cancelled_request_gets_no_answer_and_the_cancellation_reaches_the_hub() -> None:
    release = anyio.Event()

    async def slow(request: Request, deliver: Deliver) -> None:
        await release.wait()
        deliver(error_line(request.id, -32800, "Request cancelled"))

    async with forwarder_with_stand_ins() as (forwarder, remote, wire):
        remote.handlers = {"slow": slow}
        send(forwarder, {"jsonrpc": "2.0", "id": 7, "method": "slow"})
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        send(forwarder, cancel)
        with anyio.fail_after(WAIT):
            while not remote.posted:
                await remote.posted_event.wait()
        assert remote.posted == [(cancel, False)]
        release.set()
        send(forwarder, {"jsonrpc": "2.0", "id": 8, "method": "ping"})
        await wire.answer(8)
        await anyio.wait_all_tasks_blocked()
        assert [m for m in wire.lines if m.get("id") == 7] == []


async def test_a_2026_host_cancels_by_closing_the_request_and_sends_the_hub_no_notification() -> None:
    cancelled = anyio.Event()

    async def endless(request: Request, deliver: Deliver) -> None:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async with forwarder_with_stand_ins() as (forwarder, remote, wire):
        remote.handlers = {"tools/call": endless}
        send(forwarder, {"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "x", **ENVELOPE}})
        await anyio.wait_all_tasks_blocked()
        assert remote.requests == [("tools/call", True)]
        send(forwarder, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}})
        with anyio.fail_after(WAIT):
            await cancelled.wait()
        send(forwarder, {"jsonrpc": "2.0", "id": "b", "method": "ping", "params": ENVELOPE})
        await wire.answer("b")
        assert remote.posted == []
        assert [m for m in wire.lines if m.get("id") == "a"] == []


async def test_an_unusable_answer_of_the_host_fails_the_hubs_request_and_is_not_answered_back() -> None:
    async with forwarder_with_stand_ins() as (forwarder, remote, wire):
        send(forwarder, '{"jsonrpc":"2.0","id":"hub-1","result":[1,2]}')
        with anyio.fail_after(WAIT):
            while not remote.posted:
                await remote.posted_event.wait()
        posted, _ = remote.posted[0]
        assert posted["id"] == "hub-1" and "the host's answer was invalid" in posted["error"]["message"]
        assert wire.lines == []


async def test_a_renewed_session_tells_the_host_its_lists_may_have_changed() -> None:
    async with forwarder_with_stand_ins() as (forwarder, _, wire):
        forwarder.renewed({"tools": {"listChanged": True}, "resources": {}, "logging": {}})
        assert [m["method"] for m in wire.lines] == [
            "notifications/tools/list_changed",
            "notifications/resources/list_changed",
        ]


async def test_nothing_written_after_initialize_leaves_before_its_answer() -> None:
    """A host that writes ahead (a script piping lines in): what follows initialize needs the session it makes."""
    release = anyio.Event()

    async def slow_initialize(request: Request, deliver: Deliver) -> None:
        await release.wait()
        deliver(result_line(request.id, {"protocolVersion": "2025-11-25"}))

    async with forwarder_with_stand_ins() as (forwarder, remote, wire):
        remote.handlers = {"initialize": slow_initialize}
        send(forwarder, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        send(forwarder, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        send(forwarder, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        await anyio.wait_all_tasks_blocked()
        assert remote.requests == [("initialize", False)] and remote.posted == []
        release.set()
        await wire.answer(2)
        assert remote.requests == [("initialize", False), ("tools/list", False)]
        assert [m for m, _ in remote.posted] == [{"jsonrpc": "2.0", "method": "notifications/initialized"}]


async def test_at_end_of_input_drain_waits_for_the_answers_to_what_was_sent() -> None:
    release = anyio.Event()

    async def slow(request: Request, deliver: Deliver) -> None:
        await release.wait()
        deliver(result_line(request.id, {"late": True}))

    async with forwarder_with_stand_ins() as (forwarder, remote, wire):
        remote.handlers = {"slow": slow}
        remote.hold_posts = anyio.Event()
        send(forwarder, {"jsonrpc": "2.0", "id": 1, "method": "slow"})
        send(forwarder, {"jsonrpc": "2.0", "method": "notifications/x"})
        async with anyio.create_task_group() as tg:
            drained = anyio.Event()

            async def drain() -> None:
                await forwarder.drain(anyio.Event())
                drained.set()

            tg.start_soon(drain)
            await anyio.wait_all_tasks_blocked()
            assert not drained.is_set()  # the request has no answer and the notification has not reached the hub
            release.set()
            await wire.answer(1)
            await anyio.wait_all_tasks_blocked()
            assert not drained.is_set()  # the notification is still on its way
            remote.hold_posts.set()
            with anyio.fail_after(WAIT):
                await drained.wait()
        assert [m["method"] for m, _ in remote.posted] == ["notifications/x"]


async def test_a_stop_signal_ends_the_wait_at_end_of_input() -> None:
    async def never(request: Request, deliver: Deliver) -> None:
        await anyio.sleep_forever()

    async with forwarder_with_stand_ins() as (forwarder, remote, _wire):
        remote.handlers = {"never": never}
        send(forwarder, {"jsonrpc": "2.0", "id": 1, "method": "never"})
        await anyio.wait_all_tasks_blocked()
        stop = anyio.Event()
        stop.set()
        with anyio.fail_after(WAIT):
            await forwarder.drain(stop)
