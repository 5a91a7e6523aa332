"""What the operator's config makes of one child tool (docs/safety.md): the definition the host sees, whether it is
read-only or destructive, the arguments the hub fixes or constrains, whether a call needs the user's confirmation,
and whether the tool is held back. Effective annotations are the operator's `overrides`, then the child's own (which
are untrusted: `read_only: true` hides what neither confirms read-only), then the protocol's defaults.
`check_arguments` runs on every `tools/call` before it leaves the hub: a refused argument never reaches the child.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hub.config.overrides import ArgumentConstraint, ToolOverride
from hub.config.schema import ServerConfig
from hub.protocol import errors

# The protocol's defaults for a tool's annotations (ToolAnnotations in the MCP schema).
DEFAULT_HINTS: dict[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}
# The _meta key Claude Code honours by asking its user before every call of the tool.
REQUIRES_USER_INTERACTION = "anthropic/requiresUserInteraction"


@dataclass(frozen=True)
class ToolRules:
    """What the hub enforces on calls of one exposed tool."""

    read_only: bool = False
    confirm: bool = False
    fixed_args: Mapping[str, Any] = field(default_factory=dict)
    constraints: Mapping[str, ArgumentConstraint] = field(default_factory=dict)

    @property
    def checks_arguments(self) -> bool:
        return bool(self.fixed_args or self.constraints)


NO_RULES = ToolRules()


@dataclass(frozen=True)
class ShapedTool:
    """A child tool as the operator's config exposes it: `suffix` is its name under the child's prefix; `held_back`
    says why it is not exposed at all (None: it is)."""

    definition: dict[str, Any]
    suffix: str
    rules: ToolRules
    held_back: str | None = None


def effective_hints(annotations: Any, overrides: list[ToolOverride]) -> dict[str, Any]:
    """Defaults, then the child's annotations, then the operator's: the hints the hub decides on."""
    hints: dict[str, Any] = dict(DEFAULT_HINTS)
    if isinstance(annotations, dict):
        hints.update({k: v for k, v in annotations.items() if k not in DEFAULT_HINTS or isinstance(v, bool)})
    for override in overrides:
        hints.update(override.annotations)
    return hints


def shape_tool(config: ServerConfig, child: str, tool: dict[str, Any]) -> ShapedTool:
    """The host's view of the child's `tool` under `config`: its overrides (in the order written), read_only and
    confirm."""
    name = str(tool.get("name", ""))
    found = _overrides_of(config, name)
    hints = effective_hints(tool.get("annotations"), found)
    read_only = hints["readOnlyHint"] is True
    destructive = not read_only and hints["destructiveHint"] is True
    fixed: dict[str, Any] = {}
    constraints: dict[str, ArgumentConstraint] = {}
    definition = dict(tool)
    for override in found:
        fixed.update(override.fixed_args)
        constraints.update(override.constraints)
        if override.title is not None:
            definition["title"] = override.title
        if override.description is not None:
            edit = override.description
            current = definition.get("description")
            current = current if isinstance(current, str) else None
            definition["description"] = edit if isinstance(edit, str) else edit.apply(current)
        if override.annotations:
            definition["annotations"] = _merged(definition.get("annotations"), override.annotations)
        if override.meta:
            definition["_meta"] = _merged(definition.get("_meta"), override.meta)
    confirm = (config.confirm == "destructive" and destructive) or (
        isinstance(config.confirm, tuple) and any(fnmatch.fnmatchcase(name, g) for g in config.confirm)
    )
    if confirm:
        definition["_meta"] = _merged(definition.get("_meta"), {REQUIRES_USER_INTERACTION: True})
    if fixed or constraints:
        definition["inputSchema"] = _schema(definition.get("inputSchema"), fixed, constraints)
    rules = ToolRules(read_only, confirm, fixed, constraints)
    held_back = None
    if config.read_only and not read_only:
        held_back = (
            f"server '{child}' is read_only and tool {name!r} is not marked read-only (readOnlyHint); an operator "
            "who knows it only reads can say so under the server's overrides (docs/safety.md)"
        )
    return ShapedTool(definition, _suffix(name, found), rules, held_back)


def tool_suffixes(config: ServerConfig, tools: Iterable[dict[str, Any]]) -> frozenset[str]:
    """The `suffix` of every tool in a child's listing, hidden (`tools: deny`) and held back ones too: the siblings
    `hub.relay.naming.expose_name` weighs, so that a tool's exposed name depends on the child's listing and the
    config's names alone, never on a filter, a policy or another tool's quarantine."""
    return frozenset(_suffix(name, _overrides_of(config, name)) for name in (str(t.get("name", "")) for t in tools))


def _merged(own: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
    """`own` (if it is an object) with `extra` over it."""
    return {**(own if isinstance(own, dict) else {}), **extra}


def _overrides_of(config: ServerConfig, name: str) -> list[ToolOverride]:
    """The overrides whose key matches the tool `name` (exactly, or as a glob), in the order written."""
    return [o for key, o in config.overrides.items() if key == name or fnmatch.fnmatchcase(name, key)]


def _suffix(name: str, found: list[ToolOverride]) -> str:
    """The tool's name before the prefix: the last matching override's `name`, else the child's own."""
    return next((o.name for o in reversed(found) if o.name is not None), name)


def _schema(schema: Any, fixed: Mapping[str, Any], constraints: Mapping[str, ArgumentConstraint]) -> Any:
    """The input schema the host sees: fixed arguments taken out, constraints added to their properties."""
    if not isinstance(schema, dict):
        return schema
    properties = schema.get("properties")
    properties = dict(properties) if isinstance(properties, dict) else {}
    for argument in fixed:
        properties.pop(argument, None)
    for argument, constraint in constraints.items():
        properties[argument] = _merged(properties.get(argument), constraint.keywords())
    shaped = {**schema, "properties": properties}
    required = schema.get("required")
    if isinstance(required, list):
        shaped["required"] = [r for r in required if r not in fixed]
    return shaped


def check_arguments(rules: ToolRules, exposed: str, arguments: Any) -> dict[str, Any]:
    """The arguments the child gets: the host's, checked against the constraints, with the fixed ones set.

    Raises `errors.ArgumentRefused` naming the argument and what it must be. A host that sends a fixed argument
    is refused unless it sends the fixed value itself: the hub never silently changes what the model asked for.
    """
    given: dict[str, Any] = arguments if isinstance(arguments, dict) else {}
    for argument, value in rules.fixed_args.items():
        if argument in given and given[argument] != value:
            raise errors.ArgumentRefused(
                f"tool {exposed!r}: argument {argument!r} is fixed by the hub's configuration and cannot be set",
                argument,
            )
    for argument, constraint in rules.constraints.items():
        if argument in given:
            problem = _violation(constraint, given[argument])
            if problem is not None:
                raise errors.ArgumentRefused(f"tool {exposed!r}: argument {argument!r} {problem}", argument)
    return {**given, **rules.fixed_args}


def _violation(constraint: ArgumentConstraint, value: Any) -> str | None:
    """What is wrong with `value` under `constraint`, phrased to follow "argument 'x'"; None if nothing."""
    if constraint.enum is not None and value not in constraint.enum:
        allowed = ", ".join(repr(v) for v in constraint.enum)
        return f"must be one of {allowed}"
    if constraint.pattern is not None or constraint.minLength is not None or constraint.maxLength is not None:
        problem = _string_violation(constraint, value)
        if problem is not None:
            return problem
    if constraint.minimum is not None or constraint.maximum is not None:
        return _number_violation(constraint, value)
    return None


def _string_violation(constraint: ArgumentConstraint, value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    if constraint.maxLength is not None and len(value) > constraint.maxLength:
        return f"must be at most {constraint.maxLength} characters long (it is {len(value)})"
    if constraint.minLength is not None and len(value) < constraint.minLength:
        return f"must be at least {constraint.minLength} characters long (it is {len(value)})"
    if constraint.pattern is not None and re.search(constraint.pattern, value) is None:
        return f"must match the pattern {constraint.pattern!r}"
    return None


def _number_violation(constraint: ArgumentConstraint, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number"
    if constraint.maximum is not None and value > constraint.maximum:
        return f"must be at most {constraint.maximum:g} (it is {value:g})"
    if constraint.minimum is not None and value < constraint.minimum:
        return f"must be at least {constraint.minimum:g} (it is {value:g})"
    return None
