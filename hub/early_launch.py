"""A warm start's stdio children, read from servers.yaml without the config's model: started before it loads.

Before the hub can start a child it has spent ~0.4 s of its own start: Python, then pydantic building the config's
models (0.22 s), structlog, the config load. A warm start (hub/warm_start.py) means this very file loaded before
(the cache is keyed by its bytes), so its stdio children can be started first, from the YAML alone: the
`command`, `args`, `env`, `inherit_env` and `cwd` of every server with a command that is not disabled, with `${VAR}`
expanded as the loader does. Then the config is loaded as always, and a child started here is adopted only if the
config starts it with an equal `Launch`; any other is ended at once (`EarlySpawns.reconcile`). Whatever this reader
does not understand (a value of another type, a variable that is not set) it leaves out: that child starts
after the load, as on any other start.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from hub.env_expansion import expand_env
from hub.spawn import Launch, launch_of


class _Unread(Exception):
    """A setting this reader leaves to the config's model."""


def read_launches(config_path: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> dict[str, Launch]:
    """The launch of each enabled stdio server of the file, by name; empty if the file cannot be read.

    Never raises: it only saves time, and the config's load reports whatever is wrong with the file.
    """
    try:
        return _read(config_path, os.environ if environ is None else environ)
    except Exception:
        return {}


def _read(config_path: str | os.PathLike[str], environ: Mapping[str, str]) -> dict[str, Launch]:
    text = Path(config_path).read_text(encoding="utf-8")
    tree = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    servers = tree.get("servers") if isinstance(tree, dict) else None
    if not isinstance(servers, dict):
        return {}
    launches: dict[str, Launch] = {}
    for name, server in servers.items():
        try:
            launch = _launch(server, environ)
        except (_Unread, KeyError):
            continue
        if isinstance(name, str) and launch is not None:
            launches[name] = launch
    return launches


def _launch(server: Any, environ: Mapping[str, str]) -> Launch | None:
    if not isinstance(server, dict) or "url" in server or server.get("enabled", True) is not True:
        return None
    env = server.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(key, str) for key in env):
        raise _Unread
    cwd = server.get("cwd")
    return launch_of(
        _text(server.get("command"), environ),
        _texts(server.get("args", []), environ),
        {key: _text(value, environ) for key, value in env.items()},
        _texts(server.get("inherit_env", []), environ),
        None if cwd is None else _text(cwd, environ),
        environ,
    )


def _text(value: Any, environ: Mapping[str, str]) -> str:
    if not isinstance(value, str):
        raise _Unread
    return expand_env(value, environ)


def _texts(values: Any, environ: Mapping[str, str]) -> list[str]:
    if not isinstance(values, list):
        raise _Unread
    return [_text(value, environ) for value in values]
