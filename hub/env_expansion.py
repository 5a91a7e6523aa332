"""`${VAR}` in servers.yaml: one expansion for the config loader and for the early launch of a warm start.

No pydantic and no YAML here: hub/early_launch.py uses it before either is loaded.
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
