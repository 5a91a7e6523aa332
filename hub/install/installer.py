"""`hub install`: the hub's entry in a host's config, added, updated, removed, restored and reported on.

A change is planned (`plan`: the file's text before and after, or the commands of the host's own CLI), then carried
out (`apply`: a backup, then an atomic write or the commands), so `--dry-run` shows exactly what `apply` does; a plan
that changes nothing writes and backs up nothing. Claude Code rewrites `~/.claude.json` while it runs, so when its
`claude` command is on PATH the change is made with `claude mcp add|remove --scope S` (the file is still read to
tell whether anything changes, and backed up first).
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from hub.install.clients import CLIENTS, SCOPES, Client, Paths, Scope, runs_hub
from hub.install.edit import EditError, backup, backups, open_servers, read_text, unified_diff, write_atomic

Runner = Callable[[list[str]], int]  # runs a command line, its output going where the hub's goes; its exit status
COMMAND_SECONDS = 60.0  # a host's own command (`claude mcp add`) must finish within this


def run_command(argv: list[str]) -> int:
    try:
        return subprocess.run(argv, check=False, timeout=COMMAND_SECONDS).returncode
    except subprocess.TimeoutExpired:
        print(f"hub: `{shlex.join(argv)}` did not finish within {COMMAND_SECONDS:g}s", file=sys.stderr)
        return 124  # what timeout(1) exits with


@dataclass(frozen=True)
class Target:
    """A host's config file and how its servers are written there."""

    label: str  # the client's name, or the file's path for `hub import PATH`
    file: Path
    key: tuple[str, ...]
    toml: bool
    entry: Callable[[list[str]], dict[str, Any]]
    cli: str | None = None  # the host's own command that edits the file (found on PATH), if it has one
    scope: Scope = "user"


def client_target(client: Client, paths: Paths, scope: Scope) -> Target:
    """The target of `client` in `scope`.

    Raises:
        ValueError: the client has no such scope.
    """
    cli = paths.which(client.cli) if client.cli else None
    return Target(client.name, client.file(paths, scope), client.key, client.toml, client.entry, cli, scope)


@dataclass
class Change:
    """What a command does to one file: its text before and after, or the host CLI's commands that do it."""

    target: Target
    summary: str
    before: str | None
    after: str
    commands: list[list[str]] = field(default_factory=list)
    backup: Path | None = None

    @property
    def changes(self) -> bool:
        return bool(self.commands) or (self.before or "") != self.after

    def diff(self) -> str:
        return unified_diff(self.target.file, self.before, self.after)


def plan(target: Target, name: str, command: list[str] | None, remove: Sequence[str] = ()) -> Change:
    """Take out the entries `remove`, then (when `command` is given) make `name` run `command`.

    Raises:
        EditError: the file cannot be read or parsed.
    """
    before = read_text(target.file)
    document = open_servers(before, target.key, target.toml)
    try:
        current = document.entries()
        gone = [r for r in remove if r in current and (command is None or r != name)]
        for entry_name in gone:
            document.remove_entry(entry_name)
        if command is not None:
            document.set_entry(name, target.entry(command))
    except EditError as exc:
        raise EditError(f"{target.file}: {exc}") from None
    changed = (before or "") != document.text
    change = Change(target, _summary(name, command, current, gone, changed), before, document.text)
    if target.cli is not None and change.changes:  # `claude mcp remove|add` rather than a write
        cli_remove = [target.cli, "mcp", "remove", "--scope", target.scope]
        change.commands = [[*cli_remove, entry_name] for entry_name in gone]
        if command is not None and current.get(name) != document.entries().get(name):
            if name in current:
                change.commands.append([*cli_remove, name])
            change.commands.append([target.cli, "mcp", "add", "--scope", target.scope, name, "--", *command])
    return change


def _summary(name: str, command: list[str] | None, current: dict[str, Any], gone: list[str], changed: bool) -> str:
    if command is None:
        return f"removed {name!r}" if name in gone else f"no {name!r} entry"
    if gone:
        return f"replaced {', '.join(repr(g) for g in gone)} with {name!r}"
    if not changed:
        return f"{name!r} is up to date"
    return f"updated {name!r}" if name in current else f"added {name!r}"


def uninstall_plan(target: Target, name: str) -> Change:
    """`plan` taking the entry `name` out and nothing else (raising what `plan` raises)."""
    return plan(target, name, None, [name])


def apply(change: Change, now: datetime, run: Runner = run_command) -> Change:
    """Carry the change out: back the file up, then write it (or run the host CLI's commands). Nothing when it
    changes nothing.

    Raises:
        EditError: the backup, the write or a command failed.
    """
    if not change.changes:
        return change
    change.backup = backup(change.target.file, now)
    if not change.commands:
        write_atomic(change.target.file, change.after)
    for argv in change.commands:
        status = run(argv)
        if status != 0:
            raise EditError(f"`{shlex.join(argv)}` exited with status {status}")
    return change


def restore_plan(target: Target) -> tuple[Path, Change]:
    """The most recent backup of the target's file, and the change that puts it back byte for byte.

    Raises:
        EditError: there is no backup.
    """
    found = backups(target.file)
    if not found:
        raise EditError(f"{target.file}: no backup to restore (hub install writes {target.file.name}.bak-<time>)")
    latest = found[-1]
    text = latest.read_bytes().decode("utf-8", errors="surrogateescape")
    before = target.file.read_bytes().decode("utf-8", errors="surrogateescape") if target.file.exists() else None
    return latest, Change(target, f"restored from {latest.name}", before, text)


def restore(latest: Path, change: Change) -> None:
    """Put the backup `latest` back, byte for byte, in one step.

    Raises:
        EditError: it cannot be written.
    """
    if change.changes:
        write_atomic(change.target.file, latest.read_bytes())


@dataclass(frozen=True)
class Installed:
    """A row of `hub install --status`: one client's file, and the hub entry found in it (if any)."""

    client: str
    scope: Scope
    file: Path
    state: str  # installed, drift, not installed, no file, unreadable
    name: str = ""
    command: tuple[str, ...] = ()
    detail: str = ""


def status(paths: Paths, name: str, expected: list[str]) -> list[Installed]:
    """Every client's user file (and project file, where one exists), and the hub entries in them: those named
    `name` and any other that runs a hub; `drift` when one runs something else than `expected`."""
    rows: list[Installed] = []
    for client in CLIENTS.values():
        for scope in SCOPES:
            if scope == "project" and (client.project_file is None or not client.file(paths, scope).exists()):
                continue
            rows.extend(_rows(client, scope, client.file(paths, scope), name, expected))
    return rows


def _rows(client: Client, scope: Scope, file: Path, name: str, expected: list[str]) -> list[Installed]:
    try:
        text = read_text(file)
        entries = {} if text is None else open_servers(text, client.key, client.toml).entries()
    except EditError as exc:
        return [Installed(client.name, scope, file, "unreadable", detail=str(exc))]
    if text is None:
        return [Installed(client.name, scope, file, "no file")]
    hubs = {n: e for n, e in entries.items() if n == name or runs_hub(e)}
    if not hubs:
        return [Installed(client.name, scope, file, "not installed")]
    rows = []
    for entry_name, entry in hubs.items():
        actual = [str(entry.get("command", "")), *(str(a) for a in entry.get("args") or [])]
        remote = _remote(entry, actual)  # a team hub at a URL (`hub install --url`): nothing local to drift from
        detail = remote if remote is not None else drift(actual, expected)
        state = "remote" if remote is not None else "drift" if detail else "installed"
        rows.append(Installed(client.name, scope, file, state, entry_name, tuple(actual), detail or ""))
    return rows


def _remote(entry: Mapping[str, Any], command: list[str]) -> str | None:
    """The URL of a hub entry that reaches a team hub: a host's own HTTP entry, or a `hub connect URL` command."""
    url = next((entry[key] for key in ("url", "serverUrl") if isinstance(entry.get(key), str)), None)
    if url is not None:
        return str(url)
    if "connect" in command[1:-1]:
        return command[command.index("connect", 1) + 1]
    return None


def drift(actual: list[str], expected: list[str]) -> str | None:
    """How a hub entry's command line differs from what `hub install` would write now (None: it does not)."""
    if actual == expected:
        return None
    serve = expected.index("serve") if "serve" in expected else len(expected)
    here = actual.index("serve") if "serve" in actual else len(actual)
    parts = []
    if actual[:here] != expected[:serve]:
        parts.append(f"runs {shlex.join(actual[:here]) or 'nothing'}, not {shlex.join(expected[:serve])}")
    if _config(actual) != _config(expected):
        parts.append(f"serves {_config(actual)}, not {_config(expected)}")
    return "; ".join(parts) or f"runs `{shlex.join(actual)}`, not `{shlex.join(expected)}`"


def _config(command: list[str]) -> str | None:
    """The `--config` a hub's command line passes, if any."""
    if "--config" not in command[:-1]:
        return None
    return command[command.index("--config") + 1]
