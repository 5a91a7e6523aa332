"""Where `${secret:NAME}` in servers.yaml finds its value, read when a child is started: a directory with one file
per secret, named after it (as Kubernetes and Docker mount them; its text without the final newline), then a YAML
(or JSON) mapping of names to strings, then the environment. A value is never logged nor shown by `hub check`; an
error names the secret, never its value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

NAME = re.compile(r"[A-Za-z0-9_.@-]{1,200}")


class SecretError(Exception):
    """A secret cannot be read: the message names it and where it was looked for, never a value."""


@dataclass(frozen=True)
class Secrets:
    directory: Path | None = None
    file: Path | None = None
    environ: Mapping[str, str] | None = None  # None: the process's environment

    def get(self, name: str) -> str | None:
        """The secret's value, or None if no source has it."""
        if not NAME.fullmatch(name):
            raise SecretError(f"invalid secret name {name[:80]!r}: letters, digits, '_', '.', '@' or '-'")
        if self.directory is not None:
            path = self.directory / name
            try:
                return path.read_text(encoding="utf-8").removesuffix("\n")
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise SecretError(f"cannot read the secret {name!r} from {path}: {exc.strerror}") from None
        if self.file is not None:
            value = self._from_file(name)
            if value is not None:
                return value
        return (os.environ if self.environ is None else self.environ).get(name)

    def where(self) -> str:
        """Where secrets are looked for, for an error message."""
        places = [f"{self.directory}/NAME" if self.directory else "", str(self.file or ""), "the environment"]
        return ", ".join(p for p in places if p)

    def _from_file(self, name: str) -> str | None:
        assert self.file is not None
        try:
            document = yaml.safe_load(self.file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SecretError(f"cannot read the secrets file {self.file}: {exc.strerror}") from None
        except yaml.YAMLError:
            raise SecretError(f"the secrets file {self.file} is not valid YAML") from None  # no excerpt: values
        if not isinstance(document, dict):
            raise SecretError(f"the secrets file {self.file} must be a mapping of names to values")
        value = document.get(name)
        if value is not None and not isinstance(value, str | int):
            raise SecretError(f"the secret {name!r} in {self.file} must be a string")
        return None if value is None else str(value)
