"""`hub import` and `hub install` as a person runs them, with HOME pointed at a temporary directory; then the hub
started exactly as the host would start it, from the entry written in the host's JSON.

A Claude Desktop config with real servers (`mcp-server-time`, `mcp-server-git`, installed with the hub) is
imported, its secret moved to servers.env; `hub install claude-desktop` writes the hub's entry; the SDK's client
spawns that entry's command with a desktop host's minimal environment (PATH=/usr/bin:/bin, working directory `/`)
and lists and calls the imported servers' tools through the hub. The hub reads the secret back from servers.env at
start: the child sees it.

Also: the commands that docs/cli.md shows for `hub install` and `hub import` are run, and print what it says.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import StdioServerParameters

from tests.integration.test_connect import team_config
from tests.integration.test_team import create_token
from tests.support.keyring import keyring_package
from tests.support.mcp_client import Host, connect_hub, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http
from tests.support.waits import WAIT

pytestmark = pytest.mark.integration

SECRET = "sk-proj-Xw3Rt8Yb1Nc6Vd0Zp4Hs5Gj9fKq2Lm7"
HOST_VARIABLES = ("XDG_CONFIG_HOME", "APPDATA", "HUB_CONFIG", "CLAUDE_CONFIG_DIR", "VIRTUAL_ENV", "HUB_GIT_REPOSITORY")


def hub_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in HOST_VARIABLES} | {"HOME": str(home)} | (extra or {})


def run_hub(home: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub", *args],
        cwd=cwd,
        env=hub_env(home, env),
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


async def run_hub_async(home: Path, cwd: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """`run_hub` from a test whose event loop also serves: the exit status, stdout and stderr."""
    with anyio.fail_after(WAIT):
        done = await anyio.run_process(
            [sys.executable, "-m", "hub", *args], cwd=cwd, env=hub_env(home, env), check=False
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def claude_desktop(home: Path) -> Path:
    file = home / ".config" / "Claude" / "claude_desktop_config.json"
    file.parent.mkdir(parents=True)
    document = {
        "mcpServers": {
            "time": {
                "command": "mcp-server-time",
                "args": ["--local-timezone", "UTC"],
                "env": {"OPENAI_API_KEY": SECRET},  # mcp-server-time ignores it; it is here to travel
            },
            "git": {"command": "mcp-server-git", "args": ["--repository", str(REPO)]},
        },
        "globalShortcut": "Alt+Space",
    }
    file.write_text(json.dumps(document, indent=2) + "\n")
    return file


@pytest.mark.anyio
async def test_import_install_and_the_host_starts_the_hub_from_its_entry(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    host_file = claude_desktop(home)
    imported = run_hub(home, project, "import", "claude-desktop", "--into", "servers.yaml")
    assert imported.returncode == 0, imported.stderr
    assert SECRET not in (project / "servers.yaml").read_text() and SECRET not in imported.stdout
    assert f"OPENAI_API_KEY={SECRET}" in (project / "servers.env").read_text()
    assert (project / "servers.env").stat().st_mode & 0o777 == 0o600

    installed = run_hub(home, project, "install", "claude-desktop", "--config", "servers.yaml")
    assert installed.returncode == 0, installed.stderr
    entry = json.loads(host_file.read_text())["mcpServers"]["hub"]
    assert Path(entry["command"]).is_absolute()
    assert entry["args"] == ["serve", "--config", str(project / "servers.yaml")]
    again = run_hub(home, project, "install", "claude-desktop", "--config", "servers.yaml")
    assert "is up to date" in again.stdout

    # As Claude Desktop starts it: the entry's command, a PATH of its own, its own working directory.
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env={"HOME": str(home), "PATH": "/usr/bin:/bin"}, cwd="/"
    )
    host = Host()
    async with connect_hub(params, host) as client:
        await wait_for_tools(client, host, {"time_get_current_time", "git_status"})  # however loaded the machine
        result = await client.call_tool("time_get_current_time", {"timezone": "UTC"})
        assert not result.is_error
        assert '"timezone": "UTC"' in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_install_url_keyring_writes_an_entry_that_connects_with_the_token_from_the_keyring(
    tmp_path: Path,
) -> None:
    """`hub install claude-desktop --url URL --keyring team-hub`: the entry runs `hub connect URL --keyring team-hub`;
    started as Claude Desktop starts it (its own PATH, `/`, no token in its environment), it reaches the team hub
    with the token it reads from the keyring (a stand-in package: the optional one, and never the machine's)."""
    home = tmp_path / "home"
    home.mkdir()
    config = team_config(tmp_path)
    token = create_token(config, "alice")
    keyring = keyring_package(tmp_path / "keyring", {})
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        install = ("install", "claude-desktop", "--url", url, "--keyring", "team-hub")
        status, printed, said = await run_hub_async(home, tmp_path, keyring, *install)
        assert status == 0, said
        assert "with the token from the keyring (service 'team-hub', user 'token')" in printed
        assert said.startswith("hub: warning: the keyring (service 'team-hub', user 'token') has no such entry")
        assert "-m keyring set team-hub token`" in said
        host_file = home / ".config" / "Claude" / "claude_desktop_config.json"
        entry = json.loads(host_file.read_text())["mcpServers"]["hub"]
        assert entry["args"] == ["connect", url, "--keyring", "team-hub"]

        keyring_package(tmp_path / "keyring", {"team-hub:token": token})  # what `keyring set` stores
        status, printed, said = await run_hub_async(home, tmp_path, keyring, *install)
        assert (status, said) == (0, "") and "is up to date" in printed
        assert token not in host_file.read_text() + printed

        params = StdioServerParameters(
            command=entry["command"],
            args=entry["args"],
            env={"HOME": str(home), "PATH": "/usr/bin:/bin", **keyring},
            cwd="/",
        )
        async with connect_hub(params) as client:
            result = await client.call_tool("kitchen_echo", {"text": "from the keyring"})
        assert not result.is_error and "from the keyring" in result.content[0].text  # type: ignore[union-attr]


def test_install_warns_when_the_desktop_host_will_not_have_a_variable_of_servers_yaml(tmp_path: Path) -> None:
    """The default servers.yaml as written by hand into a project: Claude Desktop starts the hub in `/`, where
    `${HUB_GIT_REPOSITORY:-.}` is not a repository; the entry is written all the same, with one line saying so."""
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir(parents=True)
    (project / "servers.yaml").write_text((REPO / "servers.yaml").read_text())
    installed = run_hub(home, project, "install", "claude-desktop", "-c", "servers.yaml")
    assert installed.returncode == 0
    (line,) = installed.stderr.splitlines()
    assert line.startswith("hub: warning: server 'git' uses ${HUB_GIT_REPOSITORY:-.}, which Claude Desktop")
    (project / "servers.env").write_text(f"HUB_GIT_REPOSITORY={REPO}\n")
    again = run_hub(home, project, "install", "claude-desktop", "-c", "servers.yaml")
    assert (again.returncode, again.stderr) == (0, "")


def documented() -> list[tuple[str, list[str]]]:
    """The `$ hub install|import ...` commands of docs/cli.md's ```text blocks, with the lines each prints (blank
    lines apart)."""
    out: list[tuple[str, list[str]]] = []
    inside = False
    for line in (REPO / "docs" / "cli.md").read_text().splitlines():
        if line.startswith("```"):
            inside = line.startswith("```text") and not inside
            continue
        if inside and line.startswith(("$ hub install", "$ hub import")):
            out.append((line[2:], []))
        elif inside and out and not line.startswith("$ ") and line.strip():
            out[-1][1].append(line)
        elif inside and line.startswith("$ "):
            inside = False  # a block of other commands
    return out


def test_the_install_and_import_examples_in_the_docs_print_what_they_show(tmp_path: Path) -> None:
    """Run in order in one home (`/home/me` in the docs), with the hub at `/opt/hub/.venv/bin/hub` in the docs (its
    Python beside it) and its checkout at `/home/me/src/hub`; what they print on stdout, then on stderr. The keyring
    is an empty stand-in."""
    examples = documented()
    assert len(examples) >= 8, "docs/cli.md lost its hub install / hub import examples"
    home, project = tmp_path / "home", tmp_path / "home" / "project"
    project.mkdir(parents=True)
    claude_desktop(home)
    hub = Path(sys.executable).parent / "hub"
    keyring = keyring_package(tmp_path / "keyring", {})
    for command, shown in examples:
        argv = shlex.split(command.replace("/home/me/src/hub", str(REPO)))[1:]
        result = run_hub(home, project, *argv, env=keyring)
        assert result.returncode in (0, 1), result.stderr
        printed = (
            (result.stdout + result.stderr).replace(str(home), "/home/me").replace(str(hub), "/opt/hub/.venv/bin/hub")
        )
        printed = printed.replace(sys.executable, "/opt/hub/.venv/bin/python").replace(str(REPO), "/home/me/src/hub")
        printed = re.sub(r"\.bak-\d{8}T\d{6}(-\d+)?", ".bak-20261201T163000", printed)
        assert [line for line in printed.splitlines() if line.strip()] == shown, command
