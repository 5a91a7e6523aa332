"""A server's command is looked up on PATH, then next to the hub (hub/spawn.py `resolve_command`).

A desktop host starts `/path/to/.venv/bin/hub` with a PATH of its own (README), so the servers installed into the
hub's venv, as the default servers.yaml's are, must be found there too.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from hub.platform.processes import resolve_command
from tests.support.children import write_config
from tests.support.paths import REPO

BIN = Path(sys.executable).parent
TIME = BIN / "mcp-server-time"


def test_a_command_on_path_or_with_a_path_is_left_as_it_is(tmp_path: Path) -> None:
    assert resolve_command("sh", {"PATH": "/usr/bin:/bin"}) == "sh"
    assert resolve_command(str(tmp_path / "x"), {"PATH": ""}) == str(tmp_path / "x")
    assert resolve_command("no-such-server-anywhere", {"PATH": "/usr/bin:/bin"}) == "no-such-server-anywhere"


@pytest.mark.anyio
async def test_a_server_installed_next_to_the_hub_starts_without_it_on_path(tmp_path: Path) -> None:
    if not TIME.exists():
        pytest.skip(f"{TIME} is missing: install the test extras (pip install -e '.[test]')")
    assert resolve_command("mcp-server-time", {"PATH": "/usr/bin:/bin"}) == str(TIME)
    config = write_config(tmp_path, {"time": {"command": "mcp-server-time"}})
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PATH": "/usr/bin:/bin"}
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, "-m", "hub", "check", "--config", str(config)], cwd=REPO, env=env, check=False
        )
    out = done.stdout.decode()
    assert done.returncode == 0, out + done.stderr.decode()
    assert "time    ready  2" in out
