"""The commands the docs show are run, and their output compared with what the docs say.

- docs/configuration.md, "Errors": every `$ hub check -c FILE` runs on docs/examples/config/FILE and must print
  exactly the lines shown.
- docs/cli.md and README.md: `hub check`, `hub list` and `hub call` on the default servers.yaml. Their output holds
  times and dates, so what must match is what does not change between runs: each server's row (name, state, tool
  count), the tool column of `hub list`, and the error lines and exit status of the failing calls.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

EXAMPLES = REPO / "docs" / "examples" / "config"
HUB = [sys.executable, "-m", "hub"]
RUN_LIMIT = 120


def blocks(page: Path) -> list[list[str]]:
    """The ```text blocks of a page, as lines."""
    found, current = [], None
    for line in page.read_text().splitlines():
        if current is None and line.startswith("```text"):
            current = []
        elif current is not None and line.startswith("```"):
            found.append(current)
            current = None
        elif current is not None:
            current.append(line)
    return found


def commands(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(command, the lines it printed) for each `$ ...` line of a block; a trailing `# comment` is dropped."""
    out: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            out.append((re.sub(r"\s+#.*$", "", line[2:]).strip(), []))
        elif out and line.strip():
            out[-1][1].append(line)
    return out


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    assert argv[0] == "hub", command
    env = {k: v for k, v in os.environ.items() if k != "SEARCH_TOKEN"}
    env["HUB_GIT_REPOSITORY"] = str(REPO)
    return subprocess.run(
        [*HUB, *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_LIMIT, check=False
    )


def error_examples() -> list[tuple[str, list[str]]]:
    page = REPO / "docs" / "configuration.md"
    found = [c for block in blocks(page) for c in commands(block) if c[0].startswith("hub check -c ")]
    assert len(found) >= 10, "the Errors section of docs/configuration.md lost its examples"
    return found


@pytest.mark.parametrize(("command", "printed"), error_examples(), ids=lambda v: v if isinstance(v, str) else "")
def test_each_configuration_error_in_the_docs_is_what_the_hub_prints(command: str, printed: list[str]) -> None:
    result = run(command, EXAMPLES)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == printed


def test_the_check_and_list_in_the_docs_show_the_default_servers_as_they_are() -> None:
    check = run("hub check", REPO)
    assert check.returncode == 0, check.stdout + check.stderr
    rows = {line.split()[0]: line.split()[1:3] for line in check.stdout.splitlines()[1:-1]}
    shown = {cmd: out for page in ("README.md", "docs/cli.md") for b in blocks(REPO / page) for cmd, out in commands(b)}
    documented = {line.split()[0]: line.split()[1:3] for line in shown["hub check"][1:-1]}
    assert rows == documented == {"time": ["ready", "2"], "git": ["ready", "12"]}
    listing = run("hub list", REPO)
    assert listing.returncode == 0, listing.stderr
    tools = [line.split()[:2] for line in listing.stdout.split("\n\n")[0].splitlines()]
    documented_tools = [line.split()[:2] for line in shown["hub list"] if line and not line.startswith("SERVER")][:11]
    assert tools == documented_tools
    exposed = [name for name, server in tools if server == "git"]
    assert "git_status" in exposed and not [n for n in exposed if n.startswith("git_git_")]  # docs/decisions/021


def test_a_tool_named_with_its_prefix_is_called_by_that_name_and_reaches_the_server() -> None:
    """mcp-server-git's own `git_status` is exposed as `git_status` (not `git_git_status`) and routed to it."""
    called = run(f'hub call git_status \'{{"repo_path": "{REPO}"}}\'', REPO)
    assert called.returncode == 0, called.stderr
    assert called.stdout.startswith("Repository status:"), called.stdout
    doubled = run(f'hub call git_git_status \'{{"repo_path": "{REPO}"}}\'', REPO)
    assert doubled.returncode == 1
    assert "Unknown tool: 'git_git_status'" in doubled.stderr


def test_always_prefix_gives_the_doubled_names_back(tmp_path: Path) -> None:
    """`hub.always_prefix: true` (docs/configuration.md) on the default servers: every git tool as before 021."""
    config = tmp_path / "servers.yaml"
    config.write_text((REPO / "servers.yaml").read_text() + "hub:\n  always_prefix: true\n")
    listing = run(f"hub list -c {config}", REPO)
    assert listing.returncode == 0, listing.stderr
    tools = [line.split()[:2] for line in listing.stdout.split("\n\n")[0].splitlines()[1:]]
    assert [name for name, server in tools if server == "git"][:2] == ["git_git_status", "git_git_diff_unstaged"]


CALLS = [
    ("hub call nope", 1, "hub: Unknown tool: 'nope' (code -32602)"),
    (
        'hub call time_get_current_time \'{"timezone":"Mars/Olympus"}\'',
        1,
        "Error executing tool get_current_time: Invalid timezone",
    ),
    (
        "hub call time_get_current_time '{}'",
        1,
        "hub: time_get_current_time: Error executing tool get_current_time: 1 valid",
    ),
    ("hub call time_get_current_time '{bad'", 2, "hub: arguments must be a JSON object: Expecting property name"),
    ('hub call git_commit \'{"repo_path":".","message":"x"}\'', 1, "hub: Unknown tool: 'git_commit'"),
]


@pytest.mark.parametrize(("command", "status", "start"), CALLS)
def test_the_failing_calls_in_the_docs_fail_as_shown(command: str, status: int, start: str) -> None:
    page = (REPO / "docs" / "cli.md").read_text()
    assert f"$ {command}" in page
    documented = page.split(f"$ {command}", 1)[1].splitlines()[1]
    assert documented.startswith(start) and f"exit {status}" in documented
    result = run(command, REPO)
    assert result.returncode == status
    assert (result.stdout + result.stderr).strip().startswith(start)
    assert re.sub(r"\s+#.*$", "", documented).strip() == (result.stdout + result.stderr).strip().splitlines()[0]
