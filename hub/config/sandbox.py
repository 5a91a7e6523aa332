"""`sandbox:` of a stdio child, and its default under `hub:` (docs/sandbox.md): what people type, checked and turned
into the platform's `Grants`.

- `strict`: no network, nothing writable but a private /tmp, nothing readable beyond the system and the child's own
  install directory and cwd;
- `{network: true, write: [...], read: [...]}`: strict plus these grants (`~` and `${VAR}` expand; absolute paths);
- `{container: IMAGE, ...}`: the child's command runs in that image under Docker or Podman, with the same grants;
- `none`: no sandbox.
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, field_validator, model_validator

from hub.config.model import Strict
from hub.platform.sandbox import Grants


class SandboxConfig(Strict):
    """A sandbox with grants beyond `strict`."""

    network: bool = Field(default=False, description="Let the child open network connections.")
    write: tuple[str, ...] = Field(default=(), description="Absolute paths (~ and ${VAR} expand) the child may write.")
    read: tuple[str, ...] = Field(default=(), description="Absolute paths beyond the system the child may read.")
    container: str | None = Field(
        default=None, min_length=1, description="An image: the child's command runs in it (docker or podman run)."
    )
    runtime: Literal["docker", "podman"] | None = Field(
        default=None, description="With container: which runtime; unset: docker if installed, else podman."
    )

    @field_validator("write", "read")
    @classmethod
    def _absolute(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        paths = []
        for given in value:
            path = os.path.normpath(os.path.expanduser(given))
            if not os.path.isabs(path):
                raise ValueError(
                    f"sandbox path {given!r} is not absolute: write it from / or ~ (or ${{VAR}}/...), as the "
                    "child's cwd says nothing about where the sandbox is"
                )
            if path == os.sep:
                raise ValueError("sandbox path '/' grants the whole system: use sandbox: none instead")
            paths.append(path)
        return tuple(paths)

    @model_validator(mode="after")
    def _runtime_needs_container(self) -> SandboxConfig:
        if self.runtime is not None and self.container is None:
            raise ValueError("sandbox runtime needs container: IMAGE (bubblewrap has no runtime to choose)")
        return self


# What `sandbox:` may hold: a word, or the grants.
SandboxSetting = Literal["strict", "none"] | SandboxConfig


def grants(setting: SandboxSetting | None) -> Grants | None:
    """The platform's grants of a setting; None: no sandbox."""
    if setting is None or setting == "none":
        return None
    if setting == "strict":
        return Grants()
    return Grants(setting.network, setting.write, setting.read, setting.container, setting.runtime)
