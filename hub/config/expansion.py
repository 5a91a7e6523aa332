"""`${VAR}` and `${VAR:-default}` in servers.yaml, expanded before validation so that errors keep their lines.

Kept apart from the loader so that its one rule is read and tested on its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


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
        if value is None or (value == "" and default is not None):
            if default is None:
                raise KeyError(name)
            return default
        return value

    return _VAR.sub(substitute, text)
