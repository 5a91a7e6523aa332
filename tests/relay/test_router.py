"""The route step of the relay (hub.relay.router) for MCP Apps: an app's call by its server's own tool name, the
app URIs of a tool result and of a read, renamed inside the ui:// scheme, and app-only tools kept from the model's
hub_call_tool."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest

from hub.access.identity import Identity
from hub.access.policy import Policy, Rule
from hub.relay.catalog import CALL_TOOL
from hub.upstream.child import ChildState
from tests.relay.harness import FakeSession, running_relay

pytestmark = pytest.mark.anyio

TEXT = {"content": [{"type": "text", "text": "12:00"}]}


async def test_an_apps_call_by_its_servers_own_name_reaches_that_server_and_is_logged_by_the_hubs_name() -> None:
    async with running_relay() as relay:
        app = relay.add_child("app", tools=("get-time",))
        relay.add_child("time", tools=("now",))
        request = relay.call_tool("get-time", {"tz": "UTC"})
        assert app.last_request("tools/call")["params"]["name"] == "get-time"
        assert app.last_request("tools/call")["params"]["arguments"] == {"tz": "UTC"}
        app.answer(1, TEXT)
        assert request.result == TEXT
        (line,) = relay.lines(request)
        assert (line["name"], line["child"], line["original"], line["outcome"]) == (
            "app_get-time",
            "app",
            "get-time",
            "ok",
        )


async def test_an_own_name_two_servers_have_is_refused_and_neither_is_called() -> None:
    async with running_relay() as relay:
        a = relay.add_child("a", tools=("get-time",))
        b = relay.add_child("b", tools=("get-time",))
        request = relay.call_tool("get-time")
        await request.answered()
        assert request.failure["code"] == -32602
        assert request.failure["message"].startswith("Ambiguous tool: 'get-time'")
        assert request.failure["data"] == {"candidates": ["a_get-time", "b_get-time"]}
        assert a.wire.requests("tools/call") == [] and b.wire.requests("tools/call") == []


async def test_an_own_name_waits_for_the_servers_still_starting_before_it_is_resolved() -> None:
    """One server that has the name is up, another is still starting: routing to the one would be a guess."""
    async with running_relay() as relay:
        a = relay.add_child("a", tools=("get-time",))
        b = relay.add_child("b")
        b.child.state, b.child.settled = ChildState.STARTING, anyio.Event()
        request = relay.call_tool("get-time")
        b.child.listing = replace(b.child.listing, tools=({"name": "get-time", "inputSchema": {"type": "object"}},))
        b.child.state = ChildState.READY
        relay.catalog.rebuild()
        b.child.settled.set()
        await request.answered()
        assert request.failure["data"] == {"candidates": ["a_get-time", "b_get-time"]}
        assert a.wire.requests("tools/call") == []


async def test_the_callers_policy_decides_which_servers_own_name_it_is() -> None:
    async with running_relay() as relay:
        relay.add_child("a", tools=("get-time",))
        b = relay.add_child("b", tools=("get-time",))
        relay.policy = Policy((Rule("b-only", subjects=frozenset({"bea"}), allow=("b_*",)),), "deny")
        bea = FakeSession("conn-bea", identity=Identity("bea"))
        request = relay.call_tool("get-time", session=bea)
        assert b.last_request("tools/call")["params"]["name"] == "get-time"
        b.answer(1, TEXT)
        assert request.result == TEXT
        nobody = relay.call_tool("get-time", session=FakeSession("conn-x", identity=Identity("x")))
        await nobody.answered()
        assert nobody.failure["message"] == "Unknown tool: 'get-time'", "what it may not use does not exist"


async def test_a_name_that_is_exposed_wins_over_an_own_name() -> None:
    async with running_relay() as relay:
        plain = relay.add_child("plain", prefix="", tools=("get-time",))
        relay.add_child("app", tools=("get-time",))
        request = relay.call_tool("get-time")
        assert plain.last_request("tools/call")["params"]["name"] == "get-time"
        plain.answer(1, TEXT)
        assert request.result == TEXT


async def test_a_tool_results_app_uri_and_a_read_of_the_app_are_renamed_inside_the_ui_scheme() -> None:
    async with running_relay() as relay:
        app = relay.add_child("app", tools=("get-time",), resources=("ui://get-time/mcp-app.html",))
        request = relay.call_tool("app_get-time")
        app.answer(1, {**TEXT, "_meta": {"ui": {"resourceUri": "ui://get-time/mcp-app.html"}}})
        assert request.result["_meta"] == {"ui": {"resourceUri": "ui://app+get-time/mcp-app.html"}}
        read = relay.request("resources/read", {"uri": "ui://app+get-time/mcp-app.html"})
        assert app.last_request("resources/read")["params"]["uri"] == "ui://get-time/mcp-app.html"
        html = {"uri": "ui://get-time/mcp-app.html", "mimeType": "text/html;profile=mcp-app", "text": "<html/>"}
        app.answer(2, {"contents": [html]})
        assert read.result == {"contents": [{**html, "uri": "ui://app+get-time/mcp-app.html"}]}


async def test_hub_call_tool_is_the_models_and_cannot_call_a_tool_for_its_app_only() -> None:
    async with running_relay() as relay:
        relay.catalog.reserved = lambda: frozenset({CALL_TOOL})
        app = relay.add_child("app", tools=("refresh", "get-time"))
        tools = [dict(t) for t in app.child.listing.tools]
        tools[0]["_meta"] = {"ui": {"visibility": ["app"]}}
        app.child.listing = replace(app.child.listing, tools=tuple(tools))
        relay.catalog.rebuild()
        refused = relay.call_tool(CALL_TOOL, {"name": "app_refresh"})
        await refused.answered()
        assert refused.result["isError"] is True
        assert "for its app only" in refused.result["content"][0]["text"]
        assert app.wire.requests("tools/call") == []
        allowed = relay.call_tool(CALL_TOOL, {"name": "app_get-time"})
        assert app.last_request("tools/call")["params"]["name"] == "get-time"
        app.answer(1, TEXT)
        assert allowed.result == TEXT
        by_app = relay.call_tool("refresh")  # the app itself, by its server's own name, through its host
        assert app.last_request("tools/call")["params"]["name"] == "refresh"
        app.answer(2, TEXT)
        assert by_app.result == TEXT
