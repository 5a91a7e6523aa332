"""`hub add`'s command line: the server's own command line after `--`, whatever options stand before it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from hub.cli.add import _pairs, run_add_command, split_command
from hub.cli.parser import build_parser


def parse(argv: list[str]) -> argparse.Namespace:
    words, command_line = split_command(argv)
    args = build_parser().parse_args(words)
    if command_line is not None:
        args.argv = command_line
    return args


def test_the_command_line_after_the_double_dash_is_the_servers() -> None:
    args = parse(["add", "pg", "--env", "A=1", "--", "npx", "-y", "pg", "--env", "x"])
    assert (args.name, args.env, args.argv) == ("pg", ["A=1"], ["npx", "-y", "pg", "--env", "x"])
    assert split_command(["list", "--", "x"]) == (["list", "--", "x"], None)
    assert split_command(["add", "n", "--url", "u"]) == (["add", "n", "--url", "u"], None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["add", "x"], "hub add NAME -- COMMAND [ARGS...], hub add NAME --url URL, or hub add --registry NAME"),
        (["add", "x", "--url", "https://u", "--", "cmd"], "give either `-- COMMAND [ARGS...]` or `--url URL`, not"),
        (["add", "x", "--header", "A=1", "--", "cmd"], "--header and --transport go with --url"),
        (["add", "--registry", "a/b", "--registry-file", "f.json"], "not both"),
        (["add", "--registry", "a/b", "--url", "https://u"], "take no command, --url"),
        (["add", "--", "cmd"], "name the server"),
    ],
)
def test_contradictions_are_refused_before_anything_is_read(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = parse([*argv, "-c", str(tmp_path / "servers.yaml")] if "--" not in argv else argv)
    args.config = str(tmp_path / "servers.yaml")
    assert run_add_command(args) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "servers.yaml").exists()


def test_pairs_take_both_header_spellings() -> None:
    assert _pairs(["Authorization: Bearer abc==", "X-Key=k=1"], "--header") == {
        "Authorization": "Bearer abc==",
        "X-Key": "k=1",
    }
    assert _pairs(["URL=http://x:1/y"], "--env") == {"URL": "http://x:1/y"}
    with pytest.raises(SystemExit):
        _pairs(["nothing"], "--env")
