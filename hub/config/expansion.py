"""`${VAR}` and `${VAR:-default}` in servers.yaml, expanded before validation so that errors keep their lines.

Kept apart from the loader so that its one rule is read and tested on its own: `expand_env` applies it, and
`unset_references` answers, with the same rule, which references an environment leaves to their defaults or
unset (for `hub install`, which asks it of the environment a host will start the hub with).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _unset(value: str | None, default: str | None) -> bool:
    """Whether a reference whose variable has `value` (None: not set) takes its `default`, or fails without one:
    the variable is not set, or it is empty and there is a default (as `${VAR:-default}` does in a shell)."""
    return value is None or (value == "" and default is not None)


def expand_env(text: str, environ: Mapping[str, str]) -> str:
    """Expand `${VAR}` and `${VAR:-default}`; `$$` is a literal `$`.

    Raises:
        KeyError: a variable without default is not set (the key is its name).
    """

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
