"""`hub import`: hosts' servers as servers.yaml children, their secrets in the 0600 env file (never in
servers.yaml), names fitted and collisions reported, comments kept, importing twice a no-op, `--consolidate`."""

from __future__ import annotations

import json
import stat
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from hub.config import load_config
from hub.config.envfile import read_env_file
from hub.install.clients import Paths, Scope
from hub.install.convert import Unusable, convert, fit_prefix
from hub.install.edit import EditError
from hub.install.importer import ImportPlan, open_source, plan_import, write_import
from hub.install.installer import apply, plan, restore, restore_plan
from tests.install.hosts import CODEX, GEMINI, GITHUB_PAT, HOSTS, OPENAI, QUERY_KEY, SECRETS, VSCODE, ZED, desktop
from tests.support.paths import REPO


def do_import(spec: str, paths: Paths, into: Path, scope: Scope = "user") -> ImportPlan:
    imported = plan_import(open_source(spec, paths, scope), into, paths)
    write_import(imported)
    return imported


def test_no_secret_reaches_servers_yaml_they_go_to_the_0600_env_file(tmp_path: Path) -> None:
    paths, _ = desktop(tmp_path)
    into = tmp_path / "project" / "servers.yaml"
    imported = do_import("claude-desktop", paths, into)
    text = into.read_text()
    for secret in SECRETS:
        assert secret not in text
    env_file = tmp_path / "project" / "servers.env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert set(SECRETS) <= set(read_env_file(env_file).values())
    assert (tmp_path / "project" / ".gitignore").read_text() == "servers.env\n"
    servers = yaml.safe_load(text)["servers"]
    assert servers["github"]["env"] == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}",
        "GITHUB_TOOLSETS": "repos,issues",
    }
    assert servers["linear"]["args"][-1] == "Authorization: Bearer ${LINEAR_TOKEN}"
    assert servers["stripe"]["args"][-1] == "--api-key=${STRIPE_API_KEY}"
    assert servers["postgres"]["env"] == {"PGPASSWORD": "${PGPASSWORD}", "PGHOST": "db.internal"}
    assert servers["search"] == {
        "url": "https://search.example.com/mcp?api_key=${SEARCH_API_KEY}&region=eu",
        "transport": "streamable-http",
    }
    assert servers["openai"]["headers"] == {"Authorization": "Bearer ${OPENAI_TOKEN}"}
    states = {i.name: i.state for i in imported.items}
    assert states["hub"] == "skipped" and states["broken"] == "skipped"
    assert "hub" not in servers and "broken" not in servers


def test_the_hub_loads_the_import_with_the_secrets_from_the_env_file(tmp_path: Path) -> None:
    paths, _ = desktop(tmp_path)
    into = tmp_path / "project" / "servers.yaml"
    do_import("claude-desktop", paths, into)
    loaded = load_config(into, environ={})  # nothing exported: every ${VAR} comes from servers.env
    servers = loaded.config.servers
    assert servers["github"].env["GITHUB_PERSONAL_ACCESS_TOKEN"] == GITHUB_PAT
    assert servers["openai"].headers == {"Authorization": f"Bearer {OPENAI}"}
    assert servers["search"].url == f"https://search.example.com/mcp?api_key={QUERY_KEY}&region=eu"
    exported = load_config(into, environ={"PGPASSWORD": "from the shell"})  # the environment wins
    assert exported.config.servers["postgres"].env["PGPASSWORD"] == "from the shell"


def test_importing_twice_changes_nothing(tmp_path: Path) -> None:
    paths, _ = desktop(tmp_path)
    into = tmp_path / "project" / "servers.yaml"
    do_import("claude-desktop", paths, into)
    files = {p: p.read_bytes() for p in (tmp_path / "project").iterdir()}
    again = do_import("claude-desktop", paths, into)
    assert {p: p.read_bytes() for p in (tmp_path / "project").iterdir()} == files
    assert {i.state for i in again.items} == {"present", "skipped"}


def test_servers_yaml_keeps_its_comments_and_the_new_children_follow(tmp_path: Path) -> None:
    paths, _ = desktop(tmp_path)
    into = tmp_path / "project" / "servers.yaml"
    original = (REPO / "servers.yaml").read_text()
    into.write_text(original)
    imported = do_import("claude-desktop", paths, into)
    text = into.read_text()
    assert text.startswith(original)
    assert "  # imported from claude-desktop ('GitHub')\n  github:\n" in text
    time = next(i for i in imported.items if i.name == "time")
    assert time.state == "added" and time.prefix == "time-2"  # the default servers.yaml has another `time`
    assert any("'time' is taken" in note for note in time.converted.notes)


def test_names_are_fitted_to_prefixes_and_collisions_numbered(tmp_path: Path) -> None:
    assert fit_prefix("GitHub MCP") == "github-mcp"
    assert fit_prefix("@org/Server_Name") == "org-server-name"
    assert fit_prefix("2fa-tools") == "fa-tools"
    assert fit_prefix("___") == "server"
    assert len(fit_prefix("a" * 40)) == 32
    document = {
        "mcpServers": {
            "GitHub MCP": {"command": "gh-mcp"},
            "github_mcp": {"command": "other-gh-mcp"},
            "github.mcp": {"command": "gh-mcp"},  # the same server as the first: not added twice
        }
    }
    paths, _ = desktop(tmp_path, document)
    imported = do_import("claude-desktop", paths, tmp_path / "project" / "servers.yaml")
    assert [(i.name, i.state, i.prefix) for i in imported.items] == [
        ("GitHub MCP", "added", "github-mcp"),
        ("github_mcp", "added", "github-mcp-2"),
        ("github.mcp", "present", "github-mcp"),
    ]


def test_consolidate_leaves_the_hub_entry_alone_in_the_host_and_restore_undoes_it(tmp_path: Path) -> None:
    paths, host_file = desktop(tmp_path)
    original = host_file.read_bytes()
    into = tmp_path / "project" / "servers.yaml"
    imported = do_import("claude-desktop", paths, into)
    command = ["/opt/hub/.venv/bin/hub", "serve", "--config", str(into)]
    change = apply(plan(imported.source.target, "hub", command, imported.hub_serves), datetime(2026, 12, 1, 16, 30))
    document = json.loads(host_file.read_text())
    assert set(document["mcpServers"]) == {"hub", "broken"}  # what the hub cannot run stays where it was
    assert document["mcpServers"]["hub"] == {"command": command[0], "args": command[1:]}
    assert document["globalShortcut"] == "Alt+Space"
    assert change.backup is not None and change.backup.read_bytes() == original
    latest, undo = restore_plan(imported.source.target)
    restore(latest, undo)
    assert host_file.read_bytes() == original


@pytest.mark.parametrize(
    ("text", "key", "relative"),
    [
        (VSCODE, "servers", ".config/Code/User/mcp.json"),
        (ZED, "context_servers", ".config/zed/settings.json"),
        (GEMINI, "mcpServers", ".gemini/settings.json"),
        (CODEX, "mcp_servers", ".codex/config.toml"),
    ],
    ids=["vscode", "zed", "gemini", "codex"],
)
def test_every_format_imports_by_client_and_by_path(text: str, key: str, relative: str, tmp_path: Path) -> None:
    client = next(h for h in HOSTS if h.text == text).client
    file = tmp_path / "home" / relative
    file.parent.mkdir(parents=True)
    file.write_text(text)
    (tmp_path / "project").mkdir()
    paths = Paths(tmp_path / "home", "linux", {}, tmp_path / "project")
    by_client = plan_import(open_source(client, paths, "user"), tmp_path / "project" / "a.yaml", paths)
    by_path = plan_import(open_source(str(file), paths, "user"), tmp_path / "project" / "a.yaml", paths)
    assert yaml.safe_load(by_client.servers.after) == yaml.safe_load(by_path.servers.after)  # comments differ
    assert by_client.source.target.key == (key,)
    assert [i.state for i in by_client.items] != [] and all(i.state == "added" for i in by_client.items)


def test_each_hosts_shapes_become_children() -> None:
    home = {"userHome": "/home/me", "workspaceFolder": "/home/me/src/app"}
    vscode = convert(
        {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"X-Key": "${env:GH_KEY}"}}, home
    )
    assert vscode.child == {
        "url": "https://api.githubcopilot.com/mcp/",
        "transport": "streamable-http",
        "headers": {"X-Key": "${GH_KEY}"},
    }
    prompt = convert({"type": "stdio", "command": "x", "env": {"T": "${input:token}"}, "envFile": ".env"}, home)
    assert any("not imported: envFile" in note for note in prompt.notes)
    folder = convert({"command": "fs-mcp", "args": ["${workspaceFolder}", "${userHome}/notes"]}, home)
    assert folder.child["args"] == ["/home/me/src/app", "/home/me/notes"]
    zed_old = convert({"command": {"path": "pg-mcp", "args": ["--ro"], "env": {"A": "1"}}, "settings": {}}, home)
    assert zed_old.child == {"command": "pg-mcp", "args": ["--ro"], "env": {"A": "1"}}
    codex = convert(
        {"url": "https://x.example/mcp", "bearer_token_env_var": "X_TOKEN", "enabled": False, "enabled_tools": ["a"]},
        home,
    )
    assert codex.child == {
        "url": "https://x.example/mcp",
        "headers": {"Authorization": "Bearer ${X_TOKEN}"},
        "enabled": False,
        "tools": {"allow": ["a"]},
    }
    inherit = convert({"command": "y", "env_vars": ["HOME_TOKEN"]}, home)
    assert inherit.child == {"command": "y", "inherit_env": ["HOME_TOKEN"]}
    windsurf = convert({"serverUrl": "https://w.example/sse", "disabled": True}, home)
    assert windsurf.child == {"url": "https://w.example/sse", "enabled": False}
    gemini_sse = convert({"url": "https://g.example/events"}, home, gemini=True)
    assert gemini_sse.child["transport"] == "sse"
    with pytest.raises(Unusable):
        convert({"args": ["x"]}, home)


def test_a_name_taken_in_the_environment_with_another_value_is_not_used(tmp_path: Path) -> None:
    document = {"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": GITHUB_PAT}}}}
    paths, _ = desktop(tmp_path, document)
    shell = Paths(paths.home, paths.platform, {"GITHUB_TOKEN": "the shell's own token"}, paths.cwd)
    do_import("claude-desktop", shell, tmp_path / "project" / "servers.yaml")
    servers = yaml.safe_load((tmp_path / "project" / "servers.yaml").read_text())["servers"]
    assert servers["gh"]["env"] == {"GITHUB_TOKEN": "${GH_GITHUB_TOKEN}"}
    assert read_env_file(tmp_path / "project" / "servers.env") == {"GH_GITHUB_TOKEN": GITHUB_PAT}


def test_a_gitignore_that_exists_is_added_to_once(tmp_path: Path) -> None:
    paths, _ = desktop(tmp_path)
    gitignore = tmp_path / "project" / ".gitignore"
    gitignore.write_text("node_modules/\n*.log")
    do_import("claude-desktop", paths, tmp_path / "project" / "servers.yaml")
    assert gitignore.read_text() == "node_modules/\n*.log\nservers.env\n"


def test_a_source_without_servers_is_an_error(tmp_path: Path) -> None:
    paths = Paths(tmp_path, "linux", {}, tmp_path)
    (tmp_path / "settings.json").write_text('{"theme": "dark"}')
    with pytest.raises(EditError, match="no servers found"):
        open_source("settings.json", paths, "user")
    with pytest.raises(EditError, match="no such file"):
        open_source("cursor", paths, "user")
    with pytest.raises(EditError, match=r"missing\.json: no such file"):  # a path, not a host's name
        open_source("missing.json", paths, "user")


def test_consolidating_a_zed_file_keeps_its_comments(tmp_path: Path) -> None:
    host = next(h for h in HOSTS if h.client == "zed" and h.platform == "linux")
    file = host.lay_out(tmp_path)
    paths = host.paths(tmp_path)
    imported = do_import("zed", paths, tmp_path / "project" / "servers.yaml")
    command = ["/opt/hub/bin/hub", "serve", "--config", "/x/servers.yaml"]
    apply(plan(imported.source.target, "hub", command, imported.hub_serves), datetime(2026, 12, 1))
    text = file.read_text()
    assert "// Zed settings" in text and "// Postgres for the agent panel" in text
    assert set(host.read(text)["context_servers"]) == {"hub"}
