"""`hub import`, `hub add`, `hub remove` and `hub add --registry` as a person runs them: the real commands, in a
temporary directory, then the hub itself reading what they wrote.

- `hub import` of the issue's three servers (a password in an argument's URL, in an env value's connection string,
  in an mcp-remote URL) and of a VS Code `${input:...}` prompt leaves no password in servers.yaml; servers.env holds
  each value, the prompt only as an empty variable under a note, and the resulting config loads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hub.config.envfile import parse_env_file
from hub.config.loader import load_config
from tests.support.waits import WAIT

pytestmark = pytest.mark.integration

HOST_VARIABLES = ("XDG_CONFIG_HOME", "APPDATA", "HUB_CONFIG", "CLAUDE_CONFIG_DIR", "VIRTUAL_ENV")
REPRO = {
    "mcpServers": {
        "pg": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://admin:s3cretpw@db:5432/app"],
        },
        "db": {"command": "x", "env": {"DATABASE_URI": "postgresql://admin:s3cretpw@db/app"}},
        "r": {"command": "npx", "args": ["mcp-remote", "https://user:hunter22@mcp.example.com/sse"]},
    }
}


def run_hub(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in HOST_VARIABLES} | {"HOME": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "hub", *args],
        cwd=cwd,
        env=base | (env or {}),
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def test_import_leaves_no_password_in_servers_yaml(tmp_path: Path) -> None:
    (tmp_path / "claude.json").write_text(json.dumps(REPRO))
    result = run_hub(tmp_path, "import", "claude.json", "--into", "servers.yaml")
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "servers.yaml").read_text()
    assert "s3cretpw" not in text and "hunter22" not in text
    assert "postgresql://admin:${PG_PASSWORD}@db:5432/app" in text
    assert "DATABASE_URI: postgresql://admin:${PG_PASSWORD}@db/app" in text
    assert "https://user:${R_PASSWORD}@mcp.example.com/sse" in text
    env = parse_env_file((tmp_path / "servers.env").read_text())
    assert env == {"PG_PASSWORD": "s3cretpw", "R_PASSWORD": "hunter22"}
    loaded = load_config(tmp_path / "servers.yaml", {})
    assert loaded.config.servers["pg"].args[-1] == "postgresql://admin:s3cretpw@db:5432/app"  # the hub sees it


def test_a_vs_code_prompt_becomes_a_variable_to_fill_in(tmp_path: Path) -> None:
    vscode = {
        "inputs": [{"type": "promptString", "id": "apiKey", "description": "Your Acme API key", "password": True}],
        "servers": {"acme": {"command": "acme-mcp", "env": {"ACME_KEY": "${input:apiKey}"}}},
    }
    (tmp_path / "mcp.json").write_text(json.dumps(vscode))
    result = run_hub(tmp_path, "import", "mcp.json", "--into", "servers.yaml")
    assert result.returncode == 0, result.stderr
    assert "fill in ACME_API_KEY" in result.stdout and "Your Acme API key" in result.stdout
    assert "ACME_KEY: ${ACME_API_KEY}" in (tmp_path / "servers.yaml").read_text()
    env_text = (tmp_path / "servers.env").read_text()
    assert "input:" not in env_text and "# fill in: Your Acme API key\nACME_API_KEY=\n" in env_text
    assert load_config(tmp_path / "servers.yaml", {}).config.servers["acme"].env == {"ACME_KEY": ""}
