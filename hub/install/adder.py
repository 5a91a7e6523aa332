"""`hub add` and `hub remove`: one server into or out of servers.yaml, edited in place.

The edit is `hub import`'s (hub.install.importer): servers.yaml's comments, order and quoting stay, the result is
validated before anything is written, and each file is replaced in one step; a running hub picks the change up.
Secrets of the new server (hub.install.secrets' rules) become `${VAR}`, their values go to the env file beside it;
a value nobody has given yet (a registry's secret) gets an empty `NAME=` line under a note saying what to fill in,
unless the environment already has the variable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hub.install.convert import Converted, hide_secrets
from hub.install.edit import EditError, read_text
from hub.install.importer import (
    FileChange,
    add_children,
    edit_servers,
    env_change,
    existing_children,
    gitignore_change,
    secret_store,
    validate_servers,
    write_changes,
)


@dataclass
class ServerEdit:
    """What `hub add` or `hub remove` writes: servers.yaml, and for an add the env file and the .gitignore."""

    name: str
    servers: FileChange
    env: FileChange | None = None
    gitignore: FileChange | None = None
    secrets: list[str] = field(default_factory=list)  # variables whose values went to the env file
    placeholders: dict[str, str] = field(default_factory=dict)  # variables to fill in -> what goes there
    notes: list[str] = field(default_factory=list)


def plan_add(
    into: Path,
    name: str,
    child: dict[str, Any],
    environment: Mapping[str, str],
    comment: str,
    placeholders: Mapping[str, str] | None = None,
) -> ServerEdit:
    """servers.yaml `into` with the server `name` added as `child`, its secrets moved to the env file.

    `placeholders` are the `${VAR}` the child already references for values the person must give (variable ->
    what it is); each gets an empty line in the env file unless it has one or `environment` sets it.

    Raises:
        EditError: servers.yaml already has `name`, a file cannot be read, or the result is not a valid config.
    """
    text = read_text(into)
    if name in existing_children(text, into):
        raise EditError(f"{into} already has a server named {name!r}: `hub remove {name}` first, or pick another name")
    env_path, env_text, store = secret_store(into, environment)
    converted = Converted(child)
    hide_secrets(name, converted, store)
    for var, what in (placeholders or {}).items():
        if var not in store.existing and var not in environment:
            store.placeholders[var] = what
    after = add_children(text, [(name, converted.child, comment)])
    validate_servers(after, into, f"the server {name!r}")
    edit = ServerEdit(name, FileChange(into, text, after), secrets=converted.secrets, notes=converted.notes)
    edit.placeholders = dict(store.placeholders)
    if store.added or store.placeholders:
        edit.env = env_change(env_path, env_text, store, into.name)
        edit.gitignore = gitignore_change(into.parent / ".gitignore", env_path.name)
    return edit


def plan_remove(into: Path, name: str) -> ServerEdit:
    """servers.yaml `into` without the server `name` (its secrets stay in the env file: other servers may share
    them).

    Raises:
        EditError: servers.yaml is missing or has no server `name`, or the result is not a valid config.
    """
    text = read_text(into)
    if text is None:
        raise EditError(f"{into}: no such file")
    names = list(existing_children(text, into))
    if name not in names:
        raise EditError(f"{into} has no server named {name!r} (it has: {', '.join(names) or 'none'})")
    after = _cut(text, name)
    if after is None:  # not the block layout `_cut` knows: ruamel.yaml's round trip (may leave a comment behind)
        after = edit_servers(text, lambda servers, _indent: servers.pop(name))
    validate_servers(after, into, f"servers.yaml without {name!r}")
    return ServerEdit(name, FileChange(into, text, after))


def _cut(text: str, name: str) -> str | None:
    """`text` without the server `name`'s lines: its key, everything indented under it, and the comment lines right
    above it (its own). None unless the result reads as the same document without that server (a flow mapping, an
    anchor, a key spelled oddly): the caller then edits through the YAML round trip."""
    import yaml

    lines = text.splitlines(keepends=True)
    top = next((i for i, line in enumerate(lines) if re.match(r"^servers:\s*(#.*)?$", line)), None)
    key = re.compile(rf"^( +)(?:{re.escape(name)}|\"{re.escape(name)}\"|'{re.escape(name)}'):(\s|$)")
    if top is None:
        return None
    found = next(((i, m) for i, line in enumerate(lines) if i > top and (m := key.match(line))), None)
    if found is None:
        return None
    index, match = found
    indent = len(match.group(1))

    def depth(line: str) -> int:
        return len(line) - len(line.lstrip(" "))

    end = index + 1
    while end < len(lines) and (not lines[end].strip() or depth(lines[end]) > indent):
        end += 1
    begin = index
    while begin - 1 > top and lines[begin - 1].lstrip().startswith("#") and depth(lines[begin - 1]) == indent:
        begin -= 1
    after = "".join(lines[:begin] + lines[end:])
    try:
        before_data, after_data = yaml.safe_load(text), yaml.safe_load(after)
    except yaml.YAMLError:
        return None
    expected = {**before_data, "servers": {k: v for k, v in before_data["servers"].items() if k != name}}
    return after if after_data == expected else None


def write_edit(edit: ServerEdit) -> list[Path]:
    """Write the edit's files (`importer.write_changes`: the env file before servers.yaml); the files written."""
    return write_changes((edit.env, edit.gitignore, edit.servers))
