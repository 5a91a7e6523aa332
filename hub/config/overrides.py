"""The `overrides:` of a child in servers.yaml: what the operator says about the child's tools, over what the child
says about them.

Keys are the child's own tool names, globs allowed. Every override whose key matches a tool applies to it, in the
order written; a later one's fields win (mappings are merged key by key). `name` may only be given under a key
without glob characters, since two tools cannot take one name.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ConfigDict, Field, field_validator, model_validator

from hub.config.model import Strict

# An exposed name's suffix: what the host's rule for names allows (the child's prefix is put before it).
SUFFIX_PATTERN = r"[A-Za-z0-9_-]{1,64}"


class DescriptionEdit(Strict):
    """A change to a child's description: replaced, or text put before or after it."""

    replace: str | None = None
    prepend: str | None = None
    append: str | None = None

    @model_validator(mode="after")
    def _one_way(self) -> DescriptionEdit:
        if self.replace is not None and (self.prepend is not None or self.append is not None):
            raise ValueError("give 'replace', or 'prepend' and/or 'append', not both")
        if self.replace is None and self.prepend is None and self.append is None:
            raise ValueError("give 'replace', 'prepend' or 'append'")
        return self

    def apply(self, description: str | None) -> str:
        if self.replace is not None:
            return self.replace
        return "\n\n".join(p for p in (self.prepend, description, self.append) if p)


class ArgumentConstraint(Strict):
    """What one argument's value must be, checked before the call leaves the hub (JSON Schema's keywords, added to
    the schema the host sees too)."""

    enum: tuple[Any, ...] | None = Field(default=None, min_length=1)
    pattern: str | None = Field(default=None, description="A regular expression the string must contain a match of.")
    minLength: int | None = Field(default=None, ge=0)  # JSON Schema's spelling: what users type
    maxLength: int | None = Field(default=None, ge=0)
    minimum: int | float | None = None
    maximum: int | float | None = None

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"pattern {value!r} is not a valid regular expression: {exc}") from None
        return value

    def keywords(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True, mode="json")


class ToolOverride(Strict):
    """What the operator says about the tools a key matches."""

    model_config = ConfigDict(populate_by_name=True)  # `meta` is read as well as its alias `_meta`

    name: str | None = Field(
        default=None, pattern=f"^{SUFFIX_PATTERN}$", description="The exposed name, still under the child's prefix."
    )
    title: str | None = None
    description: str | DescriptionEdit | None = Field(default=None, description="New, or {prepend, append} it.")
    annotations: dict[str, Any] = Field(default_factory=dict, description="Trusted over the child's (readOnlyHint...).")
    meta: dict[str, Any] = Field(default_factory=dict, alias="_meta", description="Merged into the tool's _meta.")
    fixed_args: dict[str, Any] = Field(
        default_factory=dict, description="Arguments the hub sets: they leave the host's schema, the hub sends them."
    )
    constraints: dict[str, ArgumentConstraint] = Field(
        default_factory=dict, description="Argument name -> what its value must be, checked before the call."
    )

    @field_validator("annotations")
    @classmethod
    def _hints_are_booleans(cls, value: dict[str, Any]) -> dict[str, Any]:
        wrong = [k for k, v in value.items() if k.endswith("Hint") and not isinstance(v, bool)]
        if wrong:
            raise ValueError(f"annotation {wrong[0]!r} must be true or false")
        return value

    @model_validator(mode="after")
    def _fixed_not_constrained(self) -> ToolOverride:
        both = sorted(set(self.fixed_args) & set(self.constraints))
        if both:
            raise ValueError(f"argument {both[0]!r} is fixed: it cannot also have constraints")
        return self
