"""Who a host session acts for: a name, its groups, and how it proved them."""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from typing import Literal

# How an identity was established: a static token of the token file, a JWT of the organisation's provider, the
# local user of a stdio front, or nobody (a hub without `auth:`, where every host is the same anonymous caller).
AuthMethod = Literal["token", "jwt", "local", "none"]


@dataclass(frozen=True)
class Identity:
    name: str
    groups: frozenset[str] = frozenset()
    method: AuthMethod = "none"

    def in_any(self, groups: frozenset[str] | set[str]) -> bool:
        return not self.groups.isdisjoint(groups)


ANONYMOUS = Identity("anonymous")


def local_user(name: str | None = None, groups: tuple[str, ...] = ()) -> Identity:
    """The identity of a stdio front: the user who started the hub, or the name given with `hub serve --as`."""
    if name is None:
        try:
            name = getpass.getuser()
        except (OSError, KeyError):  # no user name in the environment or the password database (a container)
            name = "local"
    return Identity(name, frozenset(groups), "local")
