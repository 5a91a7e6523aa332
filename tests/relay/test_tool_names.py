"""How the catalog names a child's tools and prompts (docs/decisions/021-tool-names.md): no doubled prefix, the
doubled form kept where skipping it would collide, `hub.always_prefix`, and routes to the child's own names."""

from __future__ import annotations

from hub.config import ServerConfig, ToolFilter
from hub.config.overrides import ToolOverride
from hub.config.settings import HubSettings
from hub.relay.catalog import Collision, Route, build_namespace
from tests.relay.test_catalog import child, names


def test_a_tool_that_starts_with_the_prefix_is_exposed_as_it_is_and_routes_to_its_own_name() -> None:
    ns = build_namespace([child("git", tools=["git_status", "git_log", "show"], prompts=["git_explain"])])
    assert names(ns.tools) == ["git_status", "git_log", "git_show"]
    assert ns.tool_routes["git_status"] == Route("git", "git_status")
    assert ns.tool_routes["git_show"] == Route("git", "show")
    assert names(ns.prompts) == ["git_explain"]
    assert ns.prompt_routes["git_explain"] == Route("git", "git_explain")
    assert ns.renamed == ()  # not a rename: nothing is logged


def test_a_child_with_both_forms_keeps_the_doubled_form_for_the_prefixed_one() -> None:
    ns = build_namespace([child("git", tools=["git_status", "status"], prompts=["status", "git_status"])])
    assert ns.tool_routes == {"git_git_status": Route("git", "git_status"), "git_status": Route("git", "status")}
    assert ns.prompt_routes == {"git_status": Route("git", "status"), "git_git_status": Route("git", "git_status")}
    assert ns.collisions == ()


def test_a_hidden_sibling_still_decides_the_name() -> None:
    """The name depends on the child's listing, not on its filter: denying `status` renames nothing."""
    ns = build_namespace([child("git", tools=["git_status", "status"], deny=("status",))])
    assert names(ns.tools) == ["git_git_status"]


def test_always_prefix_keeps_the_doubled_form() -> None:
    settings = HubSettings(always_prefix=True)
    ns = build_namespace([child("git", tools=["git_status"], prompts=["git_explain"])], settings=settings)
    assert names(ns.tools) == ["git_git_status"]
    assert names(ns.prompts) == ["git_git_explain"]


def test_the_prefix_is_matched_not_the_server_key() -> None:
    ns = build_namespace([child("repo", "git", tools=["git_status", "repo_log"])])
    assert names(ns.tools) == ["git_status", "git_repo_log"]


def test_an_unprefixed_server_exposes_its_names_unchanged() -> None:
    ns = build_namespace([child("plain", "", tools=["plain_x", "x"])])
    assert names(ns.tools) == ["plain_x", "x"]


def test_an_override_name_goes_through_the_same_rule() -> None:
    git = child("git", tools=["status", "log"])
    git.config = git.config.model_copy(
        update={"overrides": {"status": ToolOverride(name="git_state"), "log": ToolOverride(name="history")}}
    )
    ns = build_namespace([git])
    assert ns.tool_routes == {"git_state": Route("git", "status"), "git_history": Route("git", "log")}


def test_an_unprefixed_server_can_now_collide_with_a_skipped_name_and_config_order_decides() -> None:
    first = child("plain", "", tools=["git_status"])
    ns = build_namespace([first, child("git", tools=["git_status"])])
    assert ns.tool_routes["git_status"] == Route("plain", "git_status")
    assert ns.collisions == (Collision("tool", "git_status", "plain", "git"),)


def test_config_filters_name_the_childs_own_tools() -> None:
    git = ServerConfig(command="x", tools=ToolFilter(deny=("git_commit",)))
    made = child("git", tools=["git_status", "git_commit"])
    made.config = git
    assert names(build_namespace([made]).tools) == ["git_status"]
