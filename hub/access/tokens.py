"""Static bearer tokens for a small team: the token file (`auth: {tokens: PATH}`), and checking a token against it.

The JSON file holds, per token, its name, groups, creation and expiry times, and the SHA-256 of the secret, never the
secret (`hub token create` prints it once). A secret is 256 random bits, so a fast hash is enough (a slow one
protects guessable passwords, not random keys). A presented token is hashed and compared with every entry in
constant time, so the time taken says nothing about which entry came close. The file is read again whenever its
modification time, size or inode change, so `hub token revoke` takes effect on the running hub's next request.
"""

from __future__ import annotations

import calendar
import hashlib
import hmac
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from hub.access.identity import Identity
from hub.platform.files import replace_file

PREFIX = "hub_"
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
DAY = 86400.0


class TokenFileError(Exception):
    """The token file cannot be read or written; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Entry:
    name: str
    digest: str
    groups: tuple[str, ...]
    created: float
    expires: float | None

    def expired(self, now: float) -> bool:
        return self.expires is not None and now >= self.expires

    @cached_property
    def identity(self) -> Identity:
        return Identity(self.name, frozenset(self.groups), "token")


@dataclass(frozen=True)
class Rejected:
    """Why a presented token is not accepted (never the token itself)."""

    reason: str  # "unknown", "expired"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class TokenFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._entries: tuple[Entry, ...] = ()

    def entries(self) -> tuple[Entry, ...]:
        """The file's entries as they are on disk now (re-read when it changed; none if it does not exist)."""
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            if stamp != self._stamp:
                self._entries = _parse(self.path)
                self._stamp = stamp
        except FileNotFoundError:
            self._stamp, self._entries = None, ()
        except OSError as exc:
            raise TokenFileError(f"cannot read the token file {self.path}: {exc.strerror}") from exc
        return self._entries

    def check(self, presented: str, now: float | None = None) -> Identity | Rejected:
        now = time.time() if now is None else now
        wanted = digest(presented)
        found: Entry | None = None
        for entry in self.entries():
            if hmac.compare_digest(entry.digest, wanted):
                found = entry
        if found is None:
            return Rejected("unknown")
        if found.expired(now):
            return Rejected("expired")
        return found.identity

    def create(self, name: str, groups: tuple[str, ...] = (), days: float | None = None) -> str:
        """Add a token for `name` and return its secret (shown once; only its hash is kept)."""
        if not NAME_PATTERN.fullmatch(name):
            raise TokenFileError(
                f"invalid token name {name[:80]!r}: a letter or digit, then letters, digits, '.', '_', '@' or '-' "
                "(at most 64 characters)"
            )
        entries = self.entries()
        if any(e.name == name for e in entries):
            raise TokenFileError(f"a token named {name!r} exists already in {self.path}; revoke it first")
        if days is not None and days <= 0:
            raise TokenFileError("--expires must be a positive number of days")
        secret = PREFIX + secrets.token_urlsafe(32)
        now = time.time()
        entry = Entry(name, digest(secret), tuple(groups), now, None if days is None else now + days * DAY)
        self._write((*entries, entry))
        return secret

    def revoke(self, name: str) -> None:
        entries = self.entries()
        if not any(e.name == name for e in entries):
            raise TokenFileError(f"no token named {name[:80]!r} in {self.path}")
        self._write(tuple(e for e in entries if e.name != name))

    def _write(self, entries: tuple[Entry, ...]) -> None:
        document = {
            "tokens": [
                {
                    "name": e.name,
                    "sha256": e.digest,
                    "groups": list(e.groups),
                    "created": _iso(e.created),
                    "expires": None if e.expires is None else _iso(e.expires),
                }
                for e in entries
            ]
        }
        try:  # a running hub reads the old file or the new one, never half of one
            replace_file(self.path, (json.dumps(document, indent=2) + "\n").encode("utf-8"), 0o600)
        except OSError as exc:
            raise TokenFileError(f"cannot write the token file {self.path}: {exc.strerror}") from exc
        self._stamp = None


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _seconds(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TokenFileError(f"{where}: a time must be a string like 2026-12-01T00:00:00Z")
    try:
        return float(calendar.timegm(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        raise TokenFileError(f"{where}: {value[:40]!r} is not a time like 2026-12-01T00:00:00Z") from None


def _parse(path: Path) -> tuple[Entry, ...]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:  # not UTF-8 (UnicodeDecodeError is one), not JSON
        raise TokenFileError(f"the token file {path} is not valid JSON: {exc}") from None
    items = document.get("tokens") if isinstance(document, dict) else None
    if not isinstance(items, list):
        raise TokenFileError(f"the token file {path} must be an object with a 'tokens' list")
    entries = []
    for i, item in enumerate(items):
        where = f"{path}: tokens[{i}]"
        if not isinstance(item, dict):
            raise TokenFileError(f"{where} must be an object")
        name, sha, groups = item.get("name"), item.get("sha256"), item.get("groups", [])
        if not isinstance(name, str) or not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise TokenFileError(f"{where} needs a 'name' and a 'sha256' (64 hex digits)")
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise TokenFileError(f"{where}: 'groups' must be a list of strings")
        created = _seconds(item.get("created"), where) or 0.0
        entries.append(Entry(name, sha, tuple(groups), created, _seconds(item.get("expires"), where)))
    return tuple(entries)
