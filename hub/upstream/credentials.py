"""A child's configuration as one identity runs it.

`${identity.name}`, `${identity.groups}` (comma-separated) and `${secret:NAME}` in a child's `env`, `headers` and
`args` are expanded when a process or connection is opened for an identity. Identity placeholders are expanded first,
so a secret's name may hold one: `${secret:pg-password-${identity.name}}`. An identity without a value for a secret
gets `MissingCredential`: never the hub's own credentials instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hub.access.identity import Identity
from hub.access.secrets import SecretError, Secrets
from hub.config.schema import ServerConfig

IDENTITY = re.compile(r"\$\{identity\.(name|groups)\}")
SECRET = re.compile(r"\$\{secret:([^}]*)\}")


class MissingCredential(Exception):
    """The identity has no value for a secret the child's configuration needs."""


def personal(
    config: ServerConfig, identity: Identity, secrets: Secrets, resolved: Callable[[str], None] | None = None
) -> ServerConfig:
    """`config` with its placeholders expanded for `identity`; `config` itself when it has none.

    Raises:
        MissingCredential: a secret has no value for this identity, or cannot be read.
    """
    values = (*config.env.values(), *config.headers.values(), *config.args)
    if not any("${identity." in v or "${secret:" in v for v in values):
        return config

    def expand(text: str) -> str:
        groups = ",".join(sorted(identity.groups))
        text = IDENTITY.sub(lambda m: identity.name if m.group(1) == "name" else groups, text)

        def secret(match: re.Match[str]) -> str:
            name = match.group(1)
            try:
                value = secrets.get(name)
            except SecretError as exc:
                raise MissingCredential(f"identity '{identity.name}': {exc}") from None
            if value is None:
                raise MissingCredential(
                    f"identity '{identity.name}' has no secret {name!r} (looked in {secrets.where()}); "
                    "an administrator must add it before this identity can use the server"
                )
            if resolved is not None:
                resolved(value)  # so that the log can redact it
            return value

        return SECRET.sub(secret, text)

    return config.model_copy(
        update={
            "env": {k: expand(v) for k, v in config.env.items()},
            "headers": {k: expand(v) for k, v in config.headers.items()},
            "args": tuple(expand(a) for a in config.args),
        }
    )
