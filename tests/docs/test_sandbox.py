"""docs/sandbox.md: every `$ ...` command of its text blocks runs (with bash, in docs/examples/sandbox) and prints
what the page shows. What changes between runs is left out: the start-up times, the column widths, and the file
named on the last line; each server's name, state and what follows its RESTARTS column must match, and error lines
exactly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.integration

PAGE = REPO / "docs" / "sandbox.md"
EXAMPLES = REPO / "docs" / "examples" / "sandbox"
RUN_LIMIT = 180


def commands() -> list[tuple[str, list[str]]]:
    """(command, the lines shown after it) of each text block."""
    found: list[tuple[str, list[str]]] = []
    inside = False
    for line in PAGE.read_text().splitlines():
        if line.startswith("```"):
            inside = line == "```text"
            continue
        if inside and line.startswith("$ "):
            found.append((line[2:], []))
        elif inside and found:
            found[-1][1].append(line)
    return found


def tail(line: str, header: str) -> str:
    """A table row from the SANDBOX column on, spacing made single."""
    return " ".join(line[header.index("SANDBOX") :].split())


def test_the_page_has_commands() -> None:
    assert len(commands()) >= 3


@pytest.mark.parametrize(("command", "shown"), commands(), ids=[c for c, _ in commands()])
def test_each_command_in_the_sandbox_page_prints_what_it_shows(command: str, shown: list[str]) -> None:
    if not sys.platform.startswith("linux") or shutil.which("bwrap") is None:
        pytest.skip("the page's output is bubblewrap's (Linux, bwrap installed)")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-c", command], cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=RUN_LIMIT, check=False
    )
    printed = done.stdout.splitlines() if done.stdout else done.stderr.splitlines()
    if not shown[0].startswith("SERVER"):
        assert done.returncode == 2 and printed == shown, done.stdout + done.stderr
        return
    assert done.returncode == (0 if shown[-1].startswith(f"{len(shown) - 2}/") else 1), done.stdout + done.stderr
    assert printed[0].split() == shown[0].split()
    assert printed[-1].startswith(shown[-1] + " ("), printed[-1]
    assert len(printed) == len(shown)
    for got, want in zip(printed[1:-1], shown[1:-1], strict=True):
        assert got.split()[:2] == want.split()[:2], (got, want)
        assert tail(got, printed[0]) == tail(want, shown[0]), (got, want)
