"""The third-party servers of the differential suite, each with its script (harness.ServerSpec).

Pinned: the npm servers in tests/npm/package.json, the Python ones in pyproject.toml's `[test]` extra.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types

from tests.differential.harness import Outcome, ServerSpec, Side, read
from tests.support.paths import REPO

NPM_BIN = REPO / "tests" / "npm" / "node_modules" / ".bin"


def npm_missing(program: str) -> str | None:
    if (NPM_BIN / program).exists():
        return None
    return f"{NPM_BIN / program} is missing: run `npm ci --prefix tests/npm` (as .ci/run does)"


def python_missing(module: str) -> str | None:
    found = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, check=False)
    return None if found.returncode == 0 else f"{module} is not installed: pip install -e '.[test]'"


def npm_entry(program: str, *args: str, **env: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": str(NPM_BIN / program), "args": list(args)}
    if env:
        entry["env"] = env
    return entry


# mcp-server-time ---------------------------------------------------------------------------------------------------

TIME = ServerSpec(
    name="time",
    entry=lambda workspace: {"command": sys.executable, "args": ["-m", "mcp_server_time"]},
    missing=lambda: python_missing("mcp_server_time"),
    calls=lambda workspace: [
        ("get_current_time", {"timezone": "Europe/Paris"}),
        ("get_current_time", {"timezone": "Not/AZone"}),
        ("convert_time", {"source_timezone": "Europe/Paris", "time": "12:30", "target_timezone": "Asia/Tokyo"}),
        ("convert_time", {"source_timezone": "Etc/UTC", "time": "25:99", "target_timezone": "Asia/Tokyo"}),
    ],
    # The clock: get_current_time answers the time of the call (to the second), and convert_time today's date.
    volatile=[
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", "<datetime>"),
        (r'"day_of_week\\?": \\?"\w+', '"day_of_week": "<day>'),
    ],
)


# @modelcontextprotocol/server-memory --------------------------------------------------------------------------------


def _memory_reset(workspace: Path) -> None:
    (workspace / "memory.jsonl").write_text("")


MEMORY = ServerSpec(
    name="memory",
    entry=lambda workspace: npm_entry("mcp-server-memory", MEMORY_FILE_PATH=str(workspace / "memory.jsonl")),
    missing=lambda: npm_missing("mcp-server-memory"),
    reset=_memory_reset,
    calls=lambda workspace: [
        ("read_graph", {}),
        (
            "create_entities",
            {
                "entities": [
                    {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]},
                    {"name": "Engine", "entityType": "machine", "observations": ["analytical"]},
                ]
            },
        ),
        ("create_relations", {"relations": [{"from": "Ada", "to": "Engine", "relationType": "programmed"}]}),
        ("add_observations", {"observations": [{"entityName": "Ada", "contents": ["born 1815", "née Byron"]}]}),
        ("add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}),
        ("search_nodes", {"query": "1815"}),
        ("open_nodes", {"names": ["Engine", "Missing"]}),
        ("read_graph", {}),
        ("delete_observations", {"deletions": [{"entityName": "Ada", "observations": ["née Byron"]}]}),
        ("delete_relations", {"relations": [{"from": "Ada", "to": "Engine", "relationType": "programmed"}]}),
        ("delete_entities", {"entityNames": ["Engine"]}),
        ("read_graph", {}),
    ],
)


# @modelcontextprotocol/server-filesystem ---------------------------------------------------------------------------

# A 1x1 PNG, for read_media_file.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201e2a4b1b50000000049454e44ae426082"
)
# Fixed times for the files the script finds, so that get_file_info reads the same on both runs; access times lie in
# the future, so that reading a file does not move them (relatime).
MTIME, ATIME = 1_767_225_600, 1_924_992_000


def _filesystem_reset(workspace: Path) -> None:
    for path in sorted(workspace.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (workspace / "docs").mkdir()
    (workspace / "notes.txt").write_text("alpha\nbeta\ngamma\ndelta\n")
    (workspace / "docs" / "guide.md").write_text("# Guide\n\nRead me.\n")
    (workspace / "pixel.png").write_bytes(PNG)
    for path in [workspace, *workspace.rglob("*")]:
        os.utime(path, (ATIME, MTIME))


def _filesystem_calls(workspace: Path) -> list[tuple[str, dict[str, Any]]]:
    w = str(workspace)
    return [
        ("list_allowed_directories", {}),
        ("list_directory", {"path": w}),
        ("list_directory_with_sizes", {"path": w, "sortBy": "size"}),
        ("directory_tree", {"path": w}),
        ("read_file", {"path": f"{w}/notes.txt"}),
        ("read_text_file", {"path": f"{w}/notes.txt", "head": 2}),
        ("read_text_file", {"path": f"{w}/notes.txt", "tail": 1}),
        ("read_media_file", {"path": f"{w}/pixel.png"}),
        ("read_multiple_files", {"paths": [f"{w}/notes.txt", f"{w}/docs/guide.md", f"{w}/missing.txt"]}),
        ("get_file_info", {"path": f"{w}/docs/guide.md"}),
        ("search_files", {"path": w, "pattern": "**/*.md"}),
        ("write_file", {"path": f"{w}/docs/new.txt", "content": "fresh\n"}),
        ("edit_file", {"path": f"{w}/notes.txt", "edits": [{"oldText": "beta", "newText": "BETA"}], "dryRun": True}),
        ("edit_file", {"path": f"{w}/notes.txt", "edits": [{"oldText": "gamma", "newText": "GAMMA"}]}),
        ("create_directory", {"path": f"{w}/made/deep"}),
        ("move_file", {"source": f"{w}/docs/new.txt", "destination": f"{w}/made/deep/moved.txt"}),
        ("read_text_file", {"path": f"{w}/made/deep/moved.txt"}),
        ("read_text_file", {"path": "/etc/hostname"}),
    ]


async def _allowed(side: Side, directory: Path) -> Outcome:
    """list_allowed_directories until it names `directory` alone (the server re-reads the host's roots after
    notifications/roots/list_changed, in its own time): the last answer after at most 10 s."""
    answer: Outcome = None
    with anyio.move_on_after(10):
        while True:
            answer = await side.call("list_allowed_directories", {})
            text = answer.get("result", {}).get("content", [{}])[0].get("text", "")
            if text.splitlines()[1:] == [str(directory)]:
                return answer
            await anyio.sleep(0.1)
    return answer


async def _roots_changed(side: Side) -> bool:
    """Tell the server the host's roots changed; whether it asked for them within 10 s. The script waits for that
    before its next call: the race between a call in flight and the server's roots/list is
    tests/integration/test_roots.py's (decision 017); this suite compares answers."""
    asked = side.host.roots_asked
    await side.client.send_roots_list_changed()
    with contextlib.suppress(TimeoutError):
        await side.host.wait_for(lambda: side.host.roots_asked > asked, "roots/list", limit=10)
    return side.host.roots_asked > asked


async def _filesystem_roots(side: Side) -> Outcome:
    """The host's roots change (to the workspace's docs/, then back): the server asks for them again and serves
    the new directories."""
    narrowed = side.workspace / "docs"
    side.host.root = narrowed.as_uri()
    try:
        asked = await _roots_changed(side)
        return {"server asked for roots": asked, "after the change": await _allowed(side, narrowed)}
    finally:
        side.host.root = side.workspace.as_uri()
        await _roots_changed(side)
        await _allowed(side, side.workspace)


FILESYSTEM = ServerSpec(
    name="filesystem",
    entry=lambda workspace: npm_entry("mcp-server-filesystem", str(workspace)),
    missing=lambda: npm_missing("mcp-server-filesystem"),
    reset=_filesystem_reset,
    features={"roots": _filesystem_roots},
    handshake_only=frozenset({"roots"}),
    calls=_filesystem_calls,
    # get_file_info: a file's birth time cannot be set, and files the script writes get the time of the call.
    volatile=[(r"(created|modified|accessed): [^\\\"]+", r"\1: <time>"), (r'"(birthtime|mtime|atime)[^,}]+', "<t>")],
)


# mcp-server-git ----------------------------------------------------------------------------------------------------

# The dates of every commit, the script's own included (GitPython reads them from the server's environment): the
# same commits get the same ids on both runs.
GIT_DATES = {"GIT_AUTHOR_DATE": "2026-01-01T12:00:00+00:00", "GIT_COMMITTER_DATE": "2026-01-01T12:00:00+00:00"}


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, **GIT_DATES, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def _git_reset(workspace: Path) -> None:
    repo = workspace / "repo"
    if repo.exists():
        subprocess.run(["rm", "-rf", str(repo)], check=True)
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "Differential")
    _git(repo, "config", "user.email", "differential@example.com")
    (repo / "README.md").write_text("hello\n")
    _git(repo, "add", "README.md")
    _git(repo, "commit", "-q", "-m", "first")
    (repo / "README.md").write_text("hello\nworld\n")
    _git(repo, "commit", "-q", "-am", "second")
    (repo / "README.md").write_text("hello\nworld\nagain\n")
    (repo / "new.txt").write_text("new file\n")


def _git_calls(workspace: Path) -> list[tuple[str, dict[str, Any]]]:
    repo = str(workspace / "repo")
    return [
        ("git_status", {"repo_path": repo}),
        ("git_diff_unstaged", {"repo_path": repo}),
        ("git_diff", {"repo_path": repo, "target": "HEAD~1", "context_lines": 1}),
        ("git_add", {"repo_path": repo, "files": ["new.txt"]}),
        ("git_diff_staged", {"repo_path": repo}),
        ("git_reset", {"repo_path": repo}),
        ("git_add", {"repo_path": repo, "files": ["new.txt", "README.md"]}),
        ("git_commit", {"repo_path": repo, "message": "third"}),
        ("git_log", {"repo_path": repo, "max_count": 5}),
        ("git_create_branch", {"repo_path": repo, "branch_name": "feature"}),
        ("git_checkout", {"repo_path": repo, "branch_name": "feature"}),
        ("git_branch", {"repo_path": repo, "branch_type": "local"}),
        ("git_show", {"repo_path": repo, "revision": "HEAD~1"}),
        ("git_show", {"repo_path": repo, "revision": "HEAD:new.txt"}),
        ("git_checkout", {"repo_path": repo, "branch_name": "no-such-branch"}),
    ]


GIT = ServerSpec(
    name="git",
    entry=lambda workspace: {
        "command": sys.executable,
        "args": ["-m", "mcp_server_git", "--repository", str(workspace / "repo")],
        "env": {**GIT_DATES, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"},
    },
    missing=lambda: python_missing("mcp_server_git"),
    reset=_git_reset,
    calls=_git_calls,
)


# An MCP Apps example: @modelcontextprotocol/server-basic-vanillajs (ext-apps) ---------------------------------------


async def _apps(side: Side) -> Outcome:
    """What a host that renders apps does: read the UI resource the tool advertises, by the URI it advertises; then
    the app's own call to its server's tool, by the server's name for it (the host relays it as the app made it)."""
    listed = (await side.list_all("tools/list"))["result"]["tools"]
    (tool,) = [t for t in listed if t["name"] == side.tool("get-time")]
    meta = tool["_meta"]
    read_ui = [await read(side, uri) for uri in (meta["ui"]["resourceUri"], meta["ui/resourceUri"])]
    own_call = await side.send(types.CallToolRequest(params=types.CallToolRequestParams(name="get-time", arguments={})))
    return {"resourceUri": read_ui[0], "ui/resourceUri": read_ui[1], "app's own tools/call get-time": own_call}


# The clock, as servers answer it (ISO 8601).
ISO_TIME = (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "<datetime>")

APPS = ServerSpec(
    name="apps",
    entry=lambda workspace: npm_entry("mcp-server-basic-vanillajs", "--stdio"),
    missing=lambda: npm_missing("mcp-server-basic-vanillajs"),
    calls=lambda workspace: [("get-time", {})],
    features={"apps": _apps},
    volatile=[ISO_TIME],
)
