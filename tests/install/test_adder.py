"""hub add / hub remove edits: comments stay, the loader checks the result, secrets go to the env file."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.install.adder import plan_add, plan_remove, write_edit
from hub.install.edit import EditError

CONFIG = """\
# team servers
servers:
  # the clock
  time:
    command: mcp-server-time   # from PyPI
  # notes
  notes:
    command: notes-mcp
"""


def test_add_then_remove_keeps_every_other_comment(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text(CONFIG)
    write_edit(plan_add(config, "gh", {"url": "https://x.example/mcp", "headers": {"X-Key": "k-123"}}, {}, "gh"))
    text = config.read_text()
    assert text.startswith(CONFIG) and "X-Key: ${GH_X_KEY}" in text
    assert (tmp_path / "servers.env").read_text().endswith("GH_X_KEY=k-123\n")
    write_edit(plan_remove(config, "gh"))
    assert config.read_text() == CONFIG
    write_edit(plan_remove(config, "notes"))
    assert "# the clock" in config.read_text() and "# from PyPI" in config.read_text()


def test_placeholders_are_left_to_fill_unless_known(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text(CONFIG)
    child = {"command": "x", "env": {"A_KEY": "${A_KEY}", "B_KEY": "${B_KEY}"}}
    edit = plan_add(config, "x", child, {"B_KEY": "from the shell"}, "x", {"A_KEY": "the A key", "B_KEY": "b"})
    assert edit.placeholders == {"A_KEY": "the A key"}
    assert edit.env is not None and "# fill in: the A key\nA_KEY=\n" in edit.env.after


def test_a_refused_edit_raises_before_writing(tmp_path: Path) -> None:
    config = tmp_path / "servers.yaml"
    config.write_text(CONFIG)
    with pytest.raises(EditError, match="already has a server named 'time'"):
        plan_add(config, "time", {"command": "y"}, {}, "")
    with pytest.raises(EditError, match="would not make a valid configuration"):
        plan_add(config, "y", {"command": "y", "transport": "sse"}, {}, "")
    with pytest.raises(EditError, match=r"has no server named 'z' \(it has: time, notes\)"):
        plan_remove(config, "z")
    assert config.read_text() == CONFIG
