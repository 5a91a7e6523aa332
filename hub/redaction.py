"""Secrets never reach a log line: every configured secret value, and well-known credential shapes, are replaced by
`[REDACTED]` in every field of every log line (docs/call-log.md says which values and shapes). Values once known stay
redacted for the life of the process (a reload does not make an old password printable).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, MutableMapping
from typing import Any

REDACTED = "[REDACTED]"
CREDENTIAL_NAME = re.compile(r"TOKEN|SECRET|KEY|PASS|AUTH|CRED", re.IGNORECASE)
# Shorter values are too likely to be ordinary words to be replaced wherever they appear.
MIN_SECRET_CHARS = 6
# Credential shapes, one alternation: private key blocks, bearer tokens, AWS access key ids, a URL's password (the
# group `pw`, the only part replaced).
_SHAPES = (
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|(?i:\bBearer\s+[A-Za-z0-9._~+/=-]{8,})"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|(?i:(?<=[a-z0-9+.-]://)[^:/@\s]+:(?P<pw>[^@\s]+)(?=@))"
    r"|(?<=/oauth/start\?link=)[A-Za-z0-9_%-]+"  # a sign-in link (hub.upstream.oauth): good once, for one identity
)
_KEEP = frozenset({"event", "level", "timestamp"})


class Redactor:
    def __init__(self) -> None:
        self._values: set[str] = set()
        self._pattern = re.compile(_SHAPES, re.DOTALL)

    def add(self, values: Iterable[str]) -> None:
        """Values to redact from now on (those shorter than MIN_SECRET_CHARS are not taken)."""
        fresh = {v for v in values if len(v) >= MIN_SECRET_CHARS} - self._values
        if fresh:
            self._values |= fresh
            ordered = sorted(self._values, key=len, reverse=True)  # the longest first: no partial leftovers
            known = "|".join(re.escape(v) for v in ordered)
            self._pattern = re.compile(f"{known}|{_SHAPES}", re.DOTALL)

    def text(self, text: str) -> str:
        if len(text) < MIN_SECRET_CHARS:
            return text
        return self._pattern.sub(_replace, text)

    def value(self, value: Any, depth: int = 0) -> Any:
        """`value` with every string in it redacted (mappings and lists walked, to a bounded depth)."""
        if isinstance(value, str):
            return self.text(value)
        if depth > 20:
            return value
        if isinstance(value, dict):
            return {k: self.value(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v, depth + 1) for v in value]
        return value

    def fields(self, fields: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        for key, value in fields.items():
            if key not in _KEEP and not isinstance(value, int | float | bool | type(None)):
                fields[key] = self.value(value)
        return fields

    def processor(self, logger: Any, name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
        """A structlog processor: every field of the line redacted."""
        return self.fields(event)


def _replace(match: re.Match[str]) -> str:
    if match.group("pw") is None:
        return REDACTED
    whole, offset = match.group(0), match.start()
    return whole[: match.start("pw") - offset] + REDACTED + whole[match.end("pw") - offset :]


def configured_secrets(servers: Iterable[Any]) -> list[str]:
    """The secret values a configuration holds itself: header values, credential-named env values."""
    found: list[str] = []
    for server in servers:
        found += list(server.headers.values())
        found += [value for name, value in server.env.items() if CREDENTIAL_NAME.search(name)]
        found += list(server.secrets)
    return [v for v in found if "${" not in v]
