"""Extensions as the hub negotiates them: what a child is told, what a host is told, and the refusal of a method."""

from __future__ import annotations

from hub.protocol import extensions
from hub.protocol.extensions import RELAYABLE, UI
from hub.protocol.revisions import CLIENT_CAPABILITIES

UI_SETTINGS = {"mimeTypes": ["text/html;profile=mcp-app"]}


def test_a_child_is_told_the_relayable_extensions_of_its_host_with_the_hosts_settings() -> None:
    host = {"roots": {}, "extensions": {UI: {"mimeTypes": ["text/html;profile=mcp-app", "x"]}, "com.example/x": {}}}
    capabilities = extensions.client_capabilities(host)
    assert capabilities["extensions"] == {UI: {"mimeTypes": ["text/html;profile=mcp-app", "x"]}}
    assert {k: v for k, v in capabilities.items() if k != "extensions"} == CLIENT_CAPABILITIES


def test_a_host_without_extensions_gives_its_child_none() -> None:
    assert extensions.client_capabilities({"roots": {}}) == CLIENT_CAPABILITIES
    assert extensions.client_capabilities({"extensions": "not an object"}) == CLIENT_CAPABILITIES
    assert extensions.client_capabilities({"extensions": {UI: "not an object"}}) == CLIENT_CAPABILITIES


def test_the_shared_connection_is_told_every_relayable_extension_with_the_hubs_settings() -> None:
    capabilities = extensions.client_capabilities(None)
    assert capabilities["extensions"] == RELAYABLE
    assert capabilities["extensions"][UI] == UI_SETTINGS
    assert capabilities["extensions"] is not RELAYABLE  # a copy: nothing downstream can change the table


def test_a_host_is_told_the_relayable_extensions_its_children_declared_first_settings_kept() -> None:
    children = [
        {"tools": {}},
        {"extensions": {UI: {"a": 1}, "com.example/unknown": {}}},
        {"extensions": {UI: {"a": 2}}},
    ]
    assert extensions.server_extensions(children) == {UI: {"a": 1}}
    assert extensions.server_extensions([{"tools": {}}]) == {}


def test_while_children_start_every_relayable_extension_is_declared() -> None:
    assert extensions.server_extensions([], starting=True) == {name: {} for name in RELAYABLE}
    assert extensions.server_extensions([{"extensions": {UI: {"a": 1}}}], starting=True)[UI] == {"a": 1}


def test_server_capabilities_carry_extensions_only_when_there_are_some() -> None:
    base = {"tools": {"listChanged": True}}
    assert extensions.server_capabilities(base, {}) == base
    assert extensions.server_capabilities(base, {UI: {}}) == {**base, "extensions": {UI: {}}}
    assert "extensions" not in base


def test_a_method_the_hub_does_not_serve_is_refused_naming_its_extension() -> None:
    assert "'io.modelcontextprotocol/ui'" in extensions.method_not_found("ui/initialize")
    assert "never reaches a server" in extensions.method_not_found("ui/message")
    vendor = extensions.method_not_found("com.example/frobnicate")
    assert "extension the hub does not relay" in vendor and UI in vendor
    assert extensions.method_not_found("nope/nothing") == "Method not found: 'nope/nothing'"
    assert extensions.owner("ui/notifications/size-changed") == UI
    assert extensions.owner("tools/call") is None
