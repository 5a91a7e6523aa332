"""What a 2026-07-28 host's merged lists say, through `hub serve` over stdio: the cache hints (`ttlMs`,
`cacheScope`) come from the children's (the smallest ttl; private when any child says private or says nothing, as
an older child does); a tool with an invalid `x-mcp-header` is left out, and the hub's log names it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from pydantic import TypeAdapter

from tests.support.children import python_child, write_config
from tests.support.mcp_client import Host, connect_host, hub_params

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

RAW: Any = TypeAdapter(dict[str, Any])
MODERN = "2026-07-28"


def cached(ttl: int, scope: str, protocol: str = MODERN) -> dict[str, Any]:
    return {**python_child("tests.children.cached", "--ttl", str(ttl), "--scope", scope), "protocol": protocol}


async def hints(tmp_path: Path, servers: dict[str, Any], request: Any) -> tuple[Any, Any, list[str]]:
    config = write_config(tmp_path, servers, {"startup_listing_wait": 60})
    async with connect_host(hub_params(config, tmp_path / "hub.log"), Host(), mode=MODERN) as client:
        listed: dict[str, Any] = await client.session.send_request(request, RAW)
    items = listed.get("tools", listed.get("prompts", []))
    return listed["ttlMs"], listed["cacheScope"], sorted(i["name"] for i in items)


async def test_the_smallest_ttl_and_public_when_every_child_says_public(tmp_path: Path) -> None:
    servers = {"slow": cached(60_000, "public"), "fast": cached(5_000, "public")}
    assert await hints(tmp_path, servers, types.ListToolsRequest()) == (
        5_000,
        "public",
        ["fast_now", "hub_health", "slow_now"],
    )


async def test_private_when_one_child_says_private(tmp_path: Path) -> None:
    servers = {"open": cached(60_000, "public"), "mine": cached(30_000, "private")}
    assert await hints(tmp_path, servers, types.ListPromptsRequest()) == (
        30_000,
        "private",
        ["mine_hello", "open_hello"],
    )


async def test_an_older_child_that_says_nothing_makes_it_0_and_private(tmp_path: Path) -> None:
    servers = {"new": cached(60_000, "public"), "old": cached(60_000, "public", protocol="legacy")}
    assert await hints(tmp_path, servers, types.ListToolsRequest()) == (
        0,
        "private",
        ["hub_health", "new_now", "old_now"],
    )


async def test_a_tool_with_an_invalid_x_mcp_header_is_left_out_and_the_log_names_it(tmp_path: Path) -> None:
    child = cached(0, "private")
    child["args"].append("--bad-header")
    for era in ("legacy", MODERN):
        config = write_config(tmp_path, {"srv": child}, {"startup_listing_wait": 60})
        log = tmp_path / f"hub-{era}.log"
        async with connect_host(hub_params(config, log), Host(), mode=era) as client:
            names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"hub_health", "srv_now"}, era
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
        (rejected,) = [line for line in lines if line.get("event") == "tool_rejected"]
        assert (rejected["child"], rejected["tool"]) == ("srv", "bad")
        assert "number" in rejected["problem"]
