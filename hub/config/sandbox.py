"""`sandbox:` of a stdio child, and its default under `hub:`: what people type (docs/sandbox.md), checked
(`ServerConfig.grants` turns it into the platform's `Grants`)."""

from __future__ import annotations

import difflib
import os
from typing import Literal

from pydantic import Field, field_validator, model_validator

from hub.config.model import Strict


class SandboxConfig(Strict):
    """`strict`, `none`, or grants beyond `strict` (a word is read as `{mode: WORD}`)."""

    mode: Literal["strict", "none"] = Field(default="strict", description="'none': no sandbox; else the grants below.")
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

    @model_validator(mode="before")
    @classmethod
    def _word(cls, value: object) -> object:
        if isinstance(value, str):
            if value not in ("strict", "none"):
                close = difflib.get_close_matches(value, ("strict", "none"), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ValueError(
                    f"sandbox {value!r} is not a sandbox: {hint}write strict, none, or a mapping of network, write, "
                    "read and container"
                )
            return {"mode": value}
        return value

    @model_validator(mode="after")
    def _runtime_needs_container(self) -> SandboxConfig:
        if self.mode == "none" and len(self.model_fields_set) > 1:
            raise ValueError("sandbox none takes no grants: remove them, or the mode")
        if self.runtime is not None and self.container is None:
            raise ValueError("sandbox runtime needs container: IMAGE (bubblewrap has no runtime to choose)")
        return self


NO_SANDBOX = SandboxConfig(mode="none")
