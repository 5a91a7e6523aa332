"""BM25 over tool definitions: words, ranking, the caller's filter."""

from __future__ import annotations

from hub.relay.search import SYNONYM_WEIGHT, ToolIndex, fields, query_weights, tokens

TOOLS = [
    {"name": "pg_query", "description": "Run a read-only SQL query against the database."},
    {"name": "pg_listTables", "description": "List the tables of a schema."},
    {"name": "icinga_get_host", "description": "The state of one monitored host.",
     "inputSchema": {"type": "object", "properties": {"hostname": {"type": "string", "description": "FQDN"}}}},
    {"name": "icinga_restart_service", "description": "Restart a service on a host."},
]  # fmt: skip


def test_words_split_on_case_and_punctuation_and_lose_plain_suffixes() -> None:
    assert tokens("listTables get-host the_Services") == ["list", "tabl", "get", "host", "servic"]
    assert tokens("") == []


def test_snake_camel_kebab_and_acronyms_split_into_the_same_words() -> None:
    assert tokens("list_hosts") == tokens("listHosts") == tokens("list-hosts") == tokens("listing host")
    assert tokens("getHTTPHeaders") == ["get", "http", "header"]
    assert tokens("API-post-search") == ["api", "post", "search"]
    assert tokens("changed changes change") == ["chang"] * 3


def test_user_words_reach_the_words_of_definitions_at_a_lower_weight() -> None:
    assert query_weights("make a new folder") == {"mak": 1.0, "new": 1.0, "folder": 1.0, "directory": SYNONYM_WEIGHT}
    assert query_weights("what time is it")["current"] == SYNONYM_WEIGHT, "a phrase of the query"
    assert query_weights("delete it")["delet"] == 1.0, "a word of the query keeps its own weight"


TIME = [
    {"name": "time_get_current_time", "description": "Get current time in a specific timezone",
     "inputSchema": {"properties": {"timezone": {"description": "IANA timezone name (e.g., 'Europe/London')."}}}},
    {"name": "time_convert_time", "description": "Convert time between timezones",
     "inputSchema": {"properties": {"time": {"description": "Time to convert (HH:MM)"},
                                    "target_timezone": {"description": "Target IANA timezone (e.g., 'Asia/Tokyo')"}}}},
]  # fmt: skip


def test_what_time_is_it_in_tokyo_asks_for_the_current_time_not_a_conversion() -> None:
    """The issue's repro: the example city in convert_time's parameter description used to win."""
    index = ToolIndex(TIME)
    assert index.search("what time is it in Tokyo", 1, lambda _: True)[0]["name"] == "time_get_current_time"
    assert index.search("convert 3pm London time to Tokyo", 1, lambda _: True)[0]["name"] == "time_convert_time"


def test_a_word_in_the_name_outweighs_the_same_word_in_a_parameter_description() -> None:
    tools = [
        {"name": "a_tool", "description": "x", "inputSchema": {"properties": {"p": {"description": "deploy it"}}}},
        {"name": "b_deploy", "description": "x"},
    ]
    assert [t["name"] for t in ToolIndex(tools).search("deploy", 2, lambda _: True)] == ["b_deploy", "a_tool"]
    assert [f for f, words in fields(tools[0]).items() if "deploy" in words] == ["param_text"]


def test_the_best_match_comes_first_and_names_count_most() -> None:
    index = ToolIndex(TOOLS)
    assert index.search("list tables", 2, lambda _: True)[0]["name"] == "pg_listTables"
    assert index.search("sql database query", 1, lambda _: True)[0]["name"] == "pg_query"
    assert index.search("fqdn", 5, lambda _: True) == [TOOLS[2]], "parameter descriptions are searched"
    assert index.search("nothing matches this", 5, lambda _: True) == []


def test_what_the_filter_refuses_is_never_found() -> None:
    index = ToolIndex(TOOLS)
    found = index.search("host", 5, lambda name: name != "icinga_restart_service")
    assert [t["name"] for t in found] == ["icinga_get_host"]


def test_equal_scores_keep_the_namespace_order() -> None:
    twins = [{"name": f"t{i}", "description": "same words"} for i in range(5)]
    assert [t["name"] for t in ToolIndex(twins).search("same", 5, lambda _: True)] == [f"t{i}" for i in range(5)]


def test_under_a_deny_by_default_policy_the_gateway_tools_stay_and_find_only_what_the_policy_allows() -> None:
    from hub.access.identity import Identity
    from hub.access.policy import Policy, Rule
    from hub.config import ServerConfig
    from hub.platform.watchdog import Watchdog
    from hub.relay.builtins import CALL_TOOL_DEF, SEARCH_TOOL_DEF
    from hub.relay.catalog import build_namespace
    from hub.upstream.child import Child
    from hub.upstream.listing import Listing

    def child(name: str) -> Child:
        made = Child(name, name, ServerConfig(command="x"), None, Watchdog())  # type: ignore[arg-type]
        made.listing = Listing(
            tools=tuple({**t, "name": t["name"].split("_", 1)[1]} for t in TOOLS if t["name"].startswith(name))
        )
        return made

    ns = build_namespace([child("pg"), child("icinga")])
    view = Policy((Rule("oncall", subjects=frozenset({"*"}), allow=("icinga_*",)),), "deny").view(Identity("ann"))
    listed = ns.listing("tools/list", "2025-11-25", (SEARCH_TOOL_DEF, CALL_TOOL_DEF), view)
    assert b"hub_search_tools" in listed and b"hub_call_tool" in listed and b"pg_query" not in listed
    found = [t["name"] for t in ns.search("query host database", 10, view)]
    assert found and all(name.startswith("icinga_") for name in found)
