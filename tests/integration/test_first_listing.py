"""A host's very first tools/list reflects the configuration and the children as they are now, never a previous run's:
the hub keeps nothing from one run to the next. Each case runs the hub twice, changing one thing in between."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.children import python_child, write_config
from tests.support.mcp_client import connect_hub, hub_params
from tests.support.paths import REPO

pytestmark = pytest.mark.anyio

# A child "upgraded" between runs: a script whose tools are what it was written with.
CHILD = """
import sys
sys.path.insert(0, {repo!r})
from tests.children.kitchen import main
sys.argv = [sys.argv[0], "--name", "up", "--tools", {tools!r}]
main()
"""


# Each config lets a first listing wait (bounded) for its children however loaded the machine: what is asserted is
# which tools the first listing holds, not how soon the children start.
LISTING_WAIT = {"startup_listing_wait": 60}


async def first_listing(config: Path, log: Path, env: dict[str, str] | None = None) -> set[str]:
    """Start the hub, and return the names in the host's first tools/list (its first request after initialize)."""
    async with connect_hub(hub_params(config, log, env=env)) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def test_a_changed_variable_shows_in_the_next_runs_first_listing(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"k": python_child("tests.children.kitchen", "--tools", "${TOOLS}")}, LISTING_WAIT)
    before = await first_listing(config, tmp_path / "1.log", {"TOOLS": "echo,add"})
    after = await first_listing(config, tmp_path / "2.log", {"TOOLS": "echo,add,fail,image"})
    assert before - {"hub_health"} == {"k_echo", "k_add"}
    assert after - {"hub_health"} == {"k_echo", "k_add", "k_fail", "k_image"}


async def test_a_changed_child_shows_in_the_next_runs_first_listing(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    server: dict[str, Any] = {"command": sys.executable, "args": [str(script)], "cwd": str(REPO)}
    config = write_config(tmp_path, {"up": server}, LISTING_WAIT)
    script.write_text(CHILD.format(repo=str(REPO), tools="echo"))
    before = await first_listing(config, tmp_path / "1.log")
    script.write_text(CHILD.format(repo=str(REPO), tools="echo,add"))  # the server was upgraded
    after = await first_listing(config, tmp_path / "2.log")
    assert before - {"hub_health"} == {"up_echo"}
    assert after - {"hub_health"} == {"up_echo", "up_add"}


async def test_a_changed_file_shows_in_the_next_runs_first_listing(tmp_path: Path) -> None:
    one = python_child("tests.children.kitchen", "--tools", "echo")
    config = write_config(tmp_path, {"a": one}, LISTING_WAIT)
    before = await first_listing(config, tmp_path / "1.log")
    write_config(
        tmp_path, {"a": one, "b": python_child("tests.children.kitchen", "--name", "b", "--tools", "add")}, LISTING_WAIT
    )
    after = await first_listing(config, tmp_path / "2.log")
    assert before - {"hub_health"} == {"a_echo"}
    assert after - {"hub_health"} == {"a_echo", "b_add"}
