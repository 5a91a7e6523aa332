"""Exposed names and URIs (hub.relay.naming): `<prefix>_<name>`, `<prefix>+<uri>`, host-safe tool names, renaming."""

from __future__ import annotations

import re
from typing import Any

import pytest

from hub.relay.naming import expose_name, expose_tool_name, expose_uri, map_ui_meta, map_uris, split_uri

HOST_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def time_prefix(uri: str) -> str:
    return expose_uri("time", uri)


# ---- names ---------------------------------------------------------------------------------------------


def test_expose_name_joins_prefix_and_name_with_an_underscore() -> None:
    assert expose_name("time", "get_current_time") == "time_get_current_time"


def test_expose_name_without_prefix_is_the_name_itself() -> None:
    assert expose_name("", "get_current_time") == "get_current_time"


def test_a_name_that_starts_with_the_prefix_is_not_prefixed_again() -> None:
    assert expose_name("git", "git_status") == "git_status"
    assert expose_name("git", "git_status", {"git_status", "git_log"}) == "git_status"


@pytest.mark.parametrize("name", ["git", "gitlab_sync", "git-status", "Git_status", "status_git_"])
def test_only_the_prefix_and_its_underscore_at_the_start_count(name: str) -> None:
    assert expose_name("git", name) == f"git_{name}"


def test_a_name_whose_unprefixed_form_the_child_also_has_keeps_the_doubled_form() -> None:
    siblings = {"status", "git_status"}
    assert expose_name("git", "status", siblings) == "git_status"
    assert expose_name("git", "git_status", siblings) == "git_git_status"


def test_always_prefix_puts_the_prefix_before_every_name() -> None:
    assert expose_name("git", "git_status", always_prefix=True) == "git_git_status"
    assert expose_name("", "git_status", always_prefix=True) == "git_status"  # no prefix: nothing to put
    assert expose_tool_name("git", "git_status", always_prefix=True) == "git_git_status"


NAME_SETS = [
    ["status", "git_status", "git_git_status"],
    ["git_status", "git_git_status"],
    ["git_", "", "git_git_", "git"],
    ["a", "git_a", "git_git_a", "git_git_git_a", "b", "git_b_c", "b_c"],
]


@pytest.mark.parametrize("own", NAME_SETS)
def test_the_exposed_names_of_one_child_are_distinct_and_all_start_with_its_prefix(own: list[str]) -> None:
    exposed = [expose_name("git", name, set(own)) for name in own]
    assert len(set(exposed)) == len(own), exposed
    assert all(e.startswith("git_") for e in exposed)
    assert [expose_name("git", name, set(reversed(own))) for name in reversed(own)] == exposed[::-1]  # no order


def test_the_skip_rule_applies_before_a_long_name_is_cut() -> None:
    long = "git_" + "a" * 80
    assert expose_tool_name("git", long, 54) == expose_tool_name("", long, 54)
    assert expose_tool_name("git", long, 54, {"a" * 80}) != expose_tool_name("git", "a" * 80, 54, {long})


@pytest.mark.parametrize(
    ("prefix", "name"),
    [("time", "get_current_time"), ("git", "git-status"), ("", "A_b-9"), ("a", "x" * 62), ("", "x" * 64)],
)
def test_a_tool_name_that_already_fits_is_unchanged(prefix: str, name: str) -> None:
    assert expose_tool_name(prefix, name) == expose_name(prefix, name)


@pytest.mark.parametrize(
    ("prefix", "name", "exposed"),
    [
        ("fs", "read.file", "fs_read-file"),
        ("", "a.b.c", "a-b-c"),
        ("web", "search web/images", "web_search-web-images"),
        ("x", "café", "x_caf-"),
    ],
)
def test_characters_outside_the_host_alphabet_become_dashes(prefix: str, name: str, exposed: str) -> None:
    assert expose_tool_name(prefix, name) == exposed


def test_a_name_over_64_characters_is_cut_and_given_an_8_hex_hash() -> None:
    exposed = expose_tool_name("svc", "a" * 100)
    assert len(exposed) == 64
    assert exposed.startswith("svc_" + "a" * 51)
    assert re.fullmatch(r"-[0-9a-f]{8}", exposed[-9:])


def test_a_cut_name_is_deterministic() -> None:
    assert expose_tool_name("svc", "b" * 80) == expose_tool_name("svc", "b" * 80)


def test_two_long_names_sharing_a_prefix_stay_distinct() -> None:
    shared = "describe_the_resource_in_great_detail_and_with_every_field_"
    first = expose_tool_name("svc", shared + "including_history")
    second = expose_tool_name("svc", shared + "excluding_history")
    assert first[:55] == second[:55]  # the cut parts are identical...
    assert first != second  # ...and the hash tells them apart


def test_a_long_name_with_invalid_characters_is_both_cleaned_and_cut() -> None:
    exposed = expose_tool_name("svc", "x." * 50)
    assert len(exposed) == 64
    assert "." not in exposed
    assert re.fullmatch(r"-[0-9a-f]{8}", exposed[-9:])


TRICKY = [
    ("time", "get_current_time"),
    ("", ""),
    ("", "."),
    ("a", " "),
    ("a", "名前"),
    ("a", "emoji🙂tool"),
    ("a", "tab\tand\nnewline"),
    ("", "x" * 65),
    ("prefix-with-dashes", "y" * 200),
    ("", "-" * 70),
    ("a", "semi;colon:colon,comma"),
    ("a", "../../etc/passwd"),
]


@pytest.mark.parametrize(("prefix", "name"), TRICKY)
def test_every_exposed_tool_name_matches_the_strictest_host_rule(prefix: str, name: str) -> None:
    assert HOST_TOOL_NAME.match(expose_tool_name(prefix, name))


# ---- URIs ----------------------------------------------------------------------------------------------


def test_expose_uri_puts_the_prefix_in_front_of_the_scheme() -> None:
    assert expose_uri("time", "file:///etc/zones") == "time+file:///etc/zones"


def test_expose_uri_without_prefix_is_the_uri_itself() -> None:
    assert expose_uri("", "file:///etc/zones") == "file:///etc/zones"


def test_split_uri_takes_off_one_of_our_prefixes() -> None:
    assert split_uri("time+file:///etc/zones", frozenset({"time", "git"})) == ("time", "file:///etc/zones")


def test_split_uri_only_splits_at_the_first_plus() -> None:
    assert split_uri("git+git+ssh://host/repo", frozenset({"git"})) == ("git", "git+ssh://host/repo")


def test_split_uri_leaves_an_unprefixed_uri_whole() -> None:
    assert split_uri("file:///etc/zones", frozenset({"time"})) == ("", "file:///etc/zones")


def test_split_uri_leaves_a_plus_scheme_that_is_not_our_prefix_whole() -> None:
    assert split_uri("git+ssh://host/repo", frozenset({"time"})) == ("", "git+ssh://host/repo")


def test_split_uri_inverts_expose_uri() -> None:
    uri = "svn+ssh://host/repo?rev=1#frag"
    assert split_uri(expose_uri("code", uri), frozenset({"code"})) == ("code", uri)


@pytest.mark.parametrize(
    ("uri", "exposed"),
    [
        ("ui://get-time/mcp-app.html", "ui://app+get-time/mcp-app.html"),
        ("ui://weather-dashboard", "ui://app+weather-dashboard"),
        ("ui:///no-authority.html", "ui://app+/no-authority.html"),
    ],
)
def test_an_apps_ui_uri_keeps_its_scheme_with_the_prefix_before_its_authority(uri: str, exposed: str) -> None:
    assert expose_uri("app", uri) == exposed
    assert split_uri(exposed, frozenset({"app", "time"})) == ("app", uri)


def test_an_unprefixed_ui_uri_is_left_whole() -> None:
    assert expose_uri("", "ui://get-time/x.html") == "ui://get-time/x.html"
    assert split_uri("ui://get-time/x.html", frozenset({"app"})) == ("", "ui://get-time/x.html")
    # A `+` in an authority that is not one of our prefixes: the child's own URI.
    assert split_uri("ui://a+b/x.html", frozenset({"app"})) == ("", "ui://a+b/x.html")


def test_a_ui_uri_is_never_prefixed_in_front_of_its_scheme() -> None:
    assert split_uri("app+ui://get-time/x.html", frozenset({"app"})) == ("app", "ui://get-time/x.html")
    assert not expose_uri("app", "ui://get-time/x.html").startswith("app+")


def test_map_ui_meta_renames_both_forms_of_a_tools_app_uri_and_keeps_the_rest() -> None:
    meta = {"ui": {"resourceUri": "ui://t/a.html", "visibility": ["app"]}, "ui/resourceUri": "ui://t/a.html", "k": 1}
    renamed = map_ui_meta(meta, lambda uri: expose_uri("app", uri))
    assert renamed == {
        "ui": {"resourceUri": "ui://app+t/a.html", "visibility": ["app"]},
        "ui/resourceUri": "ui://app+t/a.html",
        "k": 1,
    }
    untouched = {"ui": {"visibility": ["model"]}, "other": "ui://t/a.html"}
    assert map_ui_meta(untouched, lambda uri: "x") is untouched
    assert map_ui_meta(None, lambda uri: "x") is None


def test_map_uris_renames_the_app_uri_a_tool_result_carries_in_its_meta() -> None:
    result = {"content": [], "_meta": {"ui": {"resourceUri": "ui://t/a.html"}}}
    renamed = map_uris(result, lambda uri: expose_uri("app", uri))
    assert renamed["_meta"] == {"ui": {"resourceUri": "ui://app+t/a.html"}}
    plain = {"content": [], "_meta": {"ui": {"csp": {}}}}
    assert map_uris(plain, lambda uri: expose_uri("app", uri)) is plain


def test_read_contents_of_an_app_are_renamed_back_to_the_exposed_ui_uri() -> None:
    result = {"contents": [{"uri": "ui://t/a.html", "mimeType": "text/html;profile=mcp-app", "text": "<html>"}]}
    renamed = map_uris(result, lambda uri: expose_uri("app", uri))
    assert renamed["contents"][0]["uri"] == "ui://app+t/a.html"


# ---- URIs inside results -------------------------------------------------------------------------------


def test_a_resource_link_in_a_tool_result_is_renamed() -> None:
    result: dict[str, Any] = {
        "content": [
            {"type": "text", "text": "see the link"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
        ],
        "isError": False,
    }
    mapped = map_uris(result, time_prefix)
    assert mapped["content"][1] == {"type": "resource_link", "uri": "time+file:///a.txt", "name": "a"}
    assert mapped["content"][0] is result["content"][0]
    assert mapped["isError"] is False
    assert result["content"][1]["uri"] == "file:///a.txt"  # the child's result is not modified


def test_an_embedded_resource_in_a_tool_result_is_renamed() -> None:
    result = {
        "content": [{"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAE=", "mimeType": "x/y"}}]
    }
    mapped = map_uris(result, time_prefix)
    assert mapped["content"][0]["resource"] == {"uri": "time+file:///b.bin", "blob": "AAE=", "mimeType": "x/y"}


def test_the_contents_of_a_read_result_are_renamed() -> None:
    result = {
        "contents": [
            {"uri": "file:///a.txt", "text": "hello", "mimeType": "text/plain"},
            {"uri": "file:///b.bin", "blob": "AAE="},
        ]
    }
    mapped = map_uris(result, time_prefix)
    assert [c["uri"] for c in mapped["contents"]] == ["time+file:///a.txt", "time+file:///b.bin"]
    assert mapped["contents"][0]["text"] == "hello"


def test_an_embedded_resource_as_the_single_content_of_a_prompt_message_is_renamed() -> None:
    result = {
        "description": "review",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "please review"}},
            {"role": "user", "content": {"type": "resource", "resource": {"uri": "file:///c.py", "text": "x = 1"}}},
        ],
    }
    mapped = map_uris(result, time_prefix)
    assert mapped["messages"][1]["content"]["resource"]["uri"] == "time+file:///c.py"
    assert mapped["messages"][0] is result["messages"][0]
    assert mapped["description"] == "review"


def test_a_uri_key_outside_a_resource_shape_is_not_renamed() -> None:
    # A tool's own data that happens to have a "uri" field is not a resource the hub serves.
    result = {"content": [{"type": "text", "text": "x", "uri": "file:///not-a-resource"}]}
    assert map_uris(result, time_prefix) is result


def test_a_result_without_uris_is_returned_as_the_very_same_object() -> None:
    calls: list[str] = []

    def rename(uri: str) -> str:
        calls.append(uri)
        return "renamed"

    results: list[Any] = [
        {"content": [{"type": "text", "text": "12:00"}], "structuredContent": {"uri": "x"}, "isError": False},
        {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]},
        {"contents": []},
        {},
        [],
        "text",
        None,
    ]
    for result in results:
        assert map_uris(result, rename) is result
    assert calls == []
