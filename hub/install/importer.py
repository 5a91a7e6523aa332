"""`hub import`: the servers a host already has, as children in servers.yaml; their secrets in the env file.

Each entry of the host's file is `added` (under a prefix fitted from its name, `-2`, `-3` ... when taken), `present`
(servers.yaml has a child with the same command and arguments, or URL: importing twice changes nothing) or `skipped`
(the hub's own entry, or one the hub cannot run). servers.yaml is edited in ruamel.yaml's round trip (its comments
and order stay) and validated before anything is written; secrets go to the env file beside it (mode 0600,
hub.config.envfile), which a `.gitignore` keeps out of git.
"""

from __future__ import annotations

import fnmatch
import io
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hub.config.envfile import EnvFileError, env_file_path, format_env_line, parse_env_file
from hub.install import jsonc
from hub.install.clients import CLIENTS, ENTRY_FOR_KEY, Client, Paths, Scope, runs_hub
from hub.install.convert import Converted, Unusable, convert, fit_prefix, hide_secrets, identity
from hub.install.edit import EditError, open_servers, read_text, write_atomic
from hub.install.installer import Target, client_target
from hub.install.secrets import SecretStore

ENV_MODE = 0o600
_SOURCE_KEYS = ("mcpServers", "servers", "context_servers")


@dataclass(frozen=True)
class Source:
    """The host file an import reads: where, in which format, and the target to consolidate it into."""

    target: Target
    entries: dict[str, dict[str, Any]]
    client: Client | None
    inputs: dict[str, str] = field(default_factory=dict)  # VS Code's prompts: id -> what it asks for


def open_source(spec: str, paths: Paths, scope: Scope) -> Source:
    """A client's config file (by the client's name), or a file by path (JSON with `mcpServers`, `servers` or
    `context_servers`; TOML with `[mcp_servers.*]`).

    Raises:
        EditError: the file is missing, unreadable, or has no servers where they are looked for.
    """
    client = CLIENTS.get(spec)
    if client is not None:
        target = client_target(client, paths, scope)
    else:
        target = _file_target(paths.cwd / Path(spec).expanduser())  # an absolute path stays as it is
    text = read_text(target.file)
    if text is None:
        raise EditError(f"{target.file}: no such file")
    try:
        entries = open_servers(text, target.key, target.toml).entries()
    except EditError as exc:
        raise EditError(f"{target.file}: {exc}") from None
    return Source(target, entries, client, {} if target.toml else _inputs(text))


def _inputs(text: str) -> dict[str, str]:
    """VS Code's `inputs` (`[{"id": "apiKey", "description": "Your API key", ...}]`): what each prompt asks for.
    `text` is valid: its servers were read from it."""
    data = jsonc.loads(text)
    found = data.get("inputs") if isinstance(data, dict) else None
    return {
        str(i["id"]): str(i.get("description") or i["id"])
        for i in (found if isinstance(found, list) else [])
        if isinstance(i, dict) and i.get("id")
    }


def _file_target(file: Path) -> Target:
    if file.suffix == ".toml":
        return Target(str(file), file, ("mcp_servers",), True, ENTRY_FOR_KEY["mcp_servers"])
    text = read_text(file)
    if text is None:
        raise EditError(f"{file}: no such file")
    try:
        data = jsonc.loads(text)
    except jsonc.JsoncError as exc:
        raise EditError(f"{file}: not valid JSON: {exc}") from None
    key = next((k for k in _SOURCE_KEYS if isinstance(data, dict) and isinstance(data.get(k), dict)), None)
    if key is None:
        raise EditError(f"{file}: no servers found (looked for {', '.join(_SOURCE_KEYS)} at the top level)")
    return Target(str(file), file, (key,), False, ENTRY_FOR_KEY[key])


@dataclass
class Item:
    """One entry of the host's file, and what the import does with it."""

    name: str
    state: Literal["added", "present", "skipped"]
    prefix: str = ""
    converted: Converted = field(default_factory=lambda: Converted({}))
    reason: str = ""


@dataclass
class FileChange:
    path: Path
    before: str | None
    after: str
    mode: int | None = None

    @property
    def changes(self) -> bool:
        return (self.before or "") != self.after


@dataclass
class ImportPlan:
    """Everything an import would write: the items, servers.yaml, the env file and the .gitignore."""

    source: Source
    items: list[Item]
    servers: FileChange
    env: FileChange
    gitignore: FileChange
    new_secrets: list[str] = field(default_factory=list)  # names only: values never leave the env file

    @property
    def hub_serves(self) -> list[str]:
        """The host's entries that servers.yaml now has (what --consolidate replaces with the hub's entry)."""
        return [i.name for i in self.items if i.state in ("added", "present")]


def secret_store(into: Path, environment: Mapping[str, str]) -> tuple[Path, str | None, SecretStore]:
    """The env file beside servers.yaml `into`: its path, its text, and a `SecretStore` of its values.

    Raises:
        EditError: it cannot be read or parsed.
    """
    env_path = env_file_path(into)
    env_text = read_text(env_path)
    try:
        return env_path, env_text, SecretStore(parse_env_file(env_text or "", str(env_path)), environment)
    except EnvFileError as exc:
        raise EditError(str(exc)) from None


def plan_import(source: Source, into: Path, paths: Paths) -> ImportPlan:
    """What importing `source` into the servers.yaml `into` writes.

    Raises:
        EditError: servers.yaml or its env file cannot be read, or the result would not be a valid configuration.
    """
    yaml_text = read_text(into)
    env_path, env_text, store = secret_store(into, paths.env)
    variables = {"userHome": str(paths.home), "workspaceFolder": str(paths.cwd)}
    items = _items(source, existing_children(yaml_text, into), store, variables)
    added = [i for i in items if i.state == "added"]
    label = source.client.name if source.client else source.target.file.name
    after = add_children(
        yaml_text, [(i.prefix, i.converted.child, f"imported from {label} ({i.name!r})") for i in added]
    )
    validate_servers(after, into)
    wrote_env = store.added or store.placeholders or env_text
    gitignore = gitignore_change(into.parent / ".gitignore", env_path.name) if wrote_env else None
    return ImportPlan(
        source,
        items,
        FileChange(into, yaml_text, after if added else (yaml_text or "")),
        env_change(env_path, env_text, store, into.name),
        gitignore or FileChange(into.parent / ".gitignore", None, ""),
        list(store.added),
    )


def _items(
    source: Source, existing: dict[str, dict[str, Any]], store: SecretStore, variables: Mapping[str, str]
) -> list[Item]:
    taken = set(existing) | {str(c.get("prefix")) for c in existing.values() if c.get("prefix")}
    known = {identity(child): name for name, child in existing.items()}
    items: list[Item] = []
    gemini = source.client is not None and source.client.name == "gemini"
    for name, raw in source.entries.items():
        if runs_hub(raw):
            items.append(Item(name, "skipped", reason="the hub itself"))
            continue
        try:
            converted = convert(raw, variables, gemini)
        except Unusable as exc:
            items.append(Item(name, "skipped", reason=str(exc)))
            continue
        prefix = _free_prefix(fit_prefix(name), taken)
        kept, kept_placeholders = dict(store.added), dict(store.placeholders)
        hide_secrets(prefix, converted, store, source.inputs)
        same = known.get(identity(converted.child))
        if same is not None:
            # servers.yaml's child has its own references: the env file gets nothing of this one
            store.added, store.placeholders = kept, kept_placeholders
            items.append(Item(name, "present", same, converted, f"servers.yaml has it as {same!r}"))
            continue
        if prefix != fit_prefix(name):
            converted.notes.append(f"{fit_prefix(name)!r} is taken (servers.yaml or this import): named {prefix!r}")
        taken.add(prefix)
        known[identity(converted.child)] = prefix
        items.append(Item(name, "added", prefix, converted))
    return items


def _free_prefix(wanted: str, taken: set[str]) -> str:
    numbered = (f"{wanted[: 31 - len(str(n))]}-{n}" for n in itertools.count(2))
    return wanted if wanted not in taken else next(p for p in numbered if p not in taken)


def existing_children(text: str | None, into: Path) -> dict[str, dict[str, Any]]:
    if not text or not text.strip():
        return {}
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise EditError(f"{into}: not valid YAML: {exc}") from None
    servers = data.get("servers") if isinstance(data, dict) else None
    return {str(k): v for k, v in servers.items() if isinstance(v, dict)} if isinstance(servers, dict) else {}


def add_children(text: str | None, children: list[tuple[str, dict[str, Any], str]]) -> str:
    """servers.yaml's text with `children` (prefix, keys, a comment) added under `servers:`, through ruamel.yaml's
    round trip: comments, order and quoting of the rest stay. Lists of plain values are written in flow style
    (`args: [-y, server]`), as the default servers.yaml does."""

    def put(servers: Any, indent: int) -> None:
        for prefix, child, comment in children:
            servers[prefix] = _commented(child)
            servers.yaml_set_comment_before_after_key(prefix, before=comment, indent=indent)

    return edit_servers(text, put)


def edit_servers(text: str | None, change: Callable[[Any, int], None]) -> str:
    """servers.yaml's text after `change(servers, indent)` edited its `servers:` mapping (ruamel.yaml's
    CommentedMap, created when missing) in a round trip that keeps comments, order and quoting."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.util import load_yaml_guess_indent

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long command line
    indent, head = 2, ""
    document = yaml.load(text) if text and text.strip() else None
    if document is None:  # empty, or only comments: they stay on top
        head = "".join(f"{line}\n" for line in (text or "").splitlines() if line.strip())
        document = CommentedMap()
    elif not isinstance(document, CommentedMap):
        raise EditError("servers.yaml is not a mapping (`servers:` and the other top-level keys)")
    else:
        assert text is not None
        _, sequence, offset = load_yaml_guess_indent(text)
        indent = _mapping_indent(text)
        yaml.indent(mapping=indent, sequence=sequence or indent, offset=offset or 0)
    if document.get("servers") is None:
        document["servers"] = CommentedMap()
    servers = document["servers"]
    if not servers:
        servers.fa.set_block_style()
    change(servers, indent)
    out = io.StringIO()
    yaml.dump(document, out)
    return head + out.getvalue()


def _mapping_indent(text: str) -> int:
    """The file's mapping indentation: that of its first indented key (ruamel.yaml guesses only sequences')."""
    match = re.search(r"^( +)[^\s#-][^:\n]*:(\s|$)", text, re.MULTILINE)
    return len(match.group(1)) if match else 2


def _commented(value: Any) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        return CommentedMap((key, _commented(item)) for key, item in value.items())
    if isinstance(value, list):
        sequence = CommentedSeq(value)
        sequence.fa.set_flow_style()
        return sequence
    return value


class _AnyValue(dict[str, str]):
    """An environment in which every variable is set: validation of the result must not depend on this shell."""

    def get(self, key: str, default: Any = None) -> str:
        return "x"


def validate_servers(text: str, into: Path, what: str = "the imported servers") -> None:
    """Raises EditError when `text` is not a configuration the hub's loader takes (whatever the environment)."""
    from hub.config.loader import ConfigError, parse_config

    try:
        parse_config(text, into, _AnyValue())
    except ConfigError as exc:
        raise EditError(f"{what} would not make a valid configuration: {exc}") from None


def env_change(path: Path, before: str | None, store: SecretStore, config: str) -> FileChange:
    """The env file with the store's new values appended, then each placeholder as an empty `NAME=` line under a
    comment saying what to fill in (empty, the hub still starts; the server may then refuse until it is filled).
    A new file's first line names `config`, the file whose `${VAR}` it serves."""
    text = before or ""
    if (store.added or store.placeholders) and text and not text.endswith("\n"):
        text += "\n"
    if (store.added or store.placeholders) and not text:
        text = f"# Secrets of {config}'s servers. Keep this file out of git; the hub reads it.\n"
    text += "".join(format_env_line(name, value) + "\n" for name, value in store.added.items())
    text += "".join(f"# fill in: {what}\n{name}=\n" for name, what in store.placeholders.items())
    return FileChange(path, before, text, ENV_MODE)


def gitignore_change(path: Path, name: str) -> FileChange | None:
    """The .gitignore beside servers.yaml with the env file listed (None if it already is)."""
    before = read_text(path)
    patterns = [line.strip().lstrip("/") for line in (before or "").splitlines()]
    if any(p and not p.startswith("#") and fnmatch.fnmatch(name, p) for p in patterns):
        return None
    separator = "" if not before or before.endswith("\n") else "\n"
    return FileChange(path, before, f"{before or ''}{separator}{name}\n")


def write_import(plan: ImportPlan) -> list[Path]:
    """Write what the plan changes (`write_changes`); the files written."""
    return write_changes((plan.env, plan.gitignore, plan.servers))


def write_changes(changes: Iterable[FileChange | None]) -> list[Path]:
    """Write the changes that change something, in order: the env file first (mode 0600 from its creation), then
    the .gitignore, then servers.yaml, so that servers.yaml never references a secret that is not there. Returns
    the files written.

    Raises:
        EditError: a file cannot be written.
    """
    written = []
    for change in changes:
        if change is not None and change.changes:
            write_atomic(change.path, change.after, change.mode)
            written.append(change.path)
    return written
