"""`include:`: a team file and a personal file merged, by the rules of hub.config.include."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.config import ConfigError, load_config

TEAM = """\
servers:
  icinga:
    command: icinga-mcp
    env: {ICINGA_URL: https://icinga.example}
  postgres:
    command: postgres-mcp
    args: [--access-mode=restricted]
    overrides:
      query: {fixed_args: {database: ops_ro}}
      "list_*": {annotations: {readOnlyHint: true}}
  legacy:
    command: legacy-mcp
policies:
  - {name: oncall, groups: [oncall], allow: ["icinga_*"]}
  - {name: dba, groups: [dba], allow: ["*"]}
"""
MINE = """\
include: [team/ops.yaml, servers.d/*.yaml]
servers:
  postgres:
    args: [--access-mode=unrestricted]   # one key of a team server
    overrides:
      query: {description: {append: "Mine."}}
  legacy:
    enabled: false                       # a team server I do not run
  notes:
    command: notes-mcp                   # my own
policies:
  - {name: oncall, groups: [oncall], allow: ["icinga_*", "postgres_*"]}
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / "servers.yaml"


def test_a_personal_file_adds_overrides_one_key_and_disables_a_team_server(tmp_path: Path) -> None:
    loaded = load_config(write(tmp_path, {"team/ops.yaml": TEAM, "servers.yaml": MINE}), {})
    servers = loaded.config.servers
    assert list(servers) == ["icinga", "postgres", "legacy", "notes"], "team servers first, in the team's order"
    assert servers["postgres"].command == "postgres-mcp" and servers["postgres"].args == ("--access-mode=unrestricted",)
    assert not servers["legacy"].enabled and servers["notes"].command == "notes-mcp"
    assert servers["icinga"].env == {"ICINGA_URL": "https://icinga.example"}
    overrides = servers["postgres"].overrides
    assert set(overrides) == {"query", "list_*"}, "overrides merge by tool name"
    assert overrides["query"].fixed_args == {} and overrides["query"].description is not None, "the local one wins"
    assert [(r.name, r.allow) for r in loaded.config.policies] == [
        ("oncall", ("icinga_*", "postgres_*")),
        ("dba", ("*",)),
    ], "a rule declared again replaces the team's in its place"
    team, mine = (tmp_path / "team/ops.yaml").resolve(), (tmp_path / "servers.yaml").resolve()
    assert loaded.origins["postgres"] == (team, {"args": mine, "overrides": mine})
    assert loaded.origins["legacy"] == (team, {"enabled": mine})
    assert loaded.origins["notes"] == (mine, {}) and loaded.origins["icinga"] == (team, {})
    assert set(loaded.files) == {team, mine} and loaded.globs


def test_a_glob_picks_up_every_file_and_may_match_none(tmp_path: Path) -> None:
    files = {"team/ops.yaml": TEAM, "servers.yaml": MINE, "servers.d/b.yaml": "servers:\n  b:\n    command: b\n",
             "servers.d/a.yaml": "servers:\n  a:\n    command: a\n"}  # fmt: skip
    assert list(load_config(write(tmp_path, files), {}).config.servers)[-3:] == ["a", "b", "notes"]
    bare = write(tmp_path / "bare", {"servers.yaml": "include: [none.d/*.yaml]\nservers: {}\n"})
    assert load_config(bare, {}).config.servers == {}


def test_a_missing_include_and_a_cycle_name_the_chain(tmp_path: Path) -> None:
    config = write(
        tmp_path, {"servers.yaml": "include: [team.yaml]\nservers: {}\n", "team.yaml": "include: [gone.yaml]\n"}
    )
    with pytest.raises(
        ConfigError, match=r"team.yaml: included file 'gone.yaml' does not exist .*servers.yaml -> .*team.yaml"
    ):
        load_config(config, {})
    (tmp_path / "team.yaml").write_text("include: [servers.yaml]\nservers: {}\n")
    with pytest.raises(ConfigError, match=r"include cycle: .*servers.yaml -> .*team.yaml -> .*servers.yaml"):
        load_config(config, {})


def test_an_error_in_an_included_file_names_that_file_and_line(tmp_path: Path) -> None:
    files = {"servers.yaml": "include: [team.yaml]\nservers: {}\n", "team.yaml": "servers:\n  a:\n    comand: x\n"}
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, files), {})
    assert f"{(tmp_path / 'team.yaml').resolve()}:3: servers.a.comand: unknown key 'comand'" in str(raised.value)
