"""When `hub` starts the stdio children before importing the SDK (hub/cli.py `_start_children_first`)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from hub import cli
from hub.config import load_config


def decide(
    tmp_path: Path, children: int, *, command: str = "serve", wait: float = 5.0, first_start: bool = False
) -> bool:
    servers = "".join(f"  s{i}:\n    command: python3\n" for i in range(children))
    path = tmp_path / "servers.yaml"
    path.write_text(f"hub:\n  startup_listing_wait: {wait}\nservers:\n{servers}")
    return cli._start_children_first(argparse.Namespace(command=command), load_config(path), None, first_start)


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_usable_cpus", lambda: 2)


@pytest.mark.usefixtures("two_cores")
def test_one_shot_commands_always_start_children_first(tmp_path: Path) -> None:
    assert decide(tmp_path, 20, command="check")


@pytest.mark.usefixtures("two_cores")
def test_with_the_listing_wait_a_core_for_each_child_is_enough(tmp_path: Path) -> None:
    assert decide(tmp_path, 2)  # the default servers.yaml on 2 cores
    assert not decide(tmp_path, 3)  # the host's initialize would wait for their start-up CPU


@pytest.mark.usefixtures("two_cores")
def test_without_the_listing_wait_the_import_keeps_a_core_of_its_own(tmp_path: Path) -> None:
    assert decide(tmp_path, 1, wait=0)
    assert not decide(tmp_path, 2, wait=0)


@pytest.mark.usefixtures("two_cores")
def test_a_first_start_starts_up_to_two_children_per_core_and_one_more(tmp_path: Path) -> None:
    """Its early front answers initialize at once and lists the children's tools (hub/first_start.py)."""
    assert decide(tmp_path, 5, first_start=True)
    assert not decide(tmp_path, 6, first_start=True)  # every answer the SDK gives would wait for their CPU
