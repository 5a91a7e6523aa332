"""hub/early_launch.py reads a warm start's stdio children from servers.yaml without the config's model.

A child it starts is adopted only if the loaded config starts it the same way, so the reader must agree with the
model on every file the model accepts; where it does not understand a file, it must leave the child out rather
than start something the config would not.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hub.config import load_config
from hub.early_launch import read_launches
from hub.spawn import BASE_ENV, Launch, launch_for

ENVIRON = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "TOKEN": "t0k3n", "REGION": "", "EXTRA": "x", "SECRET": "s"}

AGREE = {
    "plain": """
servers:
  one:
    command: python3
    args: [-m, mod, --flag]
    cwd: /tmp
""",
    "expanded": """
servers:
  api:
    command: ${PY:-python3}
    args: ["--token=${TOKEN}", "--region=${REGION:-eu}", "cost: $$5"]
    env: {API_TOKEN: "${TOKEN}", LITERAL: plain}
    inherit_env: [EXTRA, MISSING]
""",
    "every kind of server": """
hub: {log_arguments: true}
servers:
  resting: {command: python3, enabled: false}
  busy: {command: python3, enabled: yes, prefix: b2, timeout: 3}
  web: {url: "http://127.0.0.1:9/mcp", headers: {Authorization: "Bearer ${TOKEN}"}}
  filtered: {command: /bin/sh, args: [-c, "exit 0"], tools: {allow: ["a*"]}}
""",
    "merge keys": """
servers:
  a: &base
    command: python3
    args: [-m, shared]
  b:
    <<: *base
    args: [-m, other]
""",
    "nothing": "servers: {}\n",
}


def model_launches(path: Path) -> dict[str, Launch]:
    loaded = load_config(path, ENVIRON)
    servers = loaded.config.servers.items()
    return {name: launch_for(s, ENVIRON) for name, s in servers if s.enabled and s.kind == "stdio"}


@pytest.mark.parametrize("text", AGREE.values(), ids=AGREE.keys())
def test_the_reader_starts_what_the_loaded_config_starts(tmp_path: Path, text: str) -> None:
    path = tmp_path / "servers.yaml"
    path.write_text(text)
    assert read_launches(path, ENVIRON) == model_launches(path)


def test_expansion_and_environment_are_the_children_s_own(tmp_path: Path) -> None:
    path = tmp_path / "servers.yaml"
    path.write_text(AGREE["expanded"])
    (api,) = read_launches(path, ENVIRON).values()
    assert api.argv[1:] == ("--token=t0k3n", "--region=eu", "cost: $5")
    # BASE_ENV names the hub has, the inherited ones it has, then `env`: nothing else of the hub's (SECRET).
    assert api.env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/u",
        "EXTRA": "x",
        "API_TOKEN": "t0k3n",
        "LITERAL": "plain",
    }
    assert set(api.env) - {"EXTRA", "API_TOKEN", "LITERAL"} <= set(BASE_ENV)


def test_what_the_reader_does_not_understand_starts_after_the_load(tmp_path: Path) -> None:
    path = tmp_path / "servers.yaml"
    path.write_text(
        """
servers:
  unset: {command: python3, args: ["${NOT_SET}"]}
  numbers: {command: python3, env: {PORT: 8080}}
  odd: {command: [python3]}
  fine: {command: python3}
"""
    )
    assert set(read_launches(path, ENVIRON)) == {"fine"}


@pytest.mark.parametrize("text", ["servers: [a, b]\n", "- not a mapping\n", "servers: {a: {command: x}\n", "\x00"])
def test_a_file_it_cannot_read_starts_nothing(tmp_path: Path, text: str) -> None:
    path = tmp_path / "servers.yaml"
    path.write_text(text)
    assert read_launches(path, ENVIRON) == {}
    assert read_launches(tmp_path / "missing.yaml", ENVIRON) == {}


def test_a_command_installed_next_to_the_hub_is_found_as_the_config_finds_it(tmp_path: Path) -> None:
    # The venv's bin is not on this PATH; both find the interpreter's neighbour the same way (spawn.resolve_command).
    name = Path(sys.executable).name
    path = tmp_path / "servers.yaml"
    path.write_text(f"servers:\n  here: {{command: {name}}}\n")
    environ = {**ENVIRON, "PATH": str(tmp_path)}
    loaded = load_config(path, environ)
    assert read_launches(path, environ)["here"] == launch_for(loaded.config.servers["here"], environ)
