"""`include:` end to end: `hub check` names where each server and each overridden key came from, and a running
hub reloads when only an included file changes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import types

from tests.support.children import python_child
from tests.support.mcp_client import Host, connect_host, hub_params
from tests.support.processes import run_bounded

pytestmark = [pytest.mark.anyio, pytest.mark.integration]


def setup(tmp_path: Path) -> tuple[Path, Path]:
    team = tmp_path / "team" / "ops.yaml"
    team.parent.mkdir()
    servers: dict[str, Any] = {
        "icinga": python_child("tests.children.kitchen", "--name", "icinga"),
        "legacy": python_child("tests.children.kitchen", "--name", "legacy"),
    }
    team.write_text(yaml.safe_dump({"servers": servers}))
    mine = {
        "hub": {"startup_listing_wait": 60},  # the first listing waits (bounded) for the children on a loaded machine
        "include": ["team/ops.yaml"],
        "servers": {
            "icinga": {"timeout": 30},
            "legacy": {"enabled": False},
            "notes": python_child("tests.children.kitchen", "--name", "notes"),
        },
    }
    config = tmp_path / "servers.yaml"
    config.write_text(yaml.safe_dump(mine, sort_keys=False))
    return config, team


async def test_hub_check_names_the_file_of_each_server_and_overridden_key(tmp_path: Path) -> None:
    config, _ = setup(tmp_path)
    done = await run_bounded([sys.executable, "-m", "hub", "check", "--config", str(config)])
    printed = done.stdout.decode()
    assert done.returncode == 0, (printed, done.stderr.decode())
    assert "from: icinga: team/ops.yaml; overridden: timeout (servers.yaml)" in printed
    assert "from: legacy: team/ops.yaml; overridden: enabled (servers.yaml)" in printed
    assert "from: notes: servers.yaml" in printed
    assert "2/2 servers ready" in printed, "the disabled team server does not run"


async def test_a_change_to_only_the_included_file_reloads_the_hub(tmp_path: Path) -> None:
    config, team = setup(tmp_path)
    host = Host()
    async with connect_host(hub_params(config, tmp_path / "hub.log"), host) as client:
        assert "icinga_echo" in {t.name for t in (await client.list_tools()).tools}
        document = yaml.safe_load(team.read_text())
        document["servers"]["dns"] = python_child("tests.children.kitchen", "--name", "dns")
        team.write_text(yaml.safe_dump(document))

        def changed() -> bool:
            return any(isinstance(n, types.ToolListChangedNotification) for n in host.notifications)

        await host.wait_for(changed, "tools/list_changed after the included file changed")
        with anyio.fail_after(30):
            while "dns_echo" not in {t.name for t in (await client.list_tools()).tools}:
                host.notifications.clear()
                await host.wait_for(changed, "the new server's tools")
