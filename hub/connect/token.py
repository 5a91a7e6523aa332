"""Where `hub connect` gets the bearer token it sends the hub: an environment variable, or the OS keyring.

Never from the command line nor from the host's JSON configuration (both end up in process listings, shell
histories and backups); the host's config names only *where* the token is. The token is never logged: errors say
where it came from (`$HUB_TOKEN`, the keyring entry), not what it is.
"""

from __future__ import annotations

import importlib
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_ENV = "HUB_TOKEN"
# The keyring entry's user name when --keyring-user is not given (`keyring set SERVICE token`).
DEFAULT_KEYRING_USER = "token"


class TokenError(Exception):
    """The token cannot be had from where the command line says it is; the message says why and what to do."""


@dataclass(frozen=True)
class Token:
    """The token (None: send no Authorization header) and where it came from, for messages."""

    value: str | None = field(repr=False)
    source: str

    def header(self) -> dict[str, str]:
        return {} if self.value is None else {"authorization": f"Bearer {self.value}"}

    def refused(self) -> str:
        """Why the hub may have refused us, for the host and the log."""
        if self.value is None:
            return f"no token was sent ({self.source} is not set)"
        return f"the token from {self.source} was refused"


def _clean(value: str, source: str) -> str:
    """The token without surrounding whitespace (`$(cat file)` keeps a newline).

    Raises:
        TokenError: it is empty, or holds a character no HTTP header may carry.
    """
    token = value.strip()
    if not token:
        raise TokenError(f"{source} is empty")
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in token):
        raise TokenError(f"the token from {source} holds a space or a control character; a token is one word")
    return token


def from_env(name: str, environ: Mapping[str, str], required: bool) -> Token:
    """The token in the environment variable `name`.

    Unset and not `required` (the default variable, for a hub without `auth:`): no token, and a 401 from the hub
    says which variable to set.

    Raises:
        TokenError: the variable is unset and `required` (named with --token-env), or its value is unusable.
    """
    source = f"${name}"
    value = environ.get(name)
    if value is None:
        if required:
            raise TokenError(f"{source} is not set: put the token in it (in the host's environment, not its JSON)")
        return Token(None, source)
    return Token(_clean(value, source), source)


def from_keyring(service: str, user: str) -> Token:
    """The token the OS keyring holds for (`service`, `user`), through the optional `keyring` package.

    Raises:
        TokenError: `keyring` is not installed, the keyring cannot be read, or it has no such entry.
    """
    source = f"the keyring (service {service!r}, user {user!r})"
    try:
        keyring: Any = importlib.import_module("keyring")  # optional: not a dependency of the hub
        errors: Any = importlib.import_module("keyring.errors")
    except ImportError:
        raise TokenError(
            f"--keyring needs the 'keyring' package, which is not installed: "
            f"`{shlex.join([sys.executable, '-m', 'pip', 'install', 'keyring'])}` (the Python the hub runs with), or "
            "pass the token in an environment variable (--token-env)"
        ) from None
    try:
        value = keyring.get_password(service, user)
    except errors.KeyringError as exc:
        raise TokenError(f"{source} cannot be read: {type(exc).__name__}: {exc}") from None
    if not isinstance(value, str):
        # the keyring package's own command, run by the hub's Python (the same backend); it asks for the token
        store = shlex.join([sys.executable, "-m", "keyring", "set", service, user])
        raise TokenError(f"{source} has no such entry: store the token with `{store}`")
    return Token(_clean(value, source), source)


def from_options(token_env: str | None, keyring: str | None, keyring_user: str, environ: Mapping[str, str]) -> Token:
    """The token the command line points at: `--keyring SERVICE` (with `--keyring-user`), else `--token-env VAR`
    (required then), else $HUB_TOKEN if set (`hub connect`, `hub reload --url`).

    Raises:
        TokenError: as from_env and from_keyring.
    """
    if keyring is not None:
        return from_keyring(keyring, keyring_user)
    return from_env(token_env or DEFAULT_ENV, environ, required=token_env is not None)
