"""Which `${VAR}` of servers.yaml a host's hub will not have: `hub install`'s warnings about an entry it writes.

A host starts the hub with its own environment. A desktop application (Claude Desktop, Cursor, VS Code, Windsurf,
Zed) is started by the desktop session, which never read the shell's profile (it gives only `SESSION`'s variables),
in a directory of its own (`/` for some); a terminal host (Claude Code, Gemini CLI, Codex) has the shell's
environment and directory. What surely reaches `${VAR}` is servers.env and the `env` of the host's entry. Two things
break then, each named once per variable and server: a `${VAR}` without default that is unset (the hub expands every
one, a disabled server's too, so it does not start), and a `${VAR:-.}` (a relative path default) in a server that
starts from a desktop host, which names the host's directory, not this one. Unset is judged by
hub.config.expansion's `unset_references`, on the tree hub.config.loader merges.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hub.config.envfile import env_file_path
from hub.config.expansion import unset_references
from hub.config.loader import read_unchecked

# Variables a desktop session gives every application it starts (Linux, macOS, Windows), so a desktop host's hub has
# them as the shell does.
SESSION = frozenset(
    {"HOME", "USER", "LOGNAME", "PATH", "SHELL", "LANG", "TMPDIR", "DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR"}
    | {"USERPROFILE", "USERNAME", "APPDATA", "LOCALAPPDATA", "TEMP", "TMP", "SYSTEMROOT", "HOMEDRIVE", "HOMEPATH"}
)


@dataclass(frozen=True)
class Unreached:
    """A `${VAR}` of servers.yaml that the hub a host starts will not have."""

    variable: str
    default: str | None  # None: none, so the hub does not start
    key: str  # the dotted key path of the first value that uses it (servers.git.args.1)
    server: str | None  # the server that uses it; None: a setting outside `servers:`
    in_shell: bool  # set in the shell that ran `hub install`, which a desktop host does not start the hub from
    disabled: bool = False  # the server that uses it does not start (its `${VAR}` is expanded all the same)


def unreached(config: Path, entry_env: Mapping[str, str], shell: Mapping[str, str], terminal: bool) -> list[Unreached]:
    """The `${VAR}` of `config` (its includes merged) that break the hub a host starts with `entry_env` (its
    entry's `env`): from a terminal (`terminal`) with the environment `shell`, else from a desktop session.

    Raises:
        ConfigError: a file cannot be read or parsed, or servers.env is invalid.
    """
    given = dict(shell) if terminal else {k: v for k, v in shell.items() if k.upper() in SESSION}
    tree, seen = read_unchecked(config, {**given, **entry_env})
    found: dict[tuple[str, str | None], Unreached] = {}
    for path, text in _strings(tree, ()):
        server = str(path[1]) if len(path) > 1 and path[0] == "servers" else None
        settings = _server(tree, path)
        disabled = settings is not None and settings.get("enabled", True) is False
        cwd = settings.get("cwd") if settings is not None else None
        # a server that starts, in the hub's working directory
        starts = settings is not None and not disabled and not (isinstance(cwd, str) and Path(cwd).is_absolute())
        for variable, default in unset_references(text, seen):
            breaks = default is None or (not terminal and _relative(default) and starts)
            if breaks and (variable, server) not in found:
                key = ".".join(str(part) for part in path)
                in_shell = shell.get(variable) is not None
                found[(variable, server)] = Unreached(variable, default, key, server, in_shell, disabled)
    return list(found.values())


def warning(item: Unreached, title: str, config: Path) -> str:
    """One line: what uses the variable, what the hub `title` starts does then, and how to fix it."""
    env_file = env_file_path(config)
    user = f"server {item.server!r}" if item.server is not None else item.key
    shell = f" (this shell has it, but {title} does not start the hub from it)" if item.in_shell else ""
    if item.default is None:
        expanded = " (disabled, but the hub expands every ${VAR} in the file)" if item.disabled else ""
        return (
            f"{user}{expanded} uses ${{{item.variable}}}, which {title} will not give the hub{shell}, so the hub "
            f"will not start: add {item.variable}=... to {env_file} (the hub reads it), or give it a default in "
            f"{config.name} (${{{item.variable}:-value}})"
        )
    disable = f", or disable {item.server!r} (enabled: false)" if item.server is not None else ""
    return (
        f"{user} uses ${{{item.variable}:-{item.default}}}, which {title} leaves at {item.default!r}{shell}: the "
        f"directory {title} starts the hub in (/ for some), not this shell's; add {item.variable}=/absolute/path "
        f"to {env_file} (the hub reads it){disable}"
    )


def _strings(tree: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Every string in the tree, with its key path."""
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            yield from _strings(value, (*path, key))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            yield from _strings(value, (*path, index))
    elif isinstance(tree, str):
        yield path, tree


def _relative(default: str) -> bool:
    """A default that names a path relative to the working directory (`.`, `./data`, `..`)."""
    return default in (".", "..") or default.startswith(("./", "../", ".\\", "..\\"))


def _server(tree: Any, path: tuple[Any, ...]) -> Mapping[Any, Any] | None:
    """The mapping of the server whose value is at `path` (None: not a server's value)."""
    if len(path) < 3 or path[0] != "servers" or not isinstance(tree.get("servers"), Mapping):
        return None
    server = tree["servers"].get(path[1])
    return server if isinstance(server, Mapping) else None
