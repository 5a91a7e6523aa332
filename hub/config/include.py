"""`include:`: a team's bundle in git and each person's own additions, merged into one configuration
(docs/configuration.md, "A team bundle and your own additions").

Files merge in order: each included file (its own includes first), then the including file on top, which wins.
`servers` merge by name (a server declared again replaces the earlier declaration key by key, its `overrides` by
tool name), `policies` by rule `name` (replaced in place, new ones appended), other mappings key by key, recursively;
anything else is replaced. A missing file or a cycle is an error naming the chain; a glob matching nothing is not.
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


# A server's origin: the file that declared it first, and the keys later files replaced (with those files).
Origin = tuple[Path, dict[str, Path]]


@dataclass
class Merged:
    """The merged tree, every file read (for the reload watcher), each server's origin, and the include globs (a
    new file matching one is a change too)."""

    tree: Any = None
    files: list[Path] = field(default_factory=list)
    origins: dict[str, Origin] = field(default_factory=dict)
    globs: list[str] = field(default_factory=list)


Reader = Callable[[Path], Any]  # a file's parsed YAML tree (hub.config.loader), raising for what it cannot read


def absolute(path: Path) -> Path:
    """`path` made absolute, symlinks not followed: a Kubernetes ConfigMap is a link swapped to a new directory on
    every update, and the watcher must keep reading the link, not the directory the kubelet is about to delete."""
    return Path(os.path.abspath(path))


def resolve(root: Path, read: Reader) -> Merged:
    """The tree of `root` with its includes merged in (`read` parses one file)."""
    merged = Merged()
    merged.tree = _resolve(root, read, (), merged)
    return merged


def _resolve(file: Path, read: Reader, chain: tuple[Path, ...], merged: Merged) -> Any:
    """`file` as written (relative to the working directory, or to the including file's directory), so that
    messages name it as the user does; `chain` is the files including it, for cycles and messages."""
    if file.resolve() in {p.resolve() for p in chain}:
        raise IncludeError(f"{chain[-1]}: include cycle: {_chain(chain, file)}")
    tree = read(file)
    here = absolute(file)
    merged.files.append(here)
    listed = tree.pop("include", []) if isinstance(tree, dict) else []
    listed = [listed] if isinstance(listed, str) else listed
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise IncludeError(f"{file}: 'include' must be a list of file paths (globs allowed)")
    base: Any = None
    for pattern in listed:
        path = file.parent / Path(pattern).expanduser()
        if glob.has_magic(pattern):
            matches = [Path(p) for p in sorted(glob.glob(str(path)))]
            merged.globs.append(str(path))
        elif path.is_file():
            matches = [path]
        else:
            raise IncludeError(
                f"{file}: included file {pattern!r} does not exist ({path}); included from {_chain(chain, file)}"
            )
        for included in matches:
            part = _resolve(included, read, (*chain, file), merged)
            base = part if base is None else merge(base, part, absolute(included), merged.origins)
    if base is None:
        servers = tree.get("servers") if isinstance(tree, dict) else None
        for name in servers if isinstance(servers, dict) else ():
            merged.origins.setdefault(str(name), (here, {}))
        return tree
    return merge(base, tree, here, merged.origins)


def _chain(chain: tuple[Path, ...], file: Path) -> str:
    return " -> ".join(str(p) for p in (*chain, file))


def merge(base: Any, top: Any, top_file: Path, origins: dict[str, Origin]) -> Any:
    """`top` (from `top_file`) over `base`, by the rules of the module's docstring."""
    if not isinstance(base, dict) or not isinstance(top, dict):
        return top
    result = base.copy()  # the loader's mappings keep their lines and files in a copy
    for key, value in top.items():
        earlier = result.get(key)
        if key == "servers" and isinstance(value, dict) and isinstance(earlier, dict):
            result[key] = _merge_servers(earlier, value, top_file, origins)
        elif key == "policies" and isinstance(value, list) and isinstance(earlier, list):
            result[key] = _merge_rules(earlier, value)
        elif isinstance(value, dict) and isinstance(earlier, dict):
            result[key] = merge(earlier, value, top_file, origins)
        else:
            _set(result, top, key, value)
    return result


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


def _merge_servers(base: Any, top: dict[Any, Any], top_file: Path, origins: dict[str, Origin]) -> Any:
    servers = base.copy()
    for name, entry in top.items():
        origin = origins.setdefault(str(name), (top_file, {}))
        earlier = servers.get(name)
        if isinstance(earlier, dict) and isinstance(entry, dict):
            combined = earlier.copy()
            for key, value in entry.items():
                if key == "overrides" and isinstance(value, dict) and isinstance(combined.get(key), dict):
                    overrides = combined[key].copy()  # by tool name, as servers merge by name
                    for pattern, override in value.items():
                        _set(overrides, value, pattern, override)
                    value = overrides
                _set(combined, entry, key, value)
                if origin[0] != top_file:
                    origin[1][str(key)] = top_file
            servers[name] = combined
        else:
            _set(servers, top, name, entry)
    return servers


def _set(target: Any, source: Any, key: Any, value: Any) -> None:
    """target[key] = value, carrying the key's line and file from `source` (hub.config.loader's mappings)."""
    target[key] = value
    if hasattr(target, "take_position"):
        target.take_position(key, source)
