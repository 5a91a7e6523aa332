"""The env file beside servers.yaml (`servers.env`): `NAME=value` lines that `${VAR}` in the configuration sees
(under the process environment, which wins), so that secrets stay out of the file a team shares. `hub import` writes
it (mode 0600, kept out of git by a `.gitignore` beside it); `load_config` reads it on every load and reload.

The format is the common subset of dotenv files, read literally:

- blank lines and lines whose first non-blank character is `#` are skipped; `export NAME=value` is `NAME=value`;
- the value is the rest of the line, as written: no inline comments (`#` is part of the value), no expansion;
- a value in double quotes is a JSON string (`\\"`, `\\\\`, `\\n` escapes); in single quotes, taken as is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$")
# Written bare when it reads back the same: no surrounding blanks, no quote first, no line break.
_BARE = re.compile(r"^(?![\"'])[^\r\n]*$")


class EnvFileError(ValueError):
    """A line of the env file that is not `NAME=value` (the message names the line, never its value)."""


def env_file_path(config: Path) -> Path:
    """`servers.yaml` -> `servers.env`, in the same directory."""
    return config.with_suffix(".env")


def parse_env_file(text: str, origin: str = "env file") -> dict[str, str]:
    """The `NAME=value` pairs of an env file's text; a later line wins over an earlier one."""
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise EnvFileError(f"{origin}:{number}: not a NAME=value line")
        values[match.group(1)] = _value(match.group(2).strip(), f"{origin}:{number}")
    return values


def _value(raw: str, where: str) -> str:
    if raw.startswith('"'):
        try:
            decoded = json.loads(raw)
        except json.JSONDecodeError:
            decoded = None
        if not isinstance(decoded, str):
            raise EnvFileError(f"{where}: a value in double quotes must be one JSON string")
        return decoded
    if raw.startswith("'"):
        if len(raw) < 2 or not raw.endswith("'"):
            raise EnvFileError(f"{where}: a value in single quotes must end with one")
        return raw[1:-1]
    return raw


def format_env_line(name: str, value: str) -> str:
    """One `NAME=value` line (without its line break) that `parse_env_file` reads back as exactly `value`."""
    shown = value if _BARE.match(value) and value == value.strip() else json.dumps(value)
    return f"{name}={shown}"


def read_env_file(path: Path) -> dict[str, str]:
    """The values of the env file at `path`; none when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise EnvFileError(f"{path}: cannot read it: {exc.strerror}") from None
    return parse_env_file(text, str(path))
