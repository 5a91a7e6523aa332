"""The merged namespace (hub.relay.catalog) built from children's listings: prefixes, filters, collisions, renames,
URI routing, the encoded listings, and the catalog's rebuilds."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest
from structlog.testing import capture_logs

from hub.access.identity import Identity
from hub.access.policy import OPEN, Policy, Rule, View
from hub.config import ServerConfig, ToolFilter
from hub.config.settings import HubSettings
from hub.platform.watchdog import Watchdog
from hub.protocol import revisions
from hub.relay.builtins import HEALTH_TOOL_DEF
from hub.relay.catalog import Catalog, Collision, Renamed, Route, build_namespace
from hub.upstream.child import Child
from hub.upstream.listing import CacheHint, Listing
from tests.support.paths import REPO


def child(
    name: str,
    prefix: str | None = None,
    *,
    tools: list[str] | None = None,
    prompts: list[str] | None = None,
    resources: list[str] | None = None,
    templates: list[str] | None = None,
    allow: tuple[str, ...] = ("*",),
    deny: tuple[str, ...] = (),
) -> Child:
    made = Child(
        name,
        name if prefix is None else prefix,
        ServerConfig(command="x", tools=ToolFilter(allow=allow, deny=deny)),
        None,  # type: ignore[arg-type]  # build_namespace never reports to it
        Watchdog(),  # never started: nothing is spawned
    )
    made.listing = Listing(
        tools=tuple(
            {"name": t, "description": f"{name}'s {t}", "inputSchema": {"type": "object"}} for t in tools or ()
        ),
        prompts=tuple({"name": p} for p in prompts or ()),
        resources=tuple({"uri": u, "name": u.rsplit("/", 1)[-1]} for u in resources or ()),
        templates=tuple({"uriTemplate": t, "name": "tpl"} for t in templates or ()),
    )
    return made


def names(items: tuple[dict[str, Any], ...], key: str = "name") -> list[str]:
    return [item[key] for item in items]


# ---- prefixes ------------------------------------------------------------------------------------------


def test_tools_and_prompts_get_prefix_underscore_name() -> None:
    ns = build_namespace([child("time", tools=["get_current_time", "convert_time"], prompts=["explain"])])
    assert names(ns.tools) == ["time_get_current_time", "time_convert_time"]
    assert names(ns.prompts) == ["time_explain"]
    assert ns.tool_routes["time_convert_time"] == Route("time", "convert_time")
    assert ns.prompt_routes["time_explain"] == Route("time", "explain")


def test_resources_and_templates_get_prefix_plus_uri() -> None:
    ns = build_namespace([child("docs", resources=["file:///a.md"], templates=["file:///{path}"])])
    assert names(ns.resources, "uri") == ["docs+file:///a.md"]
    assert names(ns.templates, "uriTemplate") == ["docs+file:///{path}"]
    assert ns.resource_routes["docs+file:///a.md"] == Route("docs", "file:///a.md")
    assert ns.template_routes["docs+file:///{path}"] == Route("docs", "file:///{path}")


def test_other_fields_of_an_item_pass_through_and_the_childs_listing_is_not_modified() -> None:
    time = child("time", tools=["now"])
    ns = build_namespace([time])
    assert ns.tools[0] == {"name": "time_now", "description": "time's now", "inputSchema": {"type": "object"}}
    assert time.listing.tools[0]["name"] == "now"


def test_an_empty_prefix_exposes_names_and_uris_unchanged() -> None:
    ns = build_namespace([child("plain", "", tools=["search"], resources=["note://1"], templates=["note://{id}"])])
    assert names(ns.tools) == ["search"]
    assert names(ns.resources, "uri") == ["note://1"]
    assert names(ns.templates, "uriTemplate") == ["note://{id}"]
    assert ns.tool_routes["search"] == Route("plain", "search")


def test_the_listing_follows_config_order() -> None:
    ns = build_namespace([child("b", tools=["x"]), child("a", tools=["x"])])
    assert names(ns.tools) == ["b_x", "a_x"]
    assert list(ns.prefixes) == ["b", "a"]


# ---- tool filters --------------------------------------------------------------------------------------


def test_allow_and_deny_globs_hide_tools_and_count_them() -> None:
    git = child(
        "git",
        tools=["git_status", "git_log", "git_commit", "git_reset", "other"],
        allow=("git_*",),
        deny=("git_commit", "git_re*"),
    )
    ns = build_namespace([git])
    assert names(ns.tools) == ["git_status", "git_log"]
    assert "git_commit" not in ns.tool_routes
    assert "git_other" not in ns.tool_routes
    assert ns.hidden_tools == {"git": 3}


def test_deny_wins_over_allow() -> None:
    ns = build_namespace([child("a", tools=["run"], allow=("run",), deny=("run",))])
    assert ns.tools == ()
    assert ns.hidden_tools == {"a": 1}


def test_globs_are_case_sensitive() -> None:
    ns = build_namespace([child("a", tools=["Delete", "delete"], deny=("delete",))])
    assert names(ns.tools) == ["a_Delete"]


def test_filters_apply_to_tools_only() -> None:
    ns = build_namespace([child("a", tools=["t"], prompts=["t"], resources=["x://t"], allow=())])
    assert ns.tools == ()
    assert names(ns.prompts) == ["a_t"]
    assert names(ns.resources, "uri") == ["a+x://t"]


def test_a_child_with_nothing_hidden_is_not_in_hidden_tools() -> None:
    ns = build_namespace([child("a", tools=["t"]), child("b", tools=["u"], deny=("u",))])
    assert ns.hidden_tools == {"b": 1}


# ---- collisions ----------------------------------------------------------------------------------------


def test_a_collision_between_unprefixed_children_keeps_the_first_in_config_order() -> None:
    first = child("first", "", tools=["search", "only_first"], prompts=["p"], resources=["note://1"])
    second = child("second", "", tools=["search", "only_second"], prompts=["p"], resources=["note://1"])
    ns = build_namespace([first, second])
    assert names(ns.tools) == ["search", "only_first", "only_second"]
    assert ns.tools[0]["description"] == "first's search"
    assert ns.tool_routes["search"] == Route("first", "search")
    assert ns.prompt_routes["p"].child == "first"
    assert ns.resource_routes["note://1"].child == "first"
    assert set(ns.collisions) == {
        Collision("tool", "search", kept="first", dropped="second"),
        Collision("prompt", "p", kept="first", dropped="second"),
        Collision("resource", "note://1", kept="first", dropped="second"),
    }


def test_swapping_config_order_swaps_the_winner() -> None:
    ns = build_namespace([child("second", "", tools=["search"]), child("first", "", tools=["search"])])
    assert ns.tool_routes["search"].child == "second"
    assert ns.collisions == (Collision("tool", "search", kept="second", dropped="first"),)


def test_a_prefixed_name_can_collide_with_an_unprefixed_one() -> None:
    ns = build_namespace([child("plain", "", tools=["time_now"]), child("time", tools=["now"])])
    assert ns.tool_routes["time_now"] == Route("plain", "time_now")
    assert ns.collisions == (Collision("tool", "time_now", kept="plain", dropped="time"),)


def test_a_reserved_name_wins_over_a_childs_tool() -> None:
    ns = build_namespace(
        [child("hub", tools=["health", "other"]), child("plain", "", tools=["hub_health"])],
        reserved=frozenset({"hub_health"}),
    )
    assert "hub_health" not in names(ns.tools)
    assert "hub_health" not in ns.tool_routes  # the hub answers it itself, no child does
    assert names(ns.tools) == ["hub_other"]
    assert set(ns.collisions) == {
        Collision("tool", "hub_health", kept="hub", dropped="hub"),
        Collision("tool", "hub_health", kept="hub", dropped="plain"),
    }


def test_without_reservation_a_child_may_use_the_name() -> None:
    ns = build_namespace([child("plain", "", tools=["hub_health"])])
    assert ns.tool_routes["hub_health"] == Route("plain", "hub_health")
    assert ns.collisions == ()


# ---- renamed tools -------------------------------------------------------------------------------------


def test_a_tool_name_that_needs_renaming_is_recorded_and_routed_to_the_original() -> None:
    long_name = "x" * 80
    ns = build_namespace([child("fs", tools=["read.file", "plain", long_name])])
    exposed = names(ns.tools)
    assert exposed[:2] == ["fs_read-file", "fs_plain"]
    assert len("mcp__hub__" + exposed[2]) == 64  # fits the default name_budget: Claude Code's prefix included
    assert (
        len(build_namespace([child("fs", tools=[long_name])], settings=HubSettings(name_budget=64)).tools[0]["name"])
        == 64
    )
    assert ns.renamed == (Renamed("fs", "read.file", "fs_read-file"), Renamed("fs", long_name, exposed[2]))
    assert ns.tool_routes["fs_read-file"] == Route("fs", "read.file")
    assert ns.tool_routes[exposed[2]] == Route("fs", long_name)


def test_a_renamed_tool_that_lands_on_an_existing_name_is_a_collision_not_an_overwrite() -> None:
    ns = build_namespace([child("fs", tools=["read-file", "read.file"])])
    assert ns.tool_routes["fs_read-file"] == Route("fs", "read-file")
    assert ns.collisions == (Collision("tool", "fs_read-file", kept="fs", dropped="fs"),)
    assert names(ns.tools) == ["fs_read-file"]


# ---- routing URIs --------------------------------------------------------------------------------------


def test_route_uri_finds_a_listed_resource() -> None:
    ns = build_namespace([child("time", resources=["file:///zones"]), child("plain", "", resources=["note://1"])])
    assert ns.route_uri("time+file:///zones") == Route("time", "file:///zones")
    assert ns.route_uri("note://1") == Route("plain", "note://1")


def test_route_uri_sends_an_unlisted_prefixed_uri_to_the_prefix_owner() -> None:
    ns = build_namespace([child("time"), child("git", resources=["file:///listed"])])
    assert ns.route_uri("git+file:///not/listed") == Route("git", "file:///not/listed")


def test_route_uri_uses_a_custom_prefix_not_the_server_name() -> None:
    ns = build_namespace([child("filesystem", "fs")])
    assert ns.route_uri("fs+file:///x") == Route("filesystem", "file:///x")
    assert ns.route_uri("filesystem+file:///x") is None


def test_route_uri_matches_an_unprefixed_childs_template() -> None:
    ns = build_namespace(
        [child("notes", "", templates=["note://{id}"]), child("tickets", "", templates=["ticket://{project}/{id}"])]
    )
    assert ns.route_uri("ticket://hub/42") == Route("tickets", "ticket://hub/42")
    assert ns.route_uri("note://7") == Route("notes", "note://7")


def test_route_uri_of_an_unknown_uri_with_two_unprefixed_children_is_none() -> None:
    ns = build_namespace([child("notes", "", templates=["note://{id}"]), child("tickets", "")])
    assert ns.route_uri("mail://inbox/1") is None


def test_route_uri_of_an_unknown_uri_goes_to_the_only_unprefixed_child() -> None:
    ns = build_namespace([child("time"), child("plain", "")])
    assert ns.route_uri("mail://inbox/1") == Route("plain", "mail://inbox/1")


def test_route_uri_with_only_prefixed_children_and_no_prefix_is_none() -> None:
    ns = build_namespace([child("time"), child("git")])
    assert ns.route_uri("file:///x") is None
    assert ns.route_uri("other+file:///x") is None


def test_a_template_that_cannot_be_parsed_is_still_listed() -> None:
    ns = build_namespace([child("odd", templates=["broken://{unclosed"])])
    assert names(ns.templates, "uriTemplate") == ["odd+broken://{unclosed"]
    assert ns.route_uri("odd+broken://x") == Route("odd", "broken://x")


def test_an_empty_list_of_children_is_an_empty_namespace() -> None:
    ns = build_namespace([], reserved=frozenset({"hub_health"}))
    assert ns.tools == ns.prompts == ns.resources == ns.templates == ()
    assert ns.tool_routes == {}
    assert ns.route_uri("file:///x") is None


# ---- the encoded listings ------------------------------------------------------------------------------


def test_a_listing_is_the_namespaces_items_with_the_builtin_tools_first() -> None:
    ns = build_namespace([child("time", tools=["now"])])
    listed = json.loads(ns.listing("tools/list", revisions.LATEST_HANDSHAKE, (HEALTH_TOOL_DEF,)))
    assert names(tuple(listed["tools"])) == ["hub_health", "time_now"]
    assert set(listed) == {"tools"}, "a handshake-era listing has no era fields"


@pytest.mark.parametrize(
    ("method", "key", "field", "expected"),
    [
        ("prompts/list", "prompts", "name", "docs_ask"),
        ("resources/list", "resources", "uri", "docs+file:///a.md"),
        ("resources/templates/list", "resourceTemplates", "uriTemplate", "docs+file:///{path}"),
    ],
)
def test_every_list_method_lists_its_own_kind(method: str, key: str, field: str, expected: str) -> None:
    ns = build_namespace([child("docs", prompts=["ask"], resources=["file:///a.md"], templates=["file:///{path}"])])
    listed = json.loads(ns.listing(method, revisions.LATEST_HANDSHAKE))
    assert list(listed) == [key]
    assert names(tuple(listed[key]), field) == [expected]


def test_a_2026_listing_carries_the_result_type_cache_hints_and_the_hubs_identity() -> None:
    ns = build_namespace([child("time", tools=["now"])])
    listed = json.loads(ns.listing("tools/list", revisions.LATEST_MODERN))
    assert names(tuple(listed["tools"])) == ["time_now"]
    assert listed["resultType"] == "complete"
    assert (listed["ttlMs"], listed["cacheScope"]) == (0, "private")
    assert listed["_meta"] == {revisions.SERVER_INFO_KEY: revisions.SERVER_INFO}


def test_a_listing_is_encoded_once_per_namespace_and_revision() -> None:
    ns = build_namespace([child("time", tools=["now"])])
    first = ns.listing("tools/list", revisions.LATEST_HANDSHAKE)
    assert ns.listing("tools/list", revisions.LATEST_HANDSHAKE) is first
    assert ns.listing("tools/list", revisions.LATEST_MODERN) != first
    other = build_namespace([child("time", tools=["now", "later"])])
    assert names(tuple(json.loads(other.listing("tools/list", revisions.LATEST_HANDSHAKE))["tools"])) == [
        "time_now",
        "time_later",
    ], "a new namespace never answers with another's encoding"


def test_a_malformed_item_is_left_out_of_the_listing_and_the_others_stay() -> None:
    broken = child("odd", tools=["good"])
    broken.listing = Listing(tools=({"name": "bad"}, *broken.listing.tools))  # no inputSchema
    ns = build_namespace([broken])
    for version in (*revisions.HANDSHAKE_VERSIONS, revisions.LATEST_MODERN):
        assert names(tuple(json.loads(ns.listing("tools/list", version))["tools"])) == ["odd_good"], version
    assert "odd_bad" in ns.tool_routes, "it is still routed: only the listing leaves it out"


# ---- the catalog ---------------------------------------------------------------------------------------


def test_a_rebuild_reports_the_kinds_whose_listing_changed() -> None:
    catalog = Catalog(lambda: frozenset({"hub_health"}))
    time = child("time", tools=["now"])
    catalog.children = {"time": time}
    assert catalog.rebuild() == ["tools"]
    assert catalog.namespace.tool_routes == {"time_now": Route("time", "now")}
    assert catalog.rebuild() == [], "nothing changed"
    time.listing = Listing(tools=time.listing.tools, prompts=({"name": "p"},))
    assert catalog.rebuild() == ["prompts"]
    time.listing = Listing(
        tools=time.listing.tools, prompts=time.listing.prompts, templates=({"uriTemplate": "x://{a}"},)
    )
    assert catalog.rebuild() == ["resources"], "templates are announced as resources"
    catalog.children = {}
    assert catalog.rebuild() == ["tools", "prompts", "resources"]
    assert catalog.namespace.tool_routes == {}


def test_the_catalog_reserves_what_the_hub_says_at_each_rebuild() -> None:
    reserved: set[str] = set()
    catalog = Catalog(lambda: frozenset(reserved))
    catalog.children = {"plain": child("plain", "", tools=["hub_health"])}
    catalog.rebuild()
    assert catalog.namespace.tool_routes == {"hub_health": Route("plain", "hub_health")}
    reserved.add("hub_health")
    assert catalog.rebuild() == ["tools"]
    assert catalog.namespace.tool_routes == {}


# ---- MCP Apps, cache hints, what a 2026-07-28 host gets of each item --------------------------------------------

APP_URI = "ui://get-time/mcp-app.html"


def app_child(name: str, visibility: list[str] | None = None) -> Child:
    made = child(name)
    ui: dict[str, Any] = {"resourceUri": APP_URI}
    if visibility is not None:
        ui["visibility"] = visibility
    made.listing = Listing(
        tools=(
            {
                "name": "get-time",
                "description": "Returns the current server time.",
                "inputSchema": {"type": "object"},
                "_meta": {"ui": ui, "ui/resourceUri": APP_URI},
            },
        ),
        resources=({"uri": APP_URI, "name": "Get Time App", "mimeType": "text/html;profile=mcp-app"},),
    )
    return made


def test_an_apps_resource_and_the_tool_that_points_at_it_are_renamed_together() -> None:
    ns = build_namespace([app_child("app")])
    (tool,) = ns.tools
    exposed = "ui://app+get-time/mcp-app.html"
    assert tool["_meta"] == {"ui": {"resourceUri": exposed}, "ui/resourceUri": exposed}
    assert names(ns.resources, "uri") == [exposed]
    assert ns.route_uri(exposed) == Route("app", APP_URI)
    assert ns.resource_routes[exposed] == Route("app", APP_URI)


def test_an_apps_uri_routes_by_its_prefix_even_when_no_listing_names_it() -> None:
    made = app_child("app")
    made.listing = Listing(tools=made.listing.tools)  # the server leaves its UI resource out of resources/list
    ns = build_namespace([made])
    assert ns.route_uri("ui://app+get-time/mcp-app.html") == Route("app", APP_URI)


def test_an_app_only_tool_keeps_its_marking_in_listings_and_is_not_found_by_search() -> None:
    ns = build_namespace([app_child("app", ["app"]), child("time", tools=["get_time"])])
    listed = json.loads(ns.listing("tools/list", revisions.LATEST_HANDSHAKE))
    (app_tool,) = [t for t in listed["tools"] if t["name"] == "app_get-time"]
    assert app_tool["_meta"]["ui"]["visibility"] == ["app"]
    modern = json.loads(ns.listing("tools/list", revisions.LATEST_MODERN))
    assert [t["_meta"]["ui"]["visibility"] for t in modern["tools"] if t["name"] == "app_get-time"] == [["app"]]
    found = [t["name"] for t in ns.search("get time", 10, OPEN)]
    assert found == ["time_get_time"]


def test_a_tool_for_model_and_app_is_found_by_search() -> None:
    ns = build_namespace([app_child("app", ["model", "app"])])
    assert [t["name"] for t in ns.search("current time", 10, OPEN)] == ["app_get-time"]


def test_own_names_of_a_namespace_name_every_child_that_has_one() -> None:
    ns = build_namespace([app_child("a"), app_child("b"), child("time", tools=["now"])])
    assert ns.own_names.resolve("now", lambda exposed: True) == "time_now"
    assert ns.own_names.resolve("get-time", lambda exposed: exposed.startswith("b_")) == "b_get-time"


def hinted(made: Child, **hints: CacheHint) -> Child:
    made.listing = replace(made.listing, hints=hints)
    return made


def cache_fields(ns: Any, method: str = "tools/list", view: View | None = None) -> tuple[Any, Any]:
    listed = json.loads(ns.listing(method, revisions.LATEST_MODERN, view=view))
    return listed["ttlMs"], listed["cacheScope"]


def test_a_merged_list_takes_the_smallest_ttl_and_is_public_only_if_every_child_says_so() -> None:
    a = hinted(child("a", tools=["x"]), tools=CacheHint(60_000, private=False))
    b = hinted(child("b", tools=["y"]), tools=CacheHint(5_000, private=False))
    assert cache_fields(build_namespace([a, b])) == (5_000, "public")
    c = hinted(child("c", tools=["z"]), tools=CacheHint(90_000, private=True))
    assert cache_fields(build_namespace([a, b, c])) == (5_000, "private")


def test_a_child_that_said_nothing_counts_as_ttl_0_and_private() -> None:
    a = hinted(child("a", tools=["x"]), tools=CacheHint(60_000, private=False))
    silent = child("old", tools=["y"])  # listed, without hints: an older revision's child
    assert cache_fields(build_namespace([a, silent])) == (0, "private")


def test_each_kind_of_list_merges_its_own_hints() -> None:
    a = hinted(
        child("a", tools=["x"], prompts=["p"]),
        tools=CacheHint(60_000, private=False),
        prompts=CacheHint(1_000, private=True),
    )
    ns = build_namespace([a])
    assert cache_fields(ns, "tools/list") == (60_000, "public")
    assert cache_fields(ns, "prompts/list") == (1_000, "private")
    assert cache_fields(ns, "resources/list") == (0, "public"), "no child lists resources: nothing to keep private"


def test_a_list_the_callers_policy_chose_is_private() -> None:
    a = hinted(child("a", tools=["x", "y"]), tools=CacheHint(60_000, private=False))
    ns = build_namespace([a])
    view = Policy((Rule("some", subjects=frozenset({"*"}), allow=("a_x",)),), "deny").view(Identity("ann"))
    assert cache_fields(ns, view=view) == (60_000, "private")
    assert cache_fields(ns, view=OPEN) == (60_000, "public")


def test_a_tools_task_support_and_icons_reach_both_eras() -> None:
    made = child("srv")
    icons = [{"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}]
    made.listing = Listing(
        tools=(
            {
                "name": "research",
                "inputSchema": {"type": "object"},
                "execution": {"taskSupport": "required"},
                "icons": icons,
            },
        ),
        prompts=({"name": "p", "icons": icons},),
        resources=({"uri": "file:///r", "name": "r", "icons": icons},),
        templates=({"uriTemplate": "file:///{x}", "name": "t", "icons": icons},),
    )
    ns = build_namespace([made])
    for version in (revisions.LATEST_HANDSHAKE, revisions.LATEST_MODERN):
        (tool,) = json.loads(ns.listing("tools/list", version))["tools"]
        assert tool["execution"] == {"taskSupport": "required"}, version
        assert tool["icons"] == icons, version
        for method, key in (("prompts/list", "prompts"), ("resources/list", "resources")):
            assert json.loads(ns.listing(method, version))[key][0]["icons"] == icons, (version, method)
        templates = json.loads(ns.listing("resources/templates/list", version))["resourceTemplates"]
        assert templates[0]["icons"] == icons, version


def test_a_tool_with_an_invalid_x_mcp_header_is_left_out_and_logged_by_name() -> None:
    made = child("srv", tools=["good"])
    bad = {
        "name": "bad",
        "inputSchema": {"type": "object", "properties": {"r": {"type": "number", "x-mcp-header": "R"}}},
    }
    made.listing = Listing(tools=(*made.listing.tools, bad))
    catalog = Catalog(lambda: frozenset())
    catalog.children = {"srv": made}
    with capture_logs() as logs:
        catalog.rebuild()
        catalog.rebuild()
    assert names(catalog.namespace.tools) == ["srv_good"]
    assert "srv_bad" not in catalog.namespace.tool_routes
    rejected = [line for line in logs if line["event"] == "tool_rejected"]
    assert len(rejected) == 1, "each once"
    assert rejected[0]["tool"] == "bad" and rejected[0]["child"] == "srv" and "number" in rejected[0]["problem"]


def test_an_unprefixed_child_without_templates_does_not_load_the_sdk() -> None:
    """Routing an unprefixed child's URIs parses its templates with the SDK, whose package loads its client and
    server whole: a child that lists none must not pay for it on the first listing (checked in a fresh
    interpreter). One that lists some still has them parsed."""
    code = (
        "import sys\n"
        "from hub.relay.catalog import build_namespace\n"
        "from tests.relay.test_catalog import child\n"
        "assert 'mcp' not in sys.modules\n"
        "build_namespace([child('plain', '', tools=['t'], resources=['file:///a'])])\n"
        "assert 'mcp' not in sys.modules, 'the SDK was loaded for a child without templates'\n"
        "namespace = build_namespace([child('plain', '', templates=['file:///{path}'])])\n"
        "assert 'mcp' in sys.modules and len(namespace.child_templates['plain']) == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=REPO)
