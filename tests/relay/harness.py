"""An in-memory relay: the hub's router, catalog and attribution over children whose connections write to a
`FakeWire`, and hosts that are recording `FakeRequest`s. No process is spawned; every wait is bounded.

A child's answers are fed with `Upstream.answer(...)` (one JSON line into `Connection.receive`, as its reader
would); what the hub sent the child is in `Upstream.wire.sent`; what the host got is on its `FakeRequest`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel

from hub.access.identity import ANONYMOUS, Identity
from hub.access.policy import Policy
from hub.config.schema import ServerConfig
from hub.config.settings import HubSettings
from hub.platform.pipes import Broken
from hub.platform.watchdog import Watchdog
from hub.protocol import revisions
from hub.protocol.jsonrpc import RequestId, encode
from hub.relay.admission import Admission
from hub.relay.attribution import Attribution
from hub.relay.builtins import HEALTH_TOOL, Builtins
from hub.relay.catalog import Catalog
from hub.relay.hosts import Hosts
from hub.relay.ports import AskFailed
from hub.relay.record import Record
from hub.relay.rounds import Seals
from hub.relay.router import Router
from hub.state import MemoryState
from hub.upstream.child import Child, ChildState
from hub.upstream.connection import Connection
from hub.upstream.listing import Listing

HANDSHAKE = revisions.LATEST_HANDSHAKE
MODERN = revisions.LATEST_MODERN
# Every wait in these tests is bounded by this; nothing here should take more than milliseconds.
WAIT = 5.0

Message = dict[str, Any]
Reply = dict[str, Any] | AskFailed


class FakeWire:
    """A child's end of a connection: records every message the hub sends it."""

    def __init__(self) -> None:
        self.sent: list[Message] = []
        self.negotiations: list[str] = []
        self.broken: str | None = None  # set: every send raises Broken
        self._changed = anyio.Event()

    def send(self, message: Message, line: bytes = b"") -> None:
        if self.broken is not None:
            raise Broken(self.broken)
        encode(message)  # what cannot be encoded would fail on a real wire too
        self.sent.append(message)
        self._changed.set()
        self._changed = anyio.Event()

    def negotiated(self, version: str) -> None:
        self.negotiations.append(version)

    def requests(self, method: str | None = None) -> list[Message]:
        return [m for m in self.sent if "id" in m and "method" in m and method in (None, m["method"])]

    def notifications(self, method: str | None = None) -> list[Message]:
        return [m for m in self.sent if "id" not in m and method in (None, m["method"])]

    def answers(self) -> list[Message]:
        """The hub's answers to the child's own requests."""
        return [m for m in self.sent if "method" not in m]

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        with anyio.fail_after(WAIT):
            while not predicate():
                await self._changed.wait()


@dataclass
class Upstream:
    """One child as the relay sees it, with the wire its shared connection writes to."""

    child: Child
    connection: Connection
    wire: FakeWire

    def receive(self, message: Message) -> None:
        self.connection.receive(encode(message))

    def answer(self, request_id: RequestId, result: Message) -> None:
        self.receive({"jsonrpc": "2.0", "id": request_id, "result": result})

    def error(self, request_id: RequestId, error: Message) -> None:
        self.receive({"jsonrpc": "2.0", "id": request_id, "error": error})

    def last_request(self, method: str | None = None) -> Message:
        requests = self.wire.requests(method)
        assert requests, f"the child got no {method or ''} request"
        return requests[-1]


class FakeSession:
    """A host session (`hub.relay.hosts.Session`): records what reaches it outside its requests."""

    def __init__(
        self,
        label: str = "conn-test",
        *,
        modern: bool = False,
        capabilities: dict[str, Any] | None = None,
        replies: dict[str, Reply] | None = None,
        identity: Identity = ANONYMOUS,
    ) -> None:
        self.label = label
        self.identity = identity
        self.modern = modern
        self.capabilities = {} if capabilities is None else capabilities
        self.replies = {} if replies is None else replies
        self.logs: list[Message] = []
        self.notifications: list[tuple[str, Message]] = []
        self.asked: list[tuple[str, Message]] = []

    def __repr__(self) -> str:
        return f"<FakeSession {self.label}>"

    def declared(self, capability: str) -> bool:
        return self.capabilities.get(capability) is not None

    def log(self, params: Message) -> None:
        self.logs.append(params)

    def notify(self, method: str, params: Message) -> None:
        self.notifications.append((method, params))

    async def ask(self, method: str, params: Message, limit_s: float) -> Message:
        self.asked.append((method, params))
        return _reply(self.replies, method)


def _reply(replies: dict[str, Reply], method: str) -> Message:
    reply = replies.get(method)
    if reply is None:
        raise AskFailed({"code": -32601, "message": f"the test host has no answer to {method}"})
    if isinstance(reply, AskFailed):
        raise reply
    return reply


class FakeRequest:
    """A host's request (`hub.relay.ports.HostRequest`): records its answer and everything sent on its stream."""

    def __init__(
        self,
        session: FakeSession,
        request_id: RequestId,
        method: str,
        params: Message,
        version: str = HANDSHAKE,
        *,
        capabilities: dict[str, Any] | None = None,
        log_level: str | None = None,
        replies: dict[str, Reply] | None = None,
    ) -> None:
        self.session = session
        self.id = request_id
        self.method = method
        self.params = params
        self.version = version
        self.log_level = log_level
        self.capabilities = capabilities  # a 2026-07-28 request's own; else the session's
        self.replies = {} if replies is None else replies
        self.outcomes: list[str] = []  # "respond", "fail", "drop": exactly one is right
        self.body: bytes | None = None
        self.error: Message | None = None
        self.notifications: list[tuple[str, Message]] = []
        self.logs: list[Message] = []
        self.asked: list[tuple[str, Message, float]] = []
        self.done = anyio.Event()

    def __repr__(self) -> str:
        return f"<FakeRequest {self.id} {self.method} {self.outcomes}>"

    @property
    def progress_token(self) -> RequestId | None:
        meta = self.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return token if isinstance(token, int | str) else None

    def declared(self, capability: str) -> bool:
        return self.client_capabilities().get(capability) is not None

    def client_capabilities(self) -> dict[str, Any]:
        return self.capabilities if self.capabilities is not None else self.session.capabilities

    def respond(self, result: Message | bytes) -> None:
        self.outcomes.append("respond")
        self.body = result if isinstance(result, bytes) else encode(result)
        self.done.set()

    def fail(self, error: Message) -> None:
        self.outcomes.append("fail")
        self.error = error
        self.done.set()

    def drop(self) -> None:
        self.outcomes.append("drop")
        self.done.set()

    def notify(self, method: str, params: Message) -> None:
        self.notifications.append((method, params))

    def log(self, params: Message) -> None:
        self.logs.append(params)

    async def ask(self, method: str, params: Message, limit_s: float) -> Message:
        self.asked.append((method, params, limit_s))
        return _reply(self.replies, method)

    @property
    def result(self) -> Message:
        """The result the host got (its one answer must be a result)."""
        assert self.outcomes == ["respond"], f"expected one result, got {self.outcomes} ({self.error})"
        assert self.body is not None
        result: Message = json.loads(self.body)
        return result

    @property
    def failure(self) -> Message:
        """The JSON-RPC error the host got (its one answer must be an error)."""
        assert self.outcomes == ["fail"], f"expected one error, got {self.outcomes}"
        assert self.error is not None
        return self.error

    async def answered(self) -> None:
        with anyio.fail_after(WAIT):
            await self.done.wait()


class Observer:
    """The hub's part for children (`hub.upstream.child.Observer`): what a child asks or logs goes to attribution."""

    def __init__(self, attribution: Attribution) -> None:
        self.attribution = attribution
        self.updated: list[tuple[str, str]] = []

    def listing_changed(self, child: Child) -> None:
        pass

    def resource_updated(self, child: Child, uri: str) -> None:
        self.updated.append((child.name, uri))

    def child_log(self, child: Child, connection: Connection, params: Message) -> None:
        self.attribution.child_log(child, connection, params)

    def child_request(self, child: Child, connection: Connection, request: Any) -> None:
        self.attribution.child_request(child, connection, request)

    def elicitation_complete(self, child: Child, connection: Connection, params: Message) -> None:
        self.attribution.elicitation_complete(child, connection, params)

    def elicitations_required(self, connection: Connection, exchange: Any, data: Any) -> None:
        self.attribution.elicitations_required(connection, exchange, data)


@dataclass
class Relay:
    """The relay core with its collaborators, and helpers to add children and send host requests."""

    settings: HubSettings = field(default_factory=HubSettings)
    calls: list[Message] = field(default_factory=list)  # the call log's lines
    policy: Policy = field(default_factory=Policy)
    shared: MemoryState = field(default_factory=MemoryState)  # a test may give one with its own clock

    def __post_init__(self) -> None:
        self.catalog = Catalog(lambda: frozenset({HEALTH_TOOL}) if self.settings.health_tool else frozenset())
        self.hosts = Hosts()
        record = Record(self.calls.append, "")
        builtins = Builtins(
            lambda: self.settings,
            tuple,
            lambda: self.catalog.namespace,
            lambda: self.catalog.children,
            lambda: self.policy,
            lambda: self.health(),
            record,
        )
        self.health: Callable[[], Message] = self._health  # the hub's health report (a test may give its own)
        shared = self.shared
        admission = Admission(
            lambda: self.policy, shared, Seals(shared), record, lambda value: value, lambda name: None
        )
        self.router = Router(
            self.catalog,
            self.hosts,
            record,
            lambda: self.settings,
            builtins,
            self._starting,
            admission,
            lambda value: value,
        )
        self.attribution = Attribution(self.router.spawn, self.hosts)
        self.observer = Observer(self.attribution)
        self.watchdog = Watchdog()  # never started
        self.session = FakeSession("conn-default", capabilities={"sampling": {}, "elicitation": {}, "roots": {}})
        self._ids = itertools.count(1)

    @staticmethod
    def _health() -> Message:
        return {"servers": []}

    @staticmethod
    async def _starting(children: list[Child]) -> None:
        for child in children:
            await child.settled.wait()

    def add_child(
        self,
        name: str,
        *,
        prefix: str | None = None,
        protocol: str = HANDSHAKE,
        tools: tuple[str, ...] = (),
        prompts: tuple[str, ...] = (),
        resources: tuple[str, ...] = (),
        templates: tuple[str, ...] = (),
        **config: Any,
    ) -> Upstream:
        """A ready child with these listings, its shared connection negotiated at `protocol`."""
        child = Child(
            name, name if prefix is None else prefix, ServerConfig(command="x", **config), self.observer, self.watchdog
        )
        child.listing = Listing(
            tools=tuple({"name": t, "inputSchema": {"type": "object"}} for t in tools),
            prompts=tuple({"name": p} for p in prompts),
            resources=tuple({"uri": u, "name": u} for u in resources),
            templates=tuple({"uriTemplate": t, "name": t} for t in templates),
        )
        wire = FakeWire()
        connection = Connection(name, wire, child)
        connection.protocol_version = protocol
        child.shared = connection
        child.state = ChildState.READY
        child.settled.set()
        self.catalog.children = {**self.catalog.children, name: child}
        self.catalog.rebuild()
        return Upstream(child, connection, wire)

    def request(
        self,
        method: str,
        params: Message,
        *,
        session: FakeSession | None = None,
        version: str = HANDSHAKE,
        request_id: RequestId | None = None,
        capabilities: dict[str, Any] | None = None,
        log_level: str | None = None,
        replies: dict[str, Reply] | None = None,
    ) -> FakeRequest:
        """A host request, routed now."""
        request = FakeRequest(
            session or self.session,
            next(self._ids) if request_id is None else request_id,
            method,
            params,
            version,
            capabilities=capabilities,
            log_level=log_level,
            replies=replies,
        )
        self.router.route(request)
        return request

    def call_tool(self, name: str, arguments: Message | None = None, **options: Any) -> FakeRequest:
        return self.request("tools/call", {"name": name, "arguments": arguments or {}}, **options)

    def lines(self, request: FakeRequest) -> list[Message]:
        """The call-log lines of one host request."""
        return [line for line in self.calls if line["request_id"] == request.id]


@asynccontextmanager
async def running_relay(settings: HubSettings | None = None, shared: MemoryState | None = None) -> AsyncIterator[Relay]:
    """A relay whose router runs (its deadline watcher, the tasks calls spawn) until the block ends."""
    relay = Relay(settings or HubSettings(), shared=shared or MemoryState())
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(WAIT):
            await tg.start(relay.router.run)  # ready: spawn works from here on
        yield relay
        tg.cancel_scope.cancel()


def modern_meta(**extra: Any) -> Message:
    """The 2026-07-28 envelope a modern host's request carries."""
    return {
        revisions.PROTOCOL_VERSION_KEY: MODERN,
        revisions.CLIENT_CAPABILITIES_KEY: {},
        revisions.CLIENT_INFO_KEY: {"name": "test-host", "version": "1"},
        **extra,
    }
