"""hub.config.envfile: the env file beside servers.yaml, read literally, written so that it reads back exactly;
and load_config's `${VAR}` seeing it under the process environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.config import ConfigError, load_config
from hub.config.envfile import EnvFileError, env_file_path, format_env_line, parse_env_file


def test_lines_are_read_literally() -> None:
    text = (
        "# secrets\n\nA=plain value # not a comment\nexport B=two\n"
        'C="quoted \\"inside\\"\\nnext"\nD=\'single $X\'\nE=\n  F = spaced  \n'
    )
    assert parse_env_file(text) == {
        "A": "plain value # not a comment",
        "B": "two",
        "C": 'quoted "inside"\nnext',
        "D": "single $X",
        "E": "",
        "F": "spaced",
    }


@pytest.mark.parametrize(
    "value", ["ghp_abc", "a b c", " lead", "trail ", '"quoted"', "'single'", "two\nlines", "", "=x="]
)
def test_every_value_written_reads_back_the_same(value: str) -> None:
    assert parse_env_file(format_env_line("NAME", value) + "\n") == {"NAME": value}


def test_a_bad_line_is_named_without_its_value() -> None:
    with pytest.raises(EnvFileError, match=r"^servers\.env:2: not a NAME=value line$"):
        parse_env_file("A=1\nthis is ghp_secret\n", "servers.env")
    with pytest.raises(EnvFileError, match=r"servers\.env:1: a value in double quotes"):
        parse_env_file('A="unterminated\n', "servers.env")


def test_the_env_file_of_a_configuration() -> None:
    assert env_file_path(Path("/x/servers.yaml")) == Path("/x/servers.env")
    assert env_file_path(Path("team.yml")) == Path("team.env")


def test_load_config_expands_from_the_env_file_and_the_environment_wins(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text("servers:\n  s:\n    command: x\n    env:\n      TOKEN: ${S_TOKEN}\n      MODE: ${MODE:-dev}\n")
    (tmp_path / "servers.env").write_text("S_TOKEN=from-file\nMODE=prod\n")
    assert load_config(config, environ={}).config.servers["s"].env == {"TOKEN": "from-file", "MODE": "prod"}
    environ = {"S_TOKEN": "from-shell"}
    assert load_config(config, environ=environ).config.servers["s"].env == {"TOKEN": "from-shell", "MODE": "prod"}


def test_a_broken_env_file_is_a_configuration_error(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text("servers: {}\n")
    (tmp_path / "servers.env").write_text("not a line\n")
    with pytest.raises(ConfigError, match=r"servers\.env:1: not a NAME=value line"):
        load_config(config, environ={})
