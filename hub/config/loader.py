"""Reading `servers.yaml`: YAML with line numbers, `${VAR}` expansion, validation, and error messages.

A bad file must never start a hub, nor replace a running configuration: every problem is reported with the file,
the line, the key path, what is wrong and how to fix it (`ConfigError`). `${VAR}` is expanded before validation so
that errors still point at the right line. An error never quotes a value that may be a secret (`shown`).
"""

from __future__ import annotations

import difflib
import os
import re
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from hub.config.envfile import EnvFileError, env_file_path, read_env_file
from hub.config.expansion import expand_env
from hub.config.include import IncludeError, Merged, absolute, resolve
from hub.config.lock import LockError, load_lock, lock_path
from hub.config.schema import PREFIX_PATTERN, HubConfig, LoadedConfig


class ConfigError(Exception):
    """A configuration problem, already phrased for the person who wrote the file."""


class _LineLoader(yaml.SafeLoader):
    """Remembers the file, and the line of every mapping key, so that errors can name them."""

    def __init__(self, text: str, file: Path) -> None:
        super().__init__(text)
        self.file = file


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    own = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
    loader.flatten_mapping(node)  # YAML merge keys (`<<: *anchor`): merged pairs first, then the node's own
    first_own = len(node.value) - own
    mapping: dict[Any, Any] = {}
    lines: dict[Any, int] = {}
    own_keys: set[Any] = set()
    for index, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        if index >= first_own:
            if key in own_keys:  # a merged key may be overridden; two keys written in this mapping may not
                raise ConfigError(
                    f"line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                    f"(first at line {lines[key]}); keep only one"
                )
            own_keys.add(key)
        mapping[key] = loader.construct_object(value_node, deep=True)
        lines[key] = key_node.start_mark.line + 1
    return _Mapping(mapping, lines, node.start_mark.line + 1, loader.file)


class _Mapping(dict[Any, Any]):
    """A YAML mapping that knows the line of each key, and the file of each key once several files are merged
    (`include:`, hub.config.include), so that an error names the file and line a value came from."""

    def __init__(self, data: dict[Any, Any], lines: dict[Any, int], line: int, file: Path) -> None:
        super().__init__(data)
        self.lines = lines
        self.line = line
        self.file = file
        self.files: dict[Any, Path] = {}

    def copy(self) -> _Mapping:
        """A shallow copy that keeps the lines and files (hub.config.include merges copies)."""
        copy = _Mapping(dict(self), dict(self.lines), self.line, self.file)
        copy.files = dict(self.files)
        return copy

    def file_of(self, key: Any) -> Path:
        return self.files.get(key, self.file)

    def take_position(self, key: Any, source: Any) -> None:
        """`key` now holds `source`'s value: its line and file are `source`'s."""
        if isinstance(source, _Mapping):
            self.lines[key] = source.lines.get(key, source.line)
            self.files[key] = source.file_of(key)


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _where(tree: Any, file: Path, loc: tuple[int | str, ...]) -> str:
    """`file:line: key.path` of the value at `loc`, at the deepest key that exists; the file it came from when
    files were merged."""
    line: int | None = getattr(tree, "line", None)
    source: Path = getattr(tree, "file", None) or file
    node = tree
    for part in loc:
        if isinstance(node, _Mapping) and part in node:
            line = node.lines.get(part, line)
            source = node.file_of(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            break
    dotted = ".".join(str(p) for p in loc) or "(top level)"
    return f"{source}:{line}: {dotted}" if line else f"{source}: {dotted}"


def _expand_tree(tree: Any, environ: Mapping[str, str], path: tuple[str | int, ...], root: Any, file: Path) -> Any:
    if isinstance(tree, _Mapping):
        for key in list(tree):
            tree[key] = _expand_tree(tree[key], environ, (*path, key), root, file)
        return tree
    if isinstance(tree, list):
        return [_expand_tree(v, environ, (*path, i), root, file) for i, v in enumerate(tree)]
    if isinstance(tree, str):
        try:
            return expand_env(tree, environ)
        except KeyError as missing:
            raise ConfigError(
                f"{_where(root, file, path)}: environment variable {missing.args[0]} is not set; export it before "
                f"starting the hub, or give a default as ${{{missing.args[0]}:-value}}"
            ) from None
    return tree


def _allowed_keys(loc: tuple[int | str, ...]) -> list[str]:
    """The keys allowed where `loc` points: the model at that place, found by walking the schema's annotations."""
    model: type[BaseModel] = HubConfig
    parts = list(loc[:-1])
    while parts:
        field = model.model_fields.get(str(parts.pop(0)))
        annotation = None if field is None else field.annotation
        inner = [
            a for a in (annotation, *typing.get_args(annotation)) if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        if not inner:
            return []
        model = inner[0]
        if model is not annotation and typing.get_origin(annotation) in (dict, tuple, list) and parts:
            parts.pop(0)  # behind a key or index (dict[str, M], tuple[M, ...]): a server's name, a rule's index
    return list(model.model_fields)


def _describe(error: Any, file: Path, tree: Any) -> str:
    loc: tuple[int | str, ...] = tuple(error["loc"])
    where = _where(tree, file, loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc)
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"{where}: unknown key {loc[-1]!r}; {hint}allowed keys: {', '.join(allowed)}"
    message = str(error["msg"]).removeprefix("Value error, ")
    value = error.get("input")
    if isinstance(value, str) and repr(value) in message:  # a validator quoted the value (prefix): only as shown() may
        quoted = shown(loc, value)
        message = message.replace(repr(value), quoted if quoted == repr(value) else f"({quoted})")
    if kind == "missing":
        return f"{where}: required key is missing"
    if kind.endswith("_type"):
        return f"{where}: {message} (got {shown(loc, value)})"
    return f"{where}: {message}"


# Keys and values that may hold a secret: an error message never quotes them.
_SECRET_KEYS = {"env", "headers"}
_SECRET_WORDS = re.compile(r"(?i)bearer|basic |token|secret|passw|api[-_]?key|auth|credential|cookie")
_OPAQUE = re.compile(r"^[A-Za-z0-9+/=_.:-]{20,}$")


def shown(loc: tuple[int | str, ...], value: Any) -> str:
    """`value` as an error message may quote it: never under `env` or `headers`, nor when it looks like a secret."""
    secret_path = any(str(part) in _SECRET_KEYS or _SECRET_WORDS.search(str(part)) for part in loc)
    if isinstance(value, str | int | float | bool) or value is None:
        text = repr(value)
        if not secret_path and not _SECRET_WORDS.search(text) and not _OPAQUE.match(str(value)) and len(text) <= 80:
            return text
    kind = {bool: "a boolean", str: "a string", list: "a list", dict: "a mapping", int: "a number", float: "a number"}
    shape = next((name for base, name in kind.items() if isinstance(value, base)), type(value).__name__)
    return f"{shape}, not shown"


def parse_config(text: str, file: Path, environ: Mapping[str, str] | None = None) -> HubConfig:
    """Parse and validate the text of a servers.yaml (its `include:` not followed: `load_config` does that)."""
    return validate_tree(read_tree(text, file), file, environ)


def read_tree(text: str, file: Path) -> _Mapping:
    """The YAML tree of one file, every mapping knowing its lines and the file."""
    loader = _LineLoader(text, file)
    try:
        tree = loader.get_single_data()
    except ConfigError as exc:
        raise ConfigError(f"{file}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{file}{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    finally:
        loader.dispose()
    if tree is None:
        # An editor that truncates the file before writing it leaves exactly this for a moment: a reload of it
        # would stop every child. A hub without servers says so.
        raise ConfigError(f"{file} is empty; list the servers under 'servers:', or write 'servers: {{}}' for none")
    if not isinstance(tree, _Mapping):
        raise ConfigError(f"{file}: the top level must be a mapping with a 'servers:' key")
    return tree


def validate_tree(tree: _Mapping, file: Path, environ: Mapping[str, str] | None = None) -> HubConfig:
    """Expand `${VAR}` in a (merged) tree and validate it; a `ConfigError` names each problem's file, line and key."""
    if "servers" not in tree:
        raise ConfigError(
            f"{file} has no 'servers:' key; list the servers under 'servers:', or write 'servers: {{}}' for none"
        )
    tree = _expand_tree(tree, os.environ if environ is None else environ, (), tree, file)
    problems = _name_problems(tree, file)
    try:
        config = HubConfig.model_validate(tree)
    except ValidationError as exc:
        problems += [_describe(e, file, tree) for e in exc.errors()]
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(f"{file} is not a valid hub configuration:\n{listed}")
    return config


def _name_problems(tree: _Mapping, file: Path) -> list[str]:
    """A server's key is its prefix unless `prefix:` says otherwise, so it must then be a valid prefix; and no two
    servers may share a prefix."""
    servers = tree.get("servers")
    if not isinstance(servers, _Mapping):
        return []
    problems = []
    owners: dict[str, str] = {}
    for name, server in servers.items():
        where = _where(tree, file, ("servers", name))
        own = server.get("prefix") if isinstance(server, dict) else None
        if isinstance(server, dict) and own is None and not re.fullmatch(PREFIX_PATTERN, str(name)):
            problems.append(
                f"{where}: server name {name!r} cannot be used as a prefix (1-32 lowercase letters, digits or '-', "
                "starting with a letter); rename it or set 'prefix:' for it"
            )
        prefix = name if own is None else own
        if isinstance(prefix, str) and prefix:
            if prefix in owners:
                problems.append(
                    f"{where}: prefix {prefix!r} is already the prefix of server {owners[prefix]!r}, so one's tools "
                    "would hide the other's; give one of them another 'prefix:'"
                )
            else:
                owners[prefix] = str(name)
    return problems


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> LoadedConfig:
    """Read, expand and validate a servers.yaml and what it includes. `${VAR}` sees the environment over the values
    of the env file beside it (`servers.env`, hub.config.envfile)."""
    file = Path(path)
    if not file.exists():
        raise ConfigError(f"{file}: no such file; pass --config PATH or create it (see docs/configuration.md)")
    merged, environ = _merged(file, environ)
    config = validate_tree(merged.tree, file, environ)
    where = absolute(file)
    try:
        lock = load_lock(lock_path(where))
    except LockError as exc:
        raise ConfigError(str(exc)) from None
    return LoadedConfig(where, config, lock, tuple(merged.files), tuple(merged.globs), merged.origins)


def read_unchecked(path: Path, environ: Mapping[str, str] | None = None) -> tuple[Any, dict[str, str]]:
    """The file with its includes merged, not validated, and the environment its `${VAR}` see (`environ`, else the
    process's, over servers.env): for `hub logs`, which needs part of a file whose rest need not be valid, and
    `hub install`, which asks what a host's environment would see."""
    merged, environ = _merged(path, environ)
    return merged.tree, environ


def _merged(file: Path, environ: Mapping[str, str] | None) -> tuple[Merged, dict[str, str]]:
    """The file with its includes merged, and `environ` (None: the process's) over its servers.env."""
    try:
        seen = {**read_env_file(env_file_path(file)), **(os.environ if environ is None else environ)}
        return resolve(file, _read_file), seen
    except (EnvFileError, IncludeError) as exc:
        raise ConfigError(str(exc)) from None


def _read_file(file: Path) -> _Mapping:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{file}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read it: {exc.strerror}") from None
    return read_tree(text, file)
