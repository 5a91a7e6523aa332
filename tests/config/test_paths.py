"""Where servers.yaml is found: the one rule of hub.config.paths that every command and `hub install` follow."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hub.config.paths import DEFAULT_CONFIG, config_path


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A working directory and a user config directory, both empty."""
    cwd, user = tmp_path / "cwd", tmp_path / "xdg"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user))
    monkeypatch.setattr("platformdirs.user_config_dir", lambda *a, **k: str(user / "hub"))
    return cwd, user / "hub"


def test_a_named_file_is_taken_as_it_is_even_when_absent(places: tuple[Path, Path]) -> None:
    assert config_path("elsewhere.yaml") == ("elsewhere.yaml", None)


def test_the_working_directory_comes_before_the_user_config_directory(places: tuple[Path, Path]) -> None:
    cwd, user = places
    user.mkdir(parents=True)
    (user / DEFAULT_CONFIG).write_text("servers: {}\n")
    assert config_path(None) == (os.path.join(str(user), DEFAULT_CONFIG), None)
    (cwd / DEFAULT_CONFIG).write_text("servers: {}\n")
    assert config_path(None) == (DEFAULT_CONFIG, None)


def test_none_found_names_both_places_and_the_user_one_is_the_path(places: tuple[Path, Path]) -> None:
    _, user = places
    path, missing = config_path(None)
    assert path == os.path.join(str(user), DEFAULT_CONFIG)
    assert missing is not None and f"neither ./{DEFAULT_CONFIG} nor {path} exists" in missing
