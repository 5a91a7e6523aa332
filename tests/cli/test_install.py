"""`hub install` and `hub import` as commands (hub.cli.install): what they print, their exit status, dry runs that
write nothing, a team hub's URL as an entry. What they plan and write (hub.install) is tested in
tests/install/test_installer.py and tests/install/test_importer.py, on the host files of tests/install/hosts.py.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from hub.cli.install import run_install_command
from hub.install.clients import CLIENTS, Paths
from hub.install.edit import backups
from hub.install.installer import Change, apply, client_target, plan, status
from tests.install.hosts import HOSTS, SECRETS, Host, desktop
from tests.support.paths import REPO

COMMAND = ["/opt/hub/.venv/bin/hub", "serve", "--config", "/home/me/servers.yaml"]
NOW = datetime(2026, 12, 1, 16, 30, 0)


def install(host: Host, root: Path, command: list[str] = COMMAND) -> Change:
    target = client_target(CLIENTS[host.client], host.paths(root), "user")
    return apply(plan(target, "hub", command), NOW)


def servers_of(host: Host, text: str) -> dict[str, Any]:
    servers: dict[str, Any] = host.read(text)[host.key]
    return servers


def args(command: str, **given: Any) -> argparse.Namespace:
    defaults: dict[str, Any] = {
        "command": command,
        "client": None,
        "config": None,
        "name": "hub",
        "scope": "user",
        "dry_run": False,
        "uninstall": False,
        "restore": False,
        "status": False,
        "url": None,
        "token_env": None,
        "keyring": None,
        "keyring_user": "token",
    }
    return argparse.Namespace(**(defaults | given))


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path) -> None:
    host = next(h for h in HOSTS if h.client == "zed" and h.platform == "linux")
    file = host.lay_out(tmp_path)
    config = tmp_path / "project" / "servers.yaml"
    config.write_text("servers: {}\n")
    out = io.StringIO()
    status_code = run_install_command(
        args("install", client="zed", config=str(config), dry_run=True), host.paths(tmp_path), out
    )
    assert status_code == 0
    assert file.read_text() == host.text and backups(file) == []
    printed = out.getvalue()
    assert f"--- {file}\n+++ {file}\n" in printed
    assert any(line.startswith("+") and f'"{config}"' in line for line in printed.splitlines())
    assert printed.endswith(f"zed: added 'hub' ({file}); dry run, nothing written\n")


def test_the_command_refuses_a_scope_the_client_does_not_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = Paths(tmp_path, "linux", {}, tmp_path)
    assert run_install_command(args("install", client="windsurf", scope="project"), paths, io.StringIO()) == 2
    assert "windsurf has no project scope" in capsys.readouterr().err
    assert run_install_command(args("install", client="nope"), paths, io.StringIO()) == 2


def test_status_exits_1_when_an_entry_drifted_and_names_the_difference(tmp_path: Path) -> None:
    host = next(h for h in HOSTS if h.client == "cursor")
    host.lay_out(tmp_path)
    install(host, tmp_path, ["/old/venv/bin/hub", "serve", "--config", str(tmp_path / "servers.yaml")])
    out = io.StringIO()
    given = args("install", status=True, config=str(tmp_path / "servers.yaml"))
    assert run_install_command(given, host.paths(tmp_path), out) == 1
    printed = out.getvalue()
    assert "cursor          user   drift    hub" in printed
    assert "drift: cursor (user) hub: runs /old/venv/bin/hub, not " in printed
    assert printed.splitlines()[-1].startswith("hub install CLIENT writes: ")


def test_restore_dry_run_shows_what_would_come_back_and_writes_nothing(tmp_path: Path) -> None:
    host = next(h for h in HOSTS if h.client == "gemini")
    file = host.lay_out(tmp_path)
    install(host, tmp_path)
    installed = file.read_bytes()
    out = io.StringIO()
    assert (
        run_install_command(args("install", client="gemini", restore=True, dry_run=True), host.paths(tmp_path), out)
        == 0
    )
    assert file.read_bytes() == installed
    assert '-    "hub": {' in out.getvalue()
    assert "gemini: restored from settings.json.bak-20261201T163000" in out.getvalue()


URL = "https://hub.example.com/mcp"


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_a_team_url_is_a_native_http_entry_or_a_hub_connect_bridge_and_never_holds_the_token(
    client: str, tmp_path: Path
) -> None:
    paths = Paths(tmp_path, "linux", {"HUB_TOKEN": "hub_secret_never_written"}, tmp_path)
    out = io.StringIO()
    given = args("install", client=client, url=URL, token_env="TEAM_HUB_TOKEN")
    assert run_install_command(given, paths, out) == 0, out.getvalue()
    file = CLIENTS[client].file(paths, "user")
    text = file.read_text()
    assert "hub_secret_never_written" not in text and "TEAM_HUB_TOKEN" in text
    host = next(h for h in HOSTS if h.client == client)
    entry = servers_of(host, text)["hub"]
    if client in ("claude-desktop", "zed", "gemini"):  # no remote entry (or no variables in headers): the bridge
        assert entry["args"][-4:] == ["connect", URL, "--token-env", "TEAM_HUB_TOKEN"]
    else:
        assert URL in (entry.get("url"), entry.get("serverUrl"))
    assert run_install_command(given, paths, io.StringIO()) == 0
    assert file.read_text() == text, "running it twice changes nothing"
    (row,) = [r for r in status(paths, "hub", COMMAND) if (r.client, r.scope, r.name) == (client, "user", "hub")]
    assert (row.state, row.detail) == ("remote", URL), "a team hub's entry is not a local one that drifted"


def test_a_url_with_a_query_string_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = Paths(tmp_path, "linux", {}, tmp_path)
    given = args("install", client="cursor", url=URL + "?access_token=x")
    assert run_install_command(given, paths, io.StringIO()) == 2
    assert "without a query string" in capsys.readouterr().err


def consolidating_import(into: Path, dry_run: bool) -> argparse.Namespace:
    """`hub import claude-desktop --into INTO --consolidate [--dry-run]`, as the parser gives it."""
    return argparse.Namespace(
        command="import",
        source="claude-desktop",
        into=str(into),
        config=None,
        scope="user",
        dry_run=dry_run,
        consolidate=True,
        name="hub",
    )


def test_import_dry_run_prints_the_change_without_secrets_and_writes_nothing(tmp_path: Path) -> None:
    paths, host_file = desktop(tmp_path)
    into = tmp_path / "project" / "servers.yaml"
    out = io.StringIO()
    given = consolidating_import(into, dry_run=True)
    assert run_install_command(given, paths, out) == 0
    printed = out.getvalue()
    assert list((tmp_path / "project").iterdir()) == [] and backups(host_file) == []
    for secret in SECRETS:
        assert secret not in printed
    assert f"+++ {into}\n" in printed and "[REDACTED]" in printed
    assert "would add to" in printed and "GITHUB_PERSONAL_ACCESS_TOKEN" in printed
    assert "claude-desktop: replaced 'time', 'GitHub'" in printed


def test_a_desktop_hosts_entry_is_written_with_a_warning_per_variable_the_hub_will_not_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default servers.yaml's git server serves `${HUB_GIT_REPOSITORY:-.}`: exported in this shell, it still
    does not reach a hub that Claude Desktop starts (in `/`); servers.env does."""
    config = tmp_path / "project" / "servers.yaml"
    config.parent.mkdir()
    config.write_text((REPO / "servers.yaml").read_text())
    paths = Paths(tmp_path, "linux", {"HUB_GIT_REPOSITORY": str(REPO)}, tmp_path)
    for dry_run in (True, False):
        out = io.StringIO()
        given = args("install", client="claude-desktop", config=str(config), dry_run=dry_run)
        assert run_install_command(given, paths, out) == 0
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith("hub: warning: server 'git' uses ${HUB_GIT_REPOSITORY:-.}, which Claude Desktop ")
        assert f"add HUB_GIT_REPOSITORY=/absolute/path to {config.parent / 'servers.env'}" in line
        assert "warning" not in out.getvalue()
    assert "hub" in json.loads(CLIENTS["claude-desktop"].file(paths, "user").read_text())["mcpServers"]

    assert run_install_command(args("install", client="claude-code", config=str(config)), paths, io.StringIO()) == 0
    assert capsys.readouterr().err == "", "a terminal's hub has the shell's environment, in the shell's directory"
    (config.parent / "servers.env").write_text(f"HUB_GIT_REPOSITORY={REPO}\n")
    given = args("install", client="claude-desktop", config=str(config))
    assert run_install_command(given, paths, io.StringIO()) == 0
    assert capsys.readouterr().err == ""


def test_a_variable_in_the_entrys_own_env_reaches_the_hub(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text("servers:\n  notes:\n    command: notes\n    args: ['${NOTES_DIR}']\n")
    paths = Paths(tmp_path, "linux", {}, tmp_path)
    given = args("install", client="cursor", config=str(config))
    assert run_install_command(given, paths, io.StringIO()) == 0
    assert "${NOTES_DIR}, which Cursor will not give the hub" in capsys.readouterr().err
    file = CLIENTS["cursor"].file(paths, "user")
    document = json.loads(file.read_text())
    document["mcpServers"]["hub"]["env"] = {"NOTES_DIR": "/srv/notes"}
    file.write_text(json.dumps(document))
    assert run_install_command(given, paths, io.StringIO()) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("client", ["claude-desktop", "cursor"])
def test_a_keyring_token_is_read_by_a_hub_connect_entry_for_every_host(
    client: str, tmp_path: Path, fake_keyring: dict[tuple[str, str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    paths = Paths(tmp_path, "linux", {}, tmp_path)
    out = io.StringIO()
    given = args("install", client=client, url=URL, keyring="team-hub", keyring_user="alice")
    assert run_install_command(given, paths, out) == 0
    text = CLIENTS[client].file(paths, "user").read_text()
    entry = json.loads(text)["mcpServers"]["hub"]
    assert entry["args"][-6:] == ["connect", URL, "--keyring", "team-hub", "--keyring-user", "alice"]
    assert "token" not in json.dumps(entry).replace("--keyring", "")
    printed = out.getvalue()
    assert "with the token from the keyring (service 'team-hub', user 'alice')" in printed
    assert ("reads no keyring itself: its entry runs `hub connect`" in printed) == (client == "cursor")
    said = capsys.readouterr().err
    assert said.startswith("hub: warning: the keyring (service 'team-hub', user 'alice') has no such entry")
    assert f"store the token with `{sys.executable} -m keyring set team-hub alice`" in said

    fake_keyring[("team-hub", "alice")] = "hub_in_the_keyring"
    assert run_install_command(given, paths, out) == 0
    assert capsys.readouterr().err == "", "the token is there: nothing to say"
    assert "hub_in_the_keyring" not in out.getvalue() + CLIENTS[client].file(paths, "user").read_text()


def test_token_options_without_a_url_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = Paths(tmp_path, "linux", {}, tmp_path)
    (tmp_path / "servers.yaml").write_text("servers: {}\n")
    given = args("install", client="cursor", config=str(tmp_path / "servers.yaml"), keyring="team-hub")
    assert run_install_command(given, paths, io.StringIO()) == 2
    assert "they go with --url" in capsys.readouterr().err
    assert not CLIENTS["cursor"].file(paths, "user").exists()


def test_import_consolidate_warns_as_install_does_once_it_has_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths, _ = desktop(tmp_path)
    into = tmp_path / "project" / "servers.yaml"  # desktop() made the directory
    into.write_text((REPO / "servers.yaml").read_text())
    given = consolidating_import(into, dry_run=False)
    assert run_install_command(given, paths, io.StringIO()) == 0
    said = capsys.readouterr().err.splitlines()
    assert [line[:60] for line in said] == ["hub: warning: server 'git' uses ${HUB_GIT_REPOSITORY:-.}, wh"]
