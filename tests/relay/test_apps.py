"""MCP Apps through the hub (hub.relay.apps): a tool's app URIs as the host reads them, app-only tools, and the
tools an app calls by its server's own names."""

from __future__ import annotations

import pytest

from hub.relay.apps import AmbiguousOwnName, OwnNames, app_only, expose_app_uris


def test_a_tools_app_uris_are_renamed_with_its_childs_prefix() -> None:
    tool = {"name": "get-time", "_meta": {"ui": {"resourceUri": "ui://get-time/mcp-app.html"}}}
    exposed = expose_app_uris(tool, "app")
    assert exposed["_meta"] == {"ui": {"resourceUri": "ui://app+get-time/mcp-app.html"}}
    assert tool["_meta"] == {"ui": {"resourceUri": "ui://get-time/mcp-app.html"}}  # the child's own is untouched


def test_a_tool_without_app_uris_or_without_prefix_is_the_very_same_dict() -> None:
    plain = {"name": "now", "_meta": {"vendor/x": 1}}
    assert expose_app_uris(plain, "app") is plain
    app = {"name": "get-time", "_meta": {"ui/resourceUri": "ui://get-time/mcp-app.html"}}
    assert expose_app_uris(app, "") is app


@pytest.mark.parametrize(
    ("meta", "only"),
    [
        (None, False),
        ({"ui": {"resourceUri": "ui://x"}}, False),
        ({"ui": {"visibility": ["model", "app"]}}, False),
        ({"ui": {"visibility": ["model"]}}, False),
        ({"ui": {"visibility": ["app"]}}, True),
        ({"ui": {"visibility": []}}, True),
        ({"ui": {"visibility": "app"}}, False),  # not a list: the default (model and app)
    ],
)
def test_app_only_is_a_visibility_without_model(meta: object, only: bool) -> None:
    tool = {"name": "t"} if meta is None else {"name": "t", "_meta": meta}
    assert app_only(tool) is only


def test_an_own_name_leads_to_the_one_tool_the_caller_may_use() -> None:
    names = OwnNames([("a_get-time", "get-time"), ("b_get-time", "get-time"), ("a_other", "other")])
    assert names.resolve("other", lambda exposed: True) == "a_other"
    assert names.resolve("get-time", lambda exposed: exposed != "b_get-time") == "a_get-time"
    assert names.resolve("missing", lambda exposed: True) is None
    assert names.resolve("get-time", lambda exposed: False) is None


def test_an_own_name_of_two_usable_tools_is_ambiguous_and_never_guessed() -> None:
    names = OwnNames([("a_get-time", "get-time"), ("b_get-time", "get-time")])
    with pytest.raises(AmbiguousOwnName) as raised:
        names.resolve("get-time", lambda exposed: True)
    assert raised.value.exposed == ("a_get-time", "b_get-time")


def test_an_unprefixed_tool_is_not_an_own_name_to_resolve() -> None:
    # Its exposed name is its own: the router finds it by that before it looks at own names.
    assert OwnNames([("now", "now")]).resolve("now", lambda exposed: True) is None
