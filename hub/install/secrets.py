"""Which values `hub import` keeps out of servers.yaml, and the names they get in the local env file.

A value is taken for a secret when its name says credential (the names hub.redaction redacts: `*TOKEN*`,
`*SECRET*`, `*KEY*`, `*PASS*`, `*AUTH*`, `*CRED*`; every header but a few harmless ones), or when the value looks
like one whatever its name: `Bearer ...` and other schemes, well-known token prefixes (`sk-`, `ghp_`, `xoxb-`,
`glpat-`, `AKIA` ...), a private key, or a long random-looking string. A reference (`${VAR}`) is never a secret.
Taking a harmless value for a secret costs nothing (it still reaches the server, through the env file); the
reverse would publish it, so the rules lean that way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from hub.redaction import CREDENTIAL_NAME

# Headers that carry no secret (anything else sent to a URL server is taken for one).
PLAIN_HEADERS = frozenset({"accept", "content-type", "user-agent", "accept-language", "mcp-protocol-version"})
_SCHEME = re.compile(r"^(Bearer|Basic|Token|Bot|ApiKey)\s+(\S.*)$", re.IGNORECASE)
_PREFIXES = re.compile(
    r"^(sk-|sk_live_|rk_live_|pk_live_|ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza|ya29\.|"
    r"hf_|npm_|pypi-|dop_v1_|shpat_|lin_api_|SG\.|-----BEGIN)"
)
_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$")
# A random-looking run: 20 or more letters and digits without a separator, holding both (words joined by '-' or
# '_', UUIDs and version strings have shorter runs; API keys, hex digests and JWT parts do not).
_RANDOM_RUN = re.compile(r"[A-Za-z0-9]{20,}")
# A URL's user information (`scheme://user:password@host`), and a connection string's password field
# (`Password=...;` in ADO.NET and JDBC strings, `password=...` in libpq's key=value form).
URL_USERINFO = re.compile(r"(?P<start>[A-Za-z][A-Za-z0-9+.-]*://(?P<user>[^/?#@:\s]*))(?::(?P<password>[^/?#@\s]*))?@")
CONNECTION_PASSWORD = re.compile(r"(?i)(?<![A-Za-z0-9_-])((?:password|passwd|pwd)\s*=\s*)([^;&\s'\"]+)")


def is_reference(value: str) -> bool:
    return bool(_REFERENCE.match(value))


def looks_secret(value: str) -> bool:
    """Whether `value`, whatever its name, looks like a credential."""
    if not value or is_reference(value):
        return False
    if _SCHEME.match(value) or _PREFIXES.match(value):
        return True
    if "/" in value or "\\" in value or " " in value:  # paths and sentences are long and varied too
        return False
    return any(any(c.isdigit() for c in run) and any(c.isalpha() for c in run) for run in _RANDOM_RUN.findall(value))


def secret_name(name: str) -> bool:
    """Whether a variable or parameter named `name` holds a credential."""
    return bool(CREDENTIAL_NAME.search(name))


def secret_env(name: str, value: str) -> bool:
    return bool(value) and not is_reference(value) and (secret_name(name) or looks_secret(value))


def secret_header(name: str, value: str) -> bool:
    """Whether a header's value holds a secret (`Bearer ${TOKEN}` does not: its credential is a reference)."""
    if not value or is_reference(value) or is_reference(split_scheme(value)[1].strip()):
        return False
    return name.lower() not in PLAIN_HEADERS or looks_secret(value)


def split_scheme(value: str) -> tuple[str, str]:
    """`("Bearer ", "abc")` for `Bearer abc`: the part that may be shown, and the credential."""
    match = _SCHEME.match(value)
    return (value[: match.start(2)], match.group(2)) if match else ("", value)


def variable_name(*parts: str) -> str:
    """An environment variable's name from parts: `("my-server", "x-api-key")` -> `MY_SERVER_X_API_KEY`,
    `("v", "apiKey")` -> `V_API_KEY`."""
    joined = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", "_".join(p for p in parts if p))
    name = re.sub(r"[^A-Za-z0-9]+", "_", joined).strip("_").upper()
    return name if name and not name[0].isdigit() else f"HUB_{name}"


@dataclass
class SecretStore:
    """The env file's values and the ones an import adds: each secret value gets one variable name, the one it has
    in the file if any. A name is not taken when the environment has it with another value: the environment wins
    over the file when the hub starts."""

    existing: Mapping[str, str]
    environment: Mapping[str, str] = field(default_factory=dict)
    added: dict[str, str] = field(default_factory=dict)
    # Variables with no value yet (a host's prompt such as VS Code's `${input:...}`, a registry's secret): the name
    # and what to fill in; the env file gets an empty line for each, under a comment saying what goes there.
    placeholders: dict[str, str] = field(default_factory=dict)

    def put(self, value: str, *names: str) -> str:
        """The variable that holds `value`: the one that already does, else the first free of `names`, else the
        last of them numbered."""
        for known, held in (*self.existing.items(), *self.added.items()):
            if held == value:
                return known
        name = self._free_name(names, value)
        self.added[name] = value
        return name

    def placeholder(self, what: str, *names: str) -> str:
        """A variable for a value the person must fill in (`what` says which): the env file's own if it has one of
        `names` already, else the first free of `names`, else the last numbered."""
        for name in names:
            if name in self.existing or self.placeholders.get(name) == what:
                return name
        name = self._free_name(names, "")
        self.placeholders[name] = what
        return name

    def _free_name(self, names: tuple[str, ...], value: str) -> str:
        """The first of `names`, then the last numbered, that the file does not use and the environment does not set
        to another value than `value`."""
        for name in (*names, *(f"{names[-1]}_{n}" for n in range(2, 1000))):
            taken = name in self.existing or name in self.added or name in self.placeholders
            if not taken and self.environment.get(name, value) == value:
                return name
        raise ValueError("no free variable name")  # a thousand secrets of one server: not a real configuration
