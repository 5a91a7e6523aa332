"""`${VAR}` and `${VAR:-default}` in servers.yaml: one rule, applied by `expand_env` and asked by
`unset_references` (`hub install`: which references the environment a host starts the hub with leaves unset)."""

from __future__ import annotations

import re
from collections.abc import Mapping

_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _unset(value: str | None, default: str | None) -> bool:
    """Whether a reference takes its `default` (or fails without one): its variable is not set (`value` None), or
    it is empty and there is a default (as `${VAR:-default}` does in a shell)."""
    return value is None or (value == "" and default is not None)


def expand_env(text: str, environ: Mapping[str, str]) -> str:
    """Expand `${VAR}` and `${VAR:-default}`; `$$` is a literal `$`. A `KeyError` names a variable without default
    that is not set."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        value = environ.get(name)
        if not _unset(value, default):
            return str(value)
        if default is None:
            raise KeyError(name)
        return default

    return _VAR.sub(substitute, text)


def unset_references(text: str, environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """The references in `text` that `environ` leaves unset, in order, each once: the variable's name and the
    default it then expands to (None: it has none, so `expand_env` raises)."""
    found: list[tuple[str, str | None]] = []
    for match in _VAR.finditer(text):
        name, default = match.group(1), match.group(2)
        if name is not None and (name, default) not in found and _unset(environ.get(name), default):
            found.append((name, default))
    return found
