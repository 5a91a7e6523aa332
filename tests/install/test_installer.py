"""`hub install`: each host's file in its place on Linux, macOS and Windows, read back with that format's own
parser; idempotence; uninstall and restore exact to the byte; dry runs; status and drift; Claude Code's CLI.

Every home directory is a temporary one (hub.install.clients.Paths), holding the files of tests/install/hosts.py.
The command itself (hub.cli.install: its output, exit status, --url): tests/cli/test_install.py.
"""

from __future__ import annotations

import os
import stat
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hub.install.clients import CLIENTS, Paths, hub_executable, runs_hub, serve_command
from hub.install.edit import EditError, backups
from hub.install.installer import Change, apply, client_target, drift, plan, restore, restore_plan, status
from hub.install.installer import uninstall_plan as uninstall
from tests.install.hosts import HOSTS, Host

COMMAND = ["/opt/hub/.venv/bin/hub", "serve", "--config", "/home/me/servers.yaml"]
NOW = datetime(2026, 12, 1, 16, 30, 0)
LATER = datetime(2026, 12, 1, 16, 31, 0)


def install(host: Host, root: Path, command: list[str] = COMMAND, when: datetime = NOW) -> Change:
    target = client_target(CLIENTS[host.client], host.paths(root), "user")
    return apply(plan(target, "hub", command), when)


def comments(text: str) -> list[str]:
    """Each comment of the file, from its marker to the end of its line."""
    found = []
    for line in text.splitlines():
        at = min((line.find(m) for m in ("// ", "/*", "# ") if m in line), default=-1)
        if at >= 0 and not line[:at].count('"') % 2:
            found.append(line[at:])
    return found


def servers_of(host: Host, text: str) -> dict[str, Any]:
    servers: dict[str, Any] = host.read(text)[host.key]
    return servers


@pytest.mark.parametrize("host", HOSTS, ids=lambda h: h.id)
def test_install_writes_the_entry_where_the_client_reads_it_and_keeps_the_rest(host: Host, tmp_path: Path) -> None:
    file = host.lay_out(tmp_path)
    change = install(host, tmp_path)
    assert change.target.file == file
    text = file.read_bytes().decode()
    document, original = host.read(text), host.read(host.text)
    entry = document[host.key]["hub"]
    assert [entry["command"], *entry["args"]] == COMMAND
    assert entry == CLIENTS[host.client].entry(COMMAND)
    assert {k: v for k, v in document[host.key].items() if k != "hub"} == original[host.key]
    assert {k: v for k, v in document.items() if k != host.key} == {k: v for k, v in original.items() if k != host.key}
    for comment in comments(host.text):
        assert comment in text, f"comment lost: {comment!r}"
    assert change.backup is not None and change.backup.read_bytes() == host.text.encode()


def test_each_client_gets_its_own_shape_of_entry() -> None:
    assert CLIENTS["vscode"].entry(COMMAND)["type"] == "stdio"
    assert CLIENTS["claude-code"].entry(COMMAND)["type"] == "stdio"
    assert CLIENTS["zed"].entry(COMMAND) == {
        "source": "custom",
        "enabled": True,
        "command": COMMAND[0],
        "args": COMMAND[1:],
    }
    assert CLIENTS["claude-desktop"].entry(COMMAND) == {"command": COMMAND[0], "args": COMMAND[1:]}


@pytest.mark.parametrize("host", HOSTS, ids=lambda h: h.id)
def test_installing_twice_changes_nothing_and_backs_nothing_up(host: Host, tmp_path: Path) -> None:
    file = host.lay_out(tmp_path)
    install(host, tmp_path)
    first = file.read_bytes()
    again = install(host, tmp_path, when=LATER)
    assert not again.changes and again.backup is None
    assert file.read_bytes() == first
    assert len(backups(file)) == 1
    assert "up to date" in again.summary


@pytest.mark.parametrize("host", HOSTS, ids=lambda h: h.id)
def test_uninstall_gives_back_the_file_as_it_was_to_the_byte(host: Host, tmp_path: Path) -> None:
    file = host.lay_out(tmp_path)
    install(host, tmp_path)
    target = client_target(CLIENTS[host.client], host.paths(tmp_path), "user")
    change = apply(uninstall(target, "hub"), LATER)
    assert change.summary == "removed 'hub'"
    assert file.read_bytes() == host.text.encode()
    nothing = uninstall(target, "hub")
    assert not nothing.changes and nothing.summary == "no 'hub' entry"


@pytest.mark.parametrize("host", HOSTS, ids=lambda h: h.id)
def test_restore_puts_the_latest_backup_back_byte_for_byte(host: Host, tmp_path: Path) -> None:
    file = host.lay_out(tmp_path)
    install(host, tmp_path)
    install(host, tmp_path, [*COMMAND[:-1], "/elsewhere/servers.yaml"], LATER)  # a second backup, newer
    target = client_target(CLIENTS[host.client], host.paths(tmp_path), "user")
    latest, change = restore_plan(target)
    assert latest == backups(file)[-1]
    restore(latest, change)
    assert file.read_bytes() == latest.read_bytes()
    assert servers_of(host, file.read_text())["hub"]["args"][-1] == COMMAND[-1]


def test_an_update_changes_only_the_keys_install_writes(tmp_path: Path) -> None:
    host = next(h for h in HOSTS if h.client == "claude-desktop")
    file = host.lay_out(tmp_path)
    text = host.text.replace(
        '"mcpServers": {\n',
        '"mcpServers": {\n    "hub": {\n      "command": "/old/hub",\n      "args": ["serve"],\n'
        '      "env": { "HUB_GIT_REPOSITORY": "/home/me/src" }\n    },\n',
    )
    file.write_text(text)
    change = install(host, tmp_path)
    assert change.summary == "updated 'hub'"
    entry = servers_of(host, file.read_text())["hub"]
    assert entry["env"] == {"HUB_GIT_REPOSITORY": "/home/me/src"}  # kept: the README's way of naming a repository
    assert [entry["command"], *entry["args"]] == COMMAND


def test_a_file_that_does_not_exist_is_created_with_only_the_entry(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home", "linux", {}, tmp_path)
    change = apply(plan(client_target(CLIENTS["cursor"], paths, "user"), "hub", COMMAND), NOW)
    assert change.backup is None and change.summary == "added 'hub'"
    assert change.target.file == tmp_path / "home" / ".cursor" / "mcp.json"
    assert change.target.file.read_text() == (
        '{\n  "mcpServers": {\n    "hub": {\n      "command": "/opt/hub/.venv/bin/hub",\n'
        '      "args": ["serve", "--config", "/home/me/servers.yaml"]\n    }\n  }\n}\n'
    )


def test_a_file_that_cannot_be_parsed_is_left_alone(tmp_path: Path) -> None:
    host = next(h for h in HOSTS if h.client == "cursor")
    file = host.lay_out(tmp_path)
    file.write_text('{ "mcpServers": { "a": ')
    with pytest.raises(EditError, match=r"mcp\.json: not valid JSON: line 1"):
        install(host, tmp_path)
    assert file.read_text() == '{ "mcpServers": { "a": '
    assert backups(file) == []


def test_the_mode_of_the_file_is_kept(tmp_path: Path) -> None:
    host = next(h for h in HOSTS if h.client == "claude-code")
    file = host.lay_out(tmp_path)
    os.chmod(file, 0o600)
    install(host, tmp_path)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600


def test_project_scope_files_and_clients_without_one(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home", "linux", {}, tmp_path / "project")
    expected = {
        "claude-code": ".mcp.json",
        "cursor": ".cursor/mcp.json",
        "vscode": ".vscode/mcp.json",
        "zed": ".zed/settings.json",
        "gemini": ".gemini/settings.json",
        "codex": ".codex/config.toml",
    }
    for name, relative in expected.items():
        assert CLIENTS[name].file(paths, "project") == tmp_path / "project" / relative
    for name in ("claude-desktop", "windsurf"):
        with pytest.raises(ValueError, match="has no project scope"):
            CLIENTS[name].file(paths, "project")


def test_locations_follow_the_variables_the_clients_read(tmp_path: Path) -> None:
    home = tmp_path
    env = {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "CODEX_HOME": str(tmp_path / "codex"),
    }
    linux = Paths(home, "linux", env, tmp_path)
    assert CLIENTS["claude-desktop"].file(linux, "user") == tmp_path / "xdg/Claude/claude_desktop_config.json"
    assert CLIENTS["zed"].file(linux, "user") == tmp_path / "xdg/zed/settings.json"
    assert CLIENTS["claude-code"].file(linux, "user") == tmp_path / "claude/.claude.json"
    assert CLIENTS["codex"].file(linux, "user") == tmp_path / "codex/config.toml"
    relative = Paths(home, "linux", {"XDG_CONFIG_HOME": "relative/dir"}, tmp_path)  # not absolute: ignored
    assert CLIENTS["vscode"].file(relative, "user") == home / ".config/Code/User/mcp.json"
    windows = Paths(home, "win32", {}, tmp_path)  # no APPDATA: its default place
    assert CLIENTS["vscode"].file(windows, "user") == home / "AppData/Roaming/Code/User/mcp.json"
    assert CLIENTS["windsurf"].file(windows, "user") == home / ".codeium/windsurf/mcp_config.json"


def test_the_hub_runs_by_absolute_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.touch()
    assert hub_executable(str(python), windows=False) == [str(python), "-m", "hub"]
    (bin_dir / "hub").touch()
    assert hub_executable(str(python), windows=False) == [str(bin_dir / "hub")]
    (bin_dir / "hub.exe").touch()
    assert hub_executable(str(python), windows=True) == [str(bin_dir / "hub.exe")]
    assert serve_command(["/x/hub"], tmp_path / "s.yaml") == ["/x/hub", "serve", "--config", str(tmp_path / "s.yaml")]


def test_entries_that_run_a_hub_are_recognised() -> None:
    assert runs_hub({"command": "/opt/venv/bin/hub", "args": ["serve", "--config", "x"]})
    assert runs_hub({"command": "C:\\venv\\Scripts\\hub.exe", "args": ["serve"]})
    assert runs_hub({"command": "/usr/bin/python3", "args": ["-m", "hub", "serve"]})
    assert not runs_hub({"command": "npx", "args": ["-y", "hub"]})
    assert not runs_hub({"url": "https://example.com/mcp"})


def test_drift_names_what_differs() -> None:
    assert drift(COMMAND, COMMAND) is None
    moved = ["/old/venv/bin/hub", "serve", "--config", "/home/me/servers.yaml"]
    assert drift(moved, COMMAND) == "runs /old/venv/bin/hub, not /opt/hub/.venv/bin/hub"
    other = [*COMMAND[:-1], "/tmp/other.yaml"]
    assert drift(other, COMMAND) == "serves /tmp/other.yaml, not /home/me/servers.yaml"


def test_status_shows_where_the_hub_is_and_its_drift(tmp_path: Path) -> None:
    hosts = {h.client: h for h in HOSTS if h.platform == "linux"}
    for client in ("claude-desktop", "zed", "codex"):
        hosts[client].lay_out(tmp_path)
    paths = hosts["zed"].paths(tmp_path)
    install(hosts["claude-desktop"], tmp_path)
    install(hosts["zed"], tmp_path, ["/old/venv/bin/hub", *COMMAND[1:]])
    rows = {(r.client, r.scope): r for r in status(paths, "hub", COMMAND)}
    assert set(rows) == {(name, "user") for name in CLIENTS}
    assert rows["claude-desktop", "user"].state == "installed"
    assert rows["claude-desktop", "user"].command == tuple(COMMAND)
    assert rows["zed", "user"].state == "drift" and "runs /old/venv/bin/hub" in rows["zed", "user"].detail
    assert rows["codex", "user"].state == "not installed"
    assert rows["cursor", "user"].state == "no file"


class FakeClaude:
    """`claude mcp add|remove` as Claude Code does it: it edits ~/.claude.json itself."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self.ran: list[list[str]] = []

    def __call__(self, argv: list[str]) -> int:
        self.ran.append(argv)
        target = client_target(CLIENTS["claude-code"], self.paths, "user")
        if argv[2] == "remove":
            apply(uninstall(target, argv[-1]), NOW)
        else:
            name, command = argv[5], argv[7:]
            apply(plan(target, name, command), NOW)
        return 0


def test_claude_code_is_changed_through_its_cli_when_it_is_on_path(tmp_path: Path) -> None:
    host = next(h for h in HOSTS if h.client == "claude-code")
    file = host.lay_out(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\n")
    (bin_dir / "claude").chmod(0o755)
    paths = Paths(tmp_path / "home", "linux", {"PATH": str(bin_dir)}, tmp_path)
    claude = FakeClaude(Paths(tmp_path / "home", "linux", {}, tmp_path))
    target = client_target(CLIENTS["claude-code"], paths, "user")
    assert target.cli == str(bin_dir / "claude")
    change = apply(plan(target, "hub", COMMAND), NOW, claude)
    assert claude.ran == [[str(bin_dir / "claude"), "mcp", "add", "--scope", "user", "hub", "--", *COMMAND]]
    assert change.backup is not None and change.backup.read_text() == host.text
    assert not plan(target, "hub", COMMAND).changes  # what claude wrote is what install wants: nothing to run
    moved = ["/new/hub", *COMMAND[1:]]
    apply(plan(target, "hub", moved), LATER, claude)
    assert [argv[2] for argv in claude.ran[1:]] == ["remove", "add"]
    apply(uninstall(target, "hub"), LATER, claude)
    assert claude.ran[-1] == [str(bin_dir / "claude"), "mcp", "remove", "--scope", "user", "hub"]
    assert file.read_text() == host.text
