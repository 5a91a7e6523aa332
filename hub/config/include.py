"""`include:`: a team's bundle in git, and each person's own additions, merged into one configuration.

    include: [team/ops.yaml, servers.d/*.yaml]   # relative to this file; globs allowed

Files are merged in order: each included file (itself resolved the same way, its own includes first), then the
including file on top, which wins. What merges how:

- `servers`: by name. A server only one file declares is taken whole; one declared again replaces the earlier
  declaration key by key (`enabled: false` disables a team server, `env:` replaces its env), so a local entry can
  change single keys of an included server; its `overrides` merge by tool name the same way.
- `policies`: by rule `name`; a rule declared again replaces the earlier one in its place, new rules are appended.
- any other mapping (`hub:`, `auth:`, `secrets:`): merged key by key, recursively; anything else is replaced.

Where each server and each overridden key came from is kept (`Sources`) for `hub check` and `hub list --json`.
A missing file, or a file that includes itself through a chain, is an error naming the chain. A glob that matches
nothing is not an error (an empty `servers.d/`).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class IncludeError(Exception):
    """An include that cannot be resolved; the message names the chain of files."""


@dataclass
class Origin:
    """Where a server's entry came from: the file that declared it first, and the keys later files replaced."""

    file: Path
    overridden: dict[str, Path] = field(default_factory=dict)


@dataclass
class Merged:
    """The merged tree, every file read (for the reload watcher), each server's origin, and the globs (a new file
    matching one is a change too)."""

    tree: Any
    files: list[Path]
    origins: dict[str, Origin]
    globs: list[str]


Reader = Callable[[Path], Any]  # a file's parsed YAML tree (hub.config.loader), raising for what it cannot read


def resolve(root: Path, read: Reader) -> Merged:
    """The tree of `root` with its includes merged in (`read` parses one file)."""
    merged = Merged(None, [], {}, [])
    merged.tree = _resolve(root, read, (), merged)
    return merged


def _resolve(file: Path, read: Reader, chain: tuple[Path, ...], merged: Merged) -> Any:
    """`file` as written (relative to the working directory, or to the including file's directory), so that
    messages name it as the user does; `chain` is the files including it, for cycles and messages."""
    if file.resolve() in {p.resolve() for p in chain}:
        names = " -> ".join(str(p) for p in (*chain, file))
        raise IncludeError(f"{chain[-1]}: include cycle: {names}")
    tree = read(file)
    merged.files.append(Path(os.path.abspath(file)))  # links kept: a ConfigMap's swap must stay visible
    if not isinstance(tree, dict) or "include" not in tree:
        _record(tree, file, merged.origins)
        return tree
    listed = tree.pop("include")
    if isinstance(listed, str):
        listed = [listed]
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise IncludeError(f"{file}: 'include' must be a list of file paths (globs allowed)")
    base: Any = None
    for pattern in listed:
        for included in _expand(pattern, file, chain):
            part = _resolve(included, read, (*chain, file), merged)
            base = part if base is None else merge(base, part, included, merged.origins)
        if glob.has_magic(pattern):
            merged.globs.append(str(file.parent / Path(pattern).expanduser()))
    own_origins: dict[str, Origin] = {}
    _record(tree, file, own_origins)
    if base is None:
        merged.origins.update(own_origins)
        return tree
    return merge(base, tree, file, merged.origins)


def _expand(pattern: str, including: Path, chain: tuple[Path, ...]) -> list[Path]:
    path = including.parent / Path(pattern).expanduser()
    if glob.has_magic(pattern):
        return [Path(p) for p in sorted(glob.glob(str(path)))]
    if not path.is_file():
        names = " -> ".join(str(p) for p in (*chain, including))
        raise IncludeError(f"{including}: included file {pattern!r} does not exist ({path}); included from {names}")
    return [path]


def _record(tree: Any, file: Path, origins: dict[str, Origin]) -> None:
    servers = tree.get("servers") if isinstance(tree, dict) else None
    if isinstance(servers, dict):
        for name in servers:
            origins.setdefault(str(name), Origin(file))


def merge(base: Any, top: Any, top_file: Path, origins: dict[str, Origin]) -> Any:
    """`top` (from `top_file`) over `base`, by the rules of the module's docstring."""
    if not isinstance(base, dict) or not isinstance(top, dict):
        return top
    result = _copy(base)
    for key, value in top.items():
        if key == "servers" and isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge_servers(result[key], value, top_file, origins)
        elif key == "policies" and isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_rules(result[key], value)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge(result[key], value, top_file, origins)
        else:
            _set(result, top, key, value)
    return result


def _merge_servers(base: Any, top: dict[Any, Any], top_file: Path, origins: dict[str, Origin]) -> Any:
    servers = _copy(base)
    for name, entry in top.items():
        earlier = servers.get(name)
        if isinstance(earlier, dict) and isinstance(entry, dict):
            combined = _copy(earlier)
            for key, value in entry.items():
                if key == "overrides" and isinstance(value, dict) and isinstance(combined.get(key), dict):
                    value = _merged_overrides(combined[key], value)  # by tool name, as servers merge by name
                _set(combined, entry, key, value)
                origin = origins.setdefault(str(name), Origin(top_file))
                if origin.file != top_file:
                    origin.overridden[str(key)] = top_file
            servers[name] = combined
        else:
            _set(servers, top, name, entry)
            origins.setdefault(str(name), Origin(top_file))
    return servers


def _merged_overrides(base: Any, top: dict[Any, Any]) -> Any:
    merged = _copy(base)
    for pattern, override in top.items():
        _set(merged, top, pattern, override)
    return merged


def _merge_rules(base: list[Any], top: list[Any]) -> list[Any]:
    rules = list(base)
    index = {r.get("name"): i for i, r in enumerate(rules) if isinstance(r, dict)}
    for rule in top:
        name = rule.get("name") if isinstance(rule, dict) else None
        if name is not None and name in index:
            rules[index[name]] = rule
        else:
            rules.append(rule)
    return rules


def _copy(mapping: Any) -> Any:
    """A shallow copy that keeps what the loader attached to a mapping (its lines and file, for error messages)."""
    return mapping.copy_mapping() if hasattr(mapping, "copy_mapping") else dict(mapping)


def _set(target: Any, source: Any, key: Any, value: Any) -> None:
    """target[key] = value, carrying the key's line and file from `source` (hub.config.loader's mappings)."""
    target[key] = value
    if hasattr(target, "take_position"):
        target.take_position(key, source)
