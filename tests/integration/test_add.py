"""`hub import`, `hub add`, `hub remove` and `hub add --registry` as a person runs them: the real commands, in a
temporary directory, then the hub itself reading what they wrote.

- `hub import` of the issue's three servers (a password in an argument's URL, in an env value's connection string,
  in an mcp-remote URL) and of a VS Code `${input:...}` prompt leaves no password in servers.yaml; servers.env holds
  each value, the prompt only as an empty variable under a note, and the resulting config loads.
- `hub add` and `hub remove` edit servers.yaml in place (comments stay) while a hub serves it over stdio: the
  host sees the new server's tools after list_changed, then the removed server's go. An edit the loader refuses
  writes nothing; secrets of added servers go to servers.env.
- `hub add --registry` against a local registry serving real published server.json documents
  (tests/support/registry.py): the PyPI server is added, then `hub list` shows its tools; secrets and required
  values become placeholders the command names; `--registry-file` reads a server.json from disk.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from hub.config.envfile import parse_env_file
from hub.config.loader import load_config
from tests.support.mcp_client import Host, connect_hub, hub_params, wait_for_tools
from tests.support.paths import REPO
from tests.support.registry import FIXTURES, fixture_registry, offline_uvx
from tests.support.waits import WAIT

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

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


def test_an_import_into_another_file_names_that_file_not_servers_yaml(tmp_path: Path) -> None:
    (tmp_path / "claude.json").write_text(json.dumps(REPRO))
    result = run_hub(tmp_path, "import", "claude.json", "--into", "team.yaml")
    assert result.returncode == 0, result.stderr
    assert f"wrote {tmp_path / 'team.env'} (mode 0600): the secrets team.yaml references" in result.stdout
    assert "servers.yaml" not in result.stdout
    assert (tmp_path / "team.env").read_text().startswith("# Secrets of team.yaml's servers.")


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


async def test_a_running_hub_picks_up_hub_add_and_hub_remove(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text(
        "# my servers\nservers:\n  time:\n    # the clock\n    command: mcp-server-time\n"
        '    args: ["--local-timezone", "UTC"]\n'
    )
    host = Host()
    async with connect_hub(hub_params(config, tmp_path / "calls.jsonl"), host) as client:
        await wait_for_tools(client, host, {"time_get_current_time"})
        added = await anyio.to_thread.run_sync(
            lambda: run_hub(
                tmp_path, "add", "clock", "-c", str(config), "--", "mcp-server-time", "--local-timezone", "Asia/Tokyo"
            )
        )
        assert added.returncode == 0, added.stderr
        assert "# my servers" in config.read_text() and "# the clock" in config.read_text()
        tools = await wait_for_tools(client, host, {"clock_get_current_time"})
        assert "time_get_current_time" in {t.name for t in tools}
        result = await client.call_tool("clock_get_current_time", {"timezone": "Asia/Tokyo"})
        assert "Asia/Tokyo" in str(result.content)
        removed = await anyio.to_thread.run_sync(lambda: run_hub(tmp_path, "remove", "time", "-c", str(config)))
        assert removed.returncode == 0, removed.stderr
        with anyio.fail_after(WAIT):
            while True:
                changed = host.changed  # taken before listing: a list_changed during the listing is not missed
                if "time_get_current_time" not in {t.name for t in (await client.list_tools()).tools}:
                    break
                await changed.wait()
    assert "# my servers" in config.read_text() and "time:" not in config.read_text()


def test_an_edit_that_would_break_the_config_writes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text("servers:\n  time:\n    command: mcp-server-time\n")
    before = config.read_text()
    taken = run_hub(tmp_path, "add", "time", "-c", str(config), "--", "other")
    assert taken.returncode == 1 and "already has a server named 'time'" in taken.stderr
    bad = run_hub(tmp_path, "add", "Bad_Name!", "-c", str(config), "--", "x")
    assert bad.returncode == 1 and "would not make a valid configuration" in bad.stderr
    mixed = run_hub(tmp_path, "add", "r", "-c", str(config), "--url", "https://x.example/mcp", "--env", "A=1")
    assert mixed.returncode == 1 and "env only apply to stdio children" in mixed.stderr
    missing = run_hub(tmp_path, "remove", "nope", "-c", str(config))
    assert missing.returncode == 1 and "has no server named 'nope' (it has: time)" in missing.stderr
    assert config.read_text() == before and not (tmp_path / "servers.env").exists()


def test_hub_add_puts_header_and_env_secrets_in_servers_env(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    remote = run_hub(
        tmp_path, "add", "linear", "-c", str(config), "--url", "https://mcp.linear.app/mcp",
        "--header", "Authorization: Bearer lin_api_0123456789abcdef",
    )  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    assert "secrets to servers.env: LINEAR_TOKEN" in remote.stdout
    local = run_hub(
        tmp_path, "add", "pg", "-c", str(config), "--env", "DATABASE_URL=postgresql://app:pw0rd@db/app",
        "--env", "LOG_LEVEL=info", "--", "npx", "-y", "@modelcontextprotocol/server-postgres",
    )  # fmt: skip
    assert local.returncode == 0, local.stderr
    text = config.read_text()
    assert "lin_api" not in text and "pw0rd" not in text and "Authorization: Bearer ${LINEAR_TOKEN}" in text
    assert "DATABASE_URL: postgresql://app:${PG_PASSWORD}@db/app" in text and "LOG_LEVEL: info" in text
    assert parse_env_file((tmp_path / "servers.env").read_text()) == {
        "LINEAR_TOKEN": "lin_api_0123456789abcdef",
        "PG_PASSWORD": "pw0rd",
    }
    assert "servers.env" in (tmp_path / ".gitignore").read_text()
    assert (tmp_path / "servers.env").stat().st_mode & 0o077 == 0


def test_hub_add_from_the_registry_then_hub_list_shows_its_tools(tmp_path: Path) -> None:
    """A real published server.json (mcp-server-time, PyPI) from a local registry; `uvx` runs the installed package
    offline (tests/support/registry.py)."""
    config = tmp_path / "servers.yaml"
    config.write_text("# my hub\n")
    path = f"{offline_uvx(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}"
    with fixture_registry() as (url, seen):
        added = run_hub(
            tmp_path, "add", "--registry", "io.github.modelcontextprotocol/server-time", "-c", str(config),
            env={"HUB_REGISTRY_URL": url},
        )  # fmt: skip
        assert seen == ["/v0/servers/io.github.modelcontextprotocol%2Fserver-time/versions/latest"]
    assert added.returncode == 0, added.stderr
    assert "added 'time'" in added.stdout
    text = config.read_text()
    assert text.startswith("# my hub\n") and "command: uvx\n    args: [mcp-server-time==0.6.2]" in text
    listed = run_hub(tmp_path, "list", "-c", str(config), env={"PATH": path})
    assert listed.returncode == 0, listed.stderr
    assert "time_get_current_time" in listed.stdout and "time_convert_time" in listed.stdout


def test_registry_secrets_become_placeholders_the_command_names(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    with fixture_registry() as (url, _seen):
        brave = run_hub(
            tmp_path, "add", "--registry", "io.github.brave/brave-search-mcp-server@2.1.3", "--registry-url", url,
            "-c", str(config),
        )  # fmt: skip
        remote = run_hub(
            tmp_path, "add", "weather", "--registry", "io.github.user/remote-weather", "--registry-url", url,
            "-c", str(config),
        )  # fmt: skip
        wrong = run_hub(tmp_path, "add", "--registry", "io.github.brave/brave-search-mcp-server@9.9.9",
                        "--registry-url", url, "-c", str(config))  # fmt: skip
        no_remote = run_hub(tmp_path, "add", "--registry", "io.github.modelcontextprotocol/server-time",
                            "--use", "remote", "--registry-url", url, "-c", str(config))  # fmt: skip
    assert brave.returncode == 0, brave.stderr
    assert "fill in BRAVE_API_KEY in servers.env: Your API key for the service" in brave.stdout
    assert remote.returncode == 0, remote.stderr
    assert "fill in WEATHER_AUTHORIZATION in servers.env" in remote.stdout
    text = config.read_text()
    assert "npx\n    args: [-y, '@brave/brave-search-mcp-server@2.1.3']" in text
    assert "BRAVE_API_KEY: ${BRAVE_API_KEY}" in text and "Authorization: ${WEATHER_AUTHORIZATION}" in text
    assert "url: https://api.example.com/mcp" in text
    env_text = (tmp_path / "servers.env").read_text()
    assert "# fill in: Your API key for the service\nBRAVE_API_KEY=\n" in env_text
    assert parse_env_file(env_text) == {"BRAVE_API_KEY": "", "WEATHER_AUTHORIZATION": ""}
    assert load_config(config, {}).config.servers["brave-search"].env == {"BRAVE_API_KEY": ""}
    assert wrong.returncode == 1
    assert "has no server io.github.brave/brave-search-mcp-server@9.9.9" in wrong.stderr
    assert "named like it: io.github.brave/brave-search-mcp-server" in wrong.stderr
    assert no_remote.returncode == 1 and "offers: pypi" in no_remote.stderr


def test_registry_file_reads_a_server_json_from_disk(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    added = run_hub(
        tmp_path,
        "add",
        "--registry-file",
        str(FIXTURES / "github-mcp-server.json"),
        "-c",
        str(config),
        env={"HUB_REGISTRY_URL": "http://127.0.0.1:9"},
    )  # fmt: skip  (never asked)
    assert added.returncode == 0, added.stderr
    assert "fill in GITHUB_PERSONAL_ACCESS_TOKEN" in added.stdout
    child = load_config(config, {}).config.servers["github"]
    assert child.command == "docker"
    assert list(child.args) == ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN",
                                "ghcr.io/github/github-mcp-server:0.20.1"]  # fmt: skip
    assert child.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": ""}


def documented(commands: tuple[str, ...] = ("add", "remove")) -> list[tuple[str, list[str]]]:
    """The `$ hub add|remove ...` commands (or others) of docs/cli.md's ```text blocks, with the lines each
    prints."""
    out: list[tuple[str, list[str]]] = []
    inside = False
    for line in (REPO / "docs" / "cli.md").read_text().splitlines():
        if line.startswith("```"):
            inside = line.startswith("```text") and not inside
        elif inside and line.startswith(tuple(f"$ hub {c}" for c in commands)):
            out.append((line[2:], []))
        elif inside and line.startswith("$ "):
            inside = False  # a block of other commands
        elif inside and out and line.strip():
            out[-1][1].append(line)
    return out


def test_the_add_and_remove_examples_in_the_docs_print_what_they_show(tmp_path: Path) -> None:
    """In order, in one directory (`/home/me/project` in the docs) holding the default servers.yaml and, as
    `server.json`, the registry's remote example; the registry is the local fixture."""
    examples = documented()
    assert len(examples) >= 6, "docs/cli.md lost its hub add / hub remove examples"
    shutil.copy(REPO / "servers.yaml", tmp_path / "servers.yaml")
    shutil.copy(FIXTURES / "remote-weather.json", tmp_path / "server.json")
    with fixture_registry() as (url, _seen):
        for command, shown in examples:
            result = run_hub(tmp_path, *shlex.split(command)[1:], env={"HUB_REGISTRY_URL": url})
            printed = (result.stdout + result.stderr).replace(str(tmp_path), "/home/me/project")
            assert [line for line in printed.splitlines() if line.strip()] == shown, command
    assert load_config(tmp_path / "servers.yaml", {}).config.servers.keys() == {
        "time", "git", "linear", "brave-search", "weather",
    }  # fmt: skip


def test_hub_init_writes_a_commented_config_naming_what_hub_import_finds(tmp_path: Path) -> None:
    desktop = tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    desktop.write_text(json.dumps(REPRO))
    first = tmp_path / "first"
    first.mkdir()
    created = run_hub(first, "init", env={"HOME": str(tmp_path)})
    assert created.returncode == 0, created.stderr
    assert f"claude-desktop ({desktop}) has pg, db, r: hub import claude-desktop" in created.stdout
    text = (first / "servers.yaml").read_text()
    assert text.startswith("# servers.yaml: the MCP servers this hub serves")
    assert "#   hub import claude-desktop                pg, db, r\n" in text
    assert list(load_config(first / "servers.yaml", {}).config.servers) == ["time"]
    again = run_hub(first, "init", env={"HOME": str(tmp_path)})
    assert again.returncode == 1 and "exists" in again.stderr and (first / "servers.yaml").read_text() == text
    second = tmp_path / "second"
    second.mkdir()
    both = run_hub(second, "init", "--import", "claude-desktop", env={"HOME": str(tmp_path)})
    assert both.returncode == 0, both.stderr
    assert "imported from claude-desktop: pg, db, r" in both.stdout
    assert "secrets to servers.env: PG_PASSWORD, R_PASSWORD" in both.stdout
    text = (second / "servers.yaml").read_text()
    assert "s3cretpw" not in text and "hunter22" not in text and "hub import claude-desktop" not in text
    assert list(load_config(second / "servers.yaml", {}).config.servers) == ["time", "pg", "db", "r"]


def test_the_init_example_in_the_docs_prints_what_it_shows(tmp_path: Path) -> None:
    (examples,) = documented(("init",))
    desktop = tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    desktop.write_text(json.dumps(REPRO))
    project = tmp_path / "project"
    project.mkdir()
    command, shown = examples
    result = run_hub(project, *shlex.split(command)[1:], env={"HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.replace(str(tmp_path), "/home/me").splitlines() == shown


def test_a_first_command_without_a_config_points_to_hub_init(tmp_path: Path) -> None:
    """A new user's first `hub check` in an empty directory is told of the command that writes a config."""
    result = run_hub(tmp_path, "check")  # HOME is tmp_path: no user config either
    assert result.returncode == 2
    assert "`hub init` writes a first ./servers.yaml" in result.stderr, result.stderr
    assert run_hub(tmp_path, "init").returncode == 0
    assert run_hub(tmp_path, "check").returncode == 0
