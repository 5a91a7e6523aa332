"""`exposure: search` with third-party children: server-everything (npm) and the conformance fixture behind the
hub's search tools. Written queries find the right tool in the top 3; what the config or a policy hides is never
found, and hub_call_tool reaches exactly what a direct call would."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml
from mcp.client import Client

from tests.support.children import python_child
from tests.support.mcp_client import connect_host, hub_params
from tests.support.paths import EVERYTHING, REPO

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

# (query, the tool it must find among the first three)
QUERIES = [
    ("add two numbers", "everything_get-sum"),
    ("echo back a string", "everything_echo"),
    ("compress a file with gzip", "everything_gzip-file-as-resource"),
    ("small logo image", "everything_get-tiny-image"),
    ("long running operation with progress updates", "everything_trigger-long-running-operation"),
    ("list the client roots", "everything_get-roots-list"),
    ("ask the LLM for a completion", "everything_trigger-sampling-request"),
    ("deep research query", "everything_simulate-research-query"),
    ("turn simulated logging on or off", "everything_toggle-simulated-logging"),
    ("resource subscription updates", "everything_toggle-subscriber-updates"),
    ("structured content with an output schema", "everything_get-structured-content"),
    ("links to resources", "everything_get-resource-links"),
    ("message with annotations metadata", "everything_get-annotated-message"),
    ("send the user to a browser URL", "everything_trigger-url-elicitation"),
    ("audio content", "fix_test_audio_content"),
    ("embedded resource", "fix_test_embedded_resource"),
    ("error handling", "fix_test_error_handling"),
    ("JSON Schema 2020-12 features", "fix_json_schema_2020_12_tool"),
    ("reconnect after the SSE stream closes", "fix_test_reconnection"),
    ("elicitation with enum schemas", "fix_test_elicitation_sep1330_enums"),
    ("image content response", "fix_test_image_content"),
]


@pytest.fixture(scope="module")
async def client(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    tmp = tmp_path_factory.mktemp("search")
    document = {
        "hub": {"exposure": "search", "startup_listing_wait": 60},
        "policies": [{"name": "everyone", "subjects": ["*"], "allow": ["*"], "deny": ["fix_test_sampling"]}],
        "servers": {
            "everything": {"command": str(EVERYTHING), "tools": {"deny": ["get-env"]}},
            "fix": {
                **python_child("tests.conformance.fixture_server"),
                "exposure": "hybrid",
                "always_visible": ["test_simple_text"],
            },
        },
    }
    config = tmp / "servers.yaml"
    config.write_text(yaml.safe_dump(document, sort_keys=False))
    async with connect_host(hub_params(config, tmp / "hub.log")) as connected:
        await connected.list_tools()  # waits (bounded) for both children to be up, whichever test runs first
        yield connected


async def search(client: Client, query: str, limit: int = 3) -> list[dict[str, Any]]:
    result = await client.call_tool("hub_search_tools", {"query": query, "limit": limit})
    assert not result.is_error, result
    found: list[dict[str, Any]] = (result.structured_content or {})["tools"]
    return found


async def test_the_listing_holds_the_search_tools_and_only_what_is_always_visible(client: Client) -> None:
    names = {t.name for t in (await client.list_tools()).tools}
    assert names == {"hub_health", "hub_search_tools", "hub_call_tool", "fix_test_simple_text"}
    instructions = client.instructions or ""
    assert "hub_search_tools" in instructions and "everything" in instructions and len(instructions) <= 1500


@pytest.mark.parametrize(("query", "expected"), QUERIES, ids=[q for q, _ in QUERIES])
async def test_a_written_query_finds_its_tool_in_the_top_three(client: Client, query: str, expected: str) -> None:
    found = await search(client, query)
    assert expected in [t["name"] for t in found], (query, [t["name"] for t in found])
    (definition,) = [t for t in found if t["name"] == expected]
    assert "inputSchema" in definition and "description" in definition, "full definitions come back"


async def test_a_hidden_tool_is_never_found_nor_called(client: Client) -> None:
    for query in ("environment variables get env", "sampling", "test sampling LLM completion request"):
        names = [t["name"] for t in await search(client, query, limit=50)]
        assert "everything_get-env" not in names and "fix_test_sampling" not in names, (query, names)
    for hidden in ("everything_get-env", "fix_test_sampling"):
        with pytest.raises(Exception, match="Unknown tool"):
            await client.call_tool("hub_call_tool", {"name": hidden, "arguments": {}})


async def test_a_found_tool_is_called_through_hub_call_tool_or_by_name(client: Client) -> None:
    (tool,) = [t for t in await search(client, "add two numbers", limit=1)]
    via_hub = await client.call_tool("hub_call_tool", {"name": tool["name"], "arguments": {"a": 2, "b": 3}})
    direct = await client.call_tool(tool["name"], {"a": 2, "b": 3})
    assert not via_hub.is_error and via_hub.content == direct.content
    assert "5" in json.dumps([c.model_dump() for c in via_hub.content])
    bad = await client.call_tool("hub_call_tool", {"arguments": {}})
    assert bad.is_error and "argument 'name'" in bad.content[0].text  # type: ignore[union-attr]


def test_hub_cost_on_the_default_servers_is_as_the_docs_show() -> None:
    """The tool and server columns of docs/cli.md's `hub cost` (token counts move with the servers' versions),
    and the JSON's sums."""
    from tests.integration.test_docs import blocks, commands, run

    (shown,) = [out for b in blocks(REPO / "docs" / "cli.md") for cmd, out in commands(b) if cmd == "hub cost"]
    printed = run("hub cost", REPO)
    assert printed.returncode == 0, printed.stderr
    lines = [line for line in printed.stdout.splitlines() if line.strip()]
    assert [line.split()[:3] for line in lines] == [line.split()[:3] for line in shown if line.strip()]
    as_json = json.loads(run("hub cost --json", REPO).stdout)
    assert as_json["total"]["tokens"] == sum(t["tokens"] for t in as_json["tools"])
    assert as_json["total"]["listed_tools"] == len(as_json["tools"]) == 10
