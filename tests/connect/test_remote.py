"""hub connect's session with the hub against a stand-in hub (httpx2's MockTransport): a forgotten session made
again with the host's own initialize, connection retries, refusals, and 2026-07-28 routing headers."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest

from hub.connect import remote as remote_module
from hub.connect.remote import Refused, Remote, Unreachable, backoff
from hub.connect.token import Token
from hub.protocol.jsonrpc import Request, notification_line, parse, request_line

pytestmark = pytest.mark.anyio

URL = "http://hub.test/mcp"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "host", "version": "1"}}
CAPABILITIES = {"tools": {"listChanged": True}, "logging": {}}


class FakeHub:
    """Sessions by id; `restart()` forgets them all, as a hub that restarted does."""

    def __init__(self) -> None:
        self.sessions: set[str] = set()
        self.opened = 0
        self.seen: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        self.refuse = False
        self.down = 0  # connection attempts still to fail
        self.tools: list[dict[str, Any]] = []  # what tools/list answers

    def restart(self) -> None:
        self.sessions.clear()

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        if self.down:
            self.down -= 1
            raise httpx2.ConnectError("connection refused", request=request)
        if self.refuse:
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Unauthorized: not valid"}}
            return httpx2.Response(401, json=body)
        message = json.loads(request.content)
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.seen.append((message.get("method", "(answer)"), headers, message))
        if message.get("method") == "initialize":
            self.opened += 1
            session = f"s{self.opened}"
            self.sessions.add(session)
            result = {"protocolVersion": "2025-11-25", "capabilities": CAPABILITIES, "serverInfo": {"name": "hub"}}
            return httpx2.Response(
                200, json={"jsonrpc": "2.0", "id": message["id"], "result": result}, headers={"mcp-session-id": session}
            )
        if "mcp-session-id" in headers and headers["mcp-session-id"] not in self.sessions:
            error = {"code": -32600, "message": "Session not found"}
            return httpx2.Response(404, json={"jsonrpc": "2.0", "id": message.get("id"), "error": error})
        if "id" not in message or "method" not in message:
            return httpx2.Response(202)
        if message["method"] == "tools/list" and self.tools:
            return httpx2.Response(200, json={"jsonrpc": "2.0", "id": message["id"], "result": {"tools": self.tools}})
        return httpx2.Response(200, json={"jsonrpc": "2.0", "id": message["id"], "result": {"echo": message["method"]}})


TOKEN = Token("hub_secret", "$HUB_TOKEN")


def make_remote(hub: FakeHub, token: Token = TOKEN) -> tuple[Remote, list[dict[str, Any]]]:
    renewals: list[dict[str, Any]] = []
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(hub), headers=token.header())
    return Remote(URL, token, http, renewals.append), renewals


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> Request:
    message = parse(request_line(request_id, method, params or {}).rstrip(b"\n"))
    assert isinstance(message, Request)
    return message


async def ask(remote: Remote, message: Request, modern: bool = False) -> list[dict[str, Any]]:
    delivered: list[dict[str, Any]] = []
    with anyio.fail_after(5):
        await remote.request(message, lambda line: delivered.append(json.loads(line)), modern)
    return delivered


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remote_module, "RETRY_FIRST", 0.001)
    monkeypatch.setattr(remote_module, "RETRY_CAP", 0.002)


async def test_a_forgotten_session_is_made_again_with_the_hosts_initialize_and_the_request_sent_again() -> None:
    hub = FakeHub()
    remote, renewals = make_remote(hub)
    assert (await ask(remote, request(1, "initialize", INIT)))[0]["result"]["capabilities"] == CAPABILITIES
    await remote.post(notification_line("notifications/initialized", None), initialized=True)
    await ask(remote, request(2, "logging/setLevel", {"level": "debug"}))
    await ask(remote, request(3, "resources/subscribe", {"uri": "kitchen://a"}))
    assert hub.seen[-1][1]["mcp-session-id"] == "s1" and hub.seen[-1][1]["mcp-protocol-version"] == "2025-11-25"

    hub.restart()
    assert await ask(remote, request(4, "tools/list")) == [
        {"jsonrpc": "2.0", "id": 4, "result": {"echo": "tools/list"}}
    ]
    assert renewals == [CAPABILITIES]
    after = [(method, headers.get("mcp-session-id")) for method, headers, _ in hub.seen[4:]]
    assert after == [
        ("tools/list", "s1"),  # 404
        ("initialize", None),
        ("notifications/initialized", "s2"),
        ("logging/setLevel", "s2"),
        ("resources/subscribe", "s2"),
        ("tools/list", "s2"),
    ]
    assert hub.seen[5][2]["params"] == INIT  # the host's own params
    assert hub.seen[4][1]["authorization"] == "Bearer hub_secret"


async def test_a_hub_that_does_not_answer_yet_is_tried_again_then_reported_unreachable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hub = FakeHub()
    remote, _ = make_remote(hub)
    hub.down = 3
    assert (await ask(remote, request(1, "initialize", INIT)))[0]["id"] == 1
    monkeypatch.setattr(remote_module, "RECONNECT_LIMIT", 0.05)
    hub.down = 10_000
    with pytest.raises(Unreachable, match="cannot be reached"):
        await ask(remote, request(2, "tools/list"))


async def test_a_refused_token_names_where_it_came_from_and_never_what_it_is() -> None:
    hub = FakeHub()
    hub.refuse = True
    remote, _ = make_remote(hub, Token("hub_secret", "$TEAM_TOKEN"))
    with pytest.raises(Refused) as refused:
        await ask(remote, request(1, "initialize", INIT))
    assert "the token from $TEAM_TOKEN was refused (HTTP 401: Unauthorized: not valid)" in str(refused.value)
    assert "hub_secret" not in str(refused.value)


async def test_a_2026_request_goes_alone_with_its_routing_headers() -> None:
    hub = FakeHub()
    remote, _ = make_remote(hub)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    await ask(remote, request(1, "tools/call", {"name": "kitchen_échö", "_meta": meta}), modern=True)
    _, headers, _ = hub.seen[-1]
    assert headers["mcp-protocol-version"] == "2026-07-28"
    assert headers["mcp-method"] == "tools/call"
    assert headers["mcp-name"].startswith("=?base64?")  # not ASCII: the SDK's header encoding
    assert "mcp-session-id" not in headers


REGIONAL = {
    "name": "db_sql",
    "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}},
}


async def test_a_2026_call_carries_the_mcp_param_headers_of_its_listed_tool() -> None:
    hub = FakeHub()
    hub.tools = [REGIONAL]
    remote, _ = make_remote(hub)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    await ask(remote, request(1, "tools/list", {"_meta": meta}), modern=True)
    await ask(remote, request(2, "tools/call", {"name": "db_sql", "arguments": {"region": "eu"}, "_meta": meta}), True)
    assert [method for method, _, _ in hub.seen] == ["tools/list", "tools/call"]
    assert hub.seen[-1][1]["mcp-param-region"] == "eu"


async def test_a_2026_call_before_any_listing_lists_first_under_the_hosts_envelope() -> None:
    hub = FakeHub()
    hub.tools = [REGIONAL]
    remote, _ = make_remote(hub)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "x": 1}
    await ask(remote, request(1, "tools/call", {"name": "db_sql", "arguments": {"region": "eu"}, "_meta": meta}), True)
    await ask(remote, request(2, "tools/call", {"name": "db_sql", "arguments": {"region": "us"}, "_meta": meta}), True)
    assert [method for method, _, _ in hub.seen] == ["tools/list", "tools/call", "tools/call"]  # listed once
    _, headers, sent = hub.seen[0]
    assert sent["params"]["_meta"] == meta and headers["mcp-method"] == "tools/list"
    assert [h["mcp-param-region"] for _, h, _ in hub.seen[1:]] == ["eu", "us"]


def test_backoff_doubles_to_its_cap_with_jitter_below() -> None:
    delays = backoff(0.25, 2.0)
    waits = [next(delays) for _ in range(6)]
    for wait, nominal in zip(waits, [0.25, 0.5, 1.0, 2.0, 2.0, 2.0], strict=True):
        assert nominal * 0.75 <= wait <= nominal
