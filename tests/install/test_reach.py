"""Which `${VAR}` of servers.yaml the hub a host starts will not have (hub.install.reach): what reaches it (servers.env,
the entry's env, a desktop session's own variables, a terminal's whole shell) and what breaks it."""

from __future__ import annotations

from pathlib import Path

from hub.config.loader import load_config
from hub.install.reach import Unreached, unreached, warning
from tests.support.paths import REPO

SHELL = {"HOME": "/home/me", "PATH": "/usr/bin", "HUB_GIT_REPOSITORY": "/home/me/src", "TEAM_TOKEN": "t"}


def write(directory: Path, text: str, env: str | None = None) -> Path:
    config = directory / "servers.yaml"
    config.write_text(text)
    if env is not None:
        (directory / "servers.env").write_text(env)
    return config


def test_the_default_servers_yaml_serves_a_desktop_hosts_directory_unless_servers_env_names_one(
    tmp_path: Path,
) -> None:
    config = write(tmp_path, (REPO / "servers.yaml").read_text())
    (found,) = unreached(config, {}, SHELL, terminal=False)
    assert found == Unreached("HUB_GIT_REPOSITORY", ".", "servers.git.args.1", "git", in_shell=True)
    line = warning(found, "Claude Desktop", config)
    assert line.startswith("server 'git' uses ${HUB_GIT_REPOSITORY:-.}, which Claude Desktop leaves at '.'")
    assert "this shell has it, but Claude Desktop does not start the hub from it" in line
    assert f"add HUB_GIT_REPOSITORY=/absolute/path to {tmp_path / 'servers.env'}" in line
    assert "or disable 'git' (enabled: false)" in line
    # `${HUB_TIMEZONE:-UTC}` falls back to a default that does not depend on where the hub runs: nothing to say.

    assert unreached(config, {}, SHELL, terminal=True) == [], "a terminal's hub runs in the shell's directory"
    assert unreached(config, {"HUB_GIT_REPOSITORY": "/src"}, {}, terminal=False) == [], "the entry's env reaches it"
    (tmp_path / "servers.env").write_text("HUB_GIT_REPOSITORY=/home/me/src\n")
    assert unreached(config, {}, {}, terminal=False) == [], "servers.env reaches it: the hub reads it itself"


def test_an_unset_variable_without_default_stops_the_hub_even_in_a_disabled_server(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        "servers:\n"
        "  notes:\n    command: notes\n    args: ['${NOTES_DIR}', '${NOTES_DIR}']\n    env: {T: '${TEAM_TOKEN}'}\n"
        "  old:\n    enabled: false\n    command: x\n    args: ['${OFF_TOKEN}', '${OFF_DIR:-.}']\n"
        "hub:\n  log_file: '${LOG_DIR}/hub.log'\n",
        "TEAM_TOKEN=from-the-env-file\n",
    )
    found = unreached(config, {}, SHELL, terminal=False)
    assert [(f.variable, f.server, f.disabled) for f in found] == [
        ("NOTES_DIR", "notes", False),  # once, though used twice
        ("OFF_TOKEN", "old", True),  # expanded all the same: the hub does not start; its OFF_DIR:-. runs nowhere
        ("LOG_DIR", None, False),
    ]
    assert warning(found[0], "Zed", config) == (
        f"server 'notes' uses ${{NOTES_DIR}}, which Zed will not give the hub, so the hub will not start: add "
        f"NOTES_DIR=... to {tmp_path / 'servers.env'} (the hub reads it), or give it a default in servers.yaml "
        "(${NOTES_DIR:-value})"
    )
    assert "(disabled, but the hub expands every ${VAR} in the file)" in warning(found[1], "Zed", config)
    assert warning(found[2], "Zed", config).startswith("hub.log_file uses ${LOG_DIR}")


def test_a_desktop_session_has_home_and_path_but_not_the_shells_exports(tmp_path: Path) -> None:
    config = write(tmp_path, "servers:\n  a:\n    command: a\n    args: ['${HOME}/x', '${TEAM_TOKEN}', '${NOWHERE}']\n")
    desktop = unreached(config, {}, SHELL, terminal=False)
    assert [(f.variable, f.in_shell) for f in desktop] == [("TEAM_TOKEN", True), ("NOWHERE", False)]
    assert [f.variable for f in unreached(config, {}, SHELL, terminal=True)] == ["NOWHERE"]


def test_an_absolute_cwd_or_a_local_override_leaves_nothing_to_say(tmp_path: Path) -> None:
    (tmp_path / "team.yaml").write_text(
        "servers:\n  git:\n    command: mcp-server-git\n    args: ['--repository', '${REPO_DIR}']\n"
    )
    config = write(
        tmp_path,
        "include: [team.yaml]\nservers:\n  git:\n    args: ['--repository', '/srv/repo']\n"
        "  files:\n    command: files\n    cwd: /srv/files\n    args: ['${FILES_ROOT:-.}']\n",
    )
    assert unreached(config, {}, {}, terminal=False) == []
    assert load_config(config, {}).config.servers["git"].args == ("--repository", "/srv/repo")
