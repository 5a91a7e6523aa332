"""hub.platform.files: a file replaced in one step, its mode kept, nothing left behind on failure."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hub.platform.files import replace_file

posix_only = pytest.mark.skipif(os.name != "posix", reason="permission bits are POSIX's")


def test_a_new_file_is_written_with_its_directory(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "servers.yaml"
    replace_file(target, b"servers: {}\n")
    assert target.read_bytes() == b"servers: {}\n"
    assert [p.name for p in target.parent.iterdir()] == ["servers.yaml"]


@posix_only
def test_the_old_files_mode_is_kept_unless_one_is_given(tmp_path: Path) -> None:
    target = tmp_path / "tokens.json"
    target.write_bytes(b"old")
    target.chmod(0o640)
    replace_file(target, b"new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    replace_file(target, b"newer", 0o600)
    assert (target.read_bytes(), stat.S_IMODE(target.stat().st_mode)) == (b"newer", 0o600)


@posix_only
def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "hub.lock"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        replace_file(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["hub.lock"]
