"""The `servers.yaml` schema, its loading and its error messages.

A bad file must never start a hub: every problem is reported with the file, the line, the key path, what is
wrong and how to fix it (`ConfigError`). Values may reference the hub's environment as `${VAR}` or
`${VAR:-default}`; expansion happens before validation so that errors still point at the right line.
"""

from __future__ import annotations

import difflib
import fnmatch
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, ValidationError, field_validator, model_validator

from hub.env_expansion import expand_env
from hub.naming import PREFIX_PATTERN

# A child is a stdio process or a URL; "auto" picks SSE for URLs ending in /sse, Streamable HTTP otherwise.
TransportKind = Literal["stdio", "streamable-http", "sse"]
# Which protocol era the hub speaks to a child. "legacy" (handshake era) is the default because it carries
# server->client requests and unsolicited notifications that a hub forwards (see docs/protocols.md).
ChildProtocol = Literal["legacy", "auto", "2026-07-28"]
# How host sessions share a child (docs/protocols.md, "Which host request a child's request belongs to"):
# "shared" = one connection for all; "per-host" = each handshake-era host session gets its own connection.
SessionMode = Literal["shared", "per-host"]
DEFAULT_MAX_SESSIONS = 16

DEFAULT_REQUEST_TIMEOUT = 120.0
DEFAULT_CONNECT_TIMEOUT = 60.0
DEFAULT_MAX_TIMEOUT = 600.0


class ConfigError(Exception):
    """A configuration problem, already phrased for the person who wrote the file."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolFilter(_Strict):
    """Least privilege by omission: a tool reaches the host only if `allow` matches and `deny` does not."""

    allow: tuple[str, ...] = Field(default=("*",), description="Glob patterns of the child's tool names to expose.")
    deny: tuple[str, ...] = Field(default=(), description="Glob patterns of tool names never exposed; wins over allow.")

    def allows(self, name: str) -> bool:
        """Whether the child's tool `name` reaches the host."""
        return any(fnmatch.fnmatchcase(name, p) for p in self.allow) and not any(
            fnmatch.fnmatchcase(name, p) for p in self.deny
        )


class ServerConfig(_Strict):
    """One child: a stdio command or a URL."""

    command: str | None = Field(default=None, description="Executable of a stdio child, looked up on PATH.")
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for a stdio child.")
    inherit_env: tuple[str, ...] = Field(
        default=(), description="Names of further hub environment variables passed to a stdio child."
    )
    cwd: str | None = None
    url: str | None = Field(default=None, description="URL of a Streamable HTTP or SSE child.")
    transport: TransportKind | None = None
    headers: dict[str, str] = Field(default_factory=dict, description="HTTP headers sent to a URL child.")
    prefix: str | None = Field(default=None, description="Namespace prefix; defaults to the server's key; '' = none.")
    enabled: bool = True
    tools: ToolFilter = ToolFilter()
    protocol: ChildProtocol = "legacy"
    sessions: SessionMode = Field(
        default="shared", description="'per-host': one connection to this child per host session (exact routing)."
    )
    max_sessions: int = Field(
        default=DEFAULT_MAX_SESSIONS, ge=1, description="With sessions: per-host, most connections open at once."
    )
    timeout: float = Field(default=DEFAULT_REQUEST_TIMEOUT, gt=0, description="Seconds a request may take.")
    tool_timeouts: dict[str, PositiveFloat] = Field(
        default_factory=dict, description="Tool-name glob -> seconds; overrides `timeout` for matching tools."
    )
    max_timeout: float = Field(
        default=DEFAULT_MAX_TIMEOUT, gt=0, description="Ceiling in seconds when progress keeps extending a deadline."
    )
    max_concurrency: int = Field(default=16, ge=1, description="Requests in flight to this child at once.")
    max_queue: int = Field(default=64, ge=0, description="Requests waiting beyond max_concurrency; more are refused.")
    max_result_bytes: int = Field(default=16 * 1024 * 1024, ge=1024, description="Larger results are refused.")
    connect_timeout: float = Field(default=DEFAULT_CONNECT_TIMEOUT, gt=0, description="Seconds to connect and list.")
    max_restarts: int = Field(default=5, ge=0, description="Restarts in a row before the child is left failed.")
    log_arguments: bool | None = Field(default=None, description="Overrides hub.log_arguments for this child.")

    @field_validator("prefix")
    @classmethod
    def _check_prefix(cls, value: str | None) -> str | None:
        if value not in (None, "") and not re.fullmatch(PREFIX_PATTERN, value):
            raise ValueError(
                f"prefix {value!r} is not valid: use 1-32 lowercase letters, digits or '-', starting with a letter "
                "(no '_' or '+': they separate the prefix from names and URIs), or '' for no prefix"
            )
        return value

    @model_validator(mode="after")
    def _check_kind(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (a stdio child) or 'url' (an HTTP or SSE child)")
        if self.url is not None:
            stdio_only = [k for k in ("args", "env", "inherit_env", "cwd") if k in self.model_fields_set]
            if stdio_only:
                raise ValueError(f"{', '.join(stdio_only)} only apply to stdio children (with 'command'), not 'url'")
            if not re.match(r"https?://", self.url):
                raise ValueError(f"url {self.url!r} must start with http:// or https://")
            if self.transport == "stdio":
                raise ValueError("transport 'stdio' needs 'command', not 'url'")
        else:
            if "headers" in self.model_fields_set:
                raise ValueError("headers only apply to URL children")
            if self.transport not in (None, "stdio"):
                raise ValueError(f"transport {self.transport!r} needs 'url', not 'command'")
        return self

    def timeout_for(self, tool: str | None) -> float:
        """The deadline of one request: the first matching `tool_timeouts` glob, else `timeout`."""
        if tool is not None:
            for pattern, seconds in self.tool_timeouts.items():
                if fnmatch.fnmatchcase(tool, pattern):
                    return seconds
        return self.timeout

    @property
    def kind(self) -> TransportKind:
        if self.command is not None:
            return "stdio"
        if self.transport is not None:
            return self.transport
        assert self.url is not None
        return "sse" if self.url.rstrip("/").endswith("/sse") else "streamable-http"


class HubSettings(_Strict):
    """Settings of the hub itself."""

    log_arguments: bool = Field(default=False, description="Put tool argument values in the call log.")
    health_tool: bool = Field(default=True, description="Expose the built-in hub_health tool.")
    watch: bool = Field(default=True, description="Reload servers.yaml when it changes on disk.")
    startup_listing_wait: float = Field(
        default=5.0,
        ge=0,
        description=(
            "Seconds after the hub's process starts during which a list request waits for the servers still "
            "starting, so that a host's first listing is complete; 0 answers at once with the servers already up."
        ),
    )


class HubConfig(_Strict):
    hub: HubSettings = HubSettings()
    servers: dict[str, ServerConfig] = Field(default_factory=dict)


@dataclass(frozen=True)
class LoadedConfig:
    path: Path
    config: HubConfig

    def prefix_of(self, name: str) -> str:
        server = self.config.servers[name]
        return name if server.prefix is None else server.prefix


class _LineLoader(yaml.SafeLoader):
    """Remembers the line of every mapping key and value so that errors can name it."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    own = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
    loader.flatten_mapping(node)  # YAML merge keys (`<<: *anchor`): merged pairs first, then the node's own
    first_own = len(node.value) - own
    mapping: dict[Any, Any] = {}
    lines: dict[Any, int] = {}
    own_keys: set[Any] = set()
    for index, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        if index >= first_own:
            if key in own_keys:  # a merged key may be overridden; two keys written in this mapping may not
                raise ConfigError(
                    f"line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                    f"(first at line {lines[key]}); keep only one"
                )
            own_keys.add(key)
        mapping[key] = loader.construct_object(value_node, deep=True)
        lines[key] = key_node.start_mark.line + 1
    return _Mapping(mapping, lines, node.start_mark.line + 1)


class _Mapping(dict[Any, Any]):
    def __init__(self, data: dict[Any, Any], lines: dict[Any, int], line: int) -> None:
        super().__init__(data)
        self.lines = lines
        self.line = line


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _line_of(tree: Any, loc: tuple[int | str, ...]) -> int | None:
    line: int | None = getattr(tree, "line", None)
    node = tree
    for part in loc:
        if isinstance(node, _Mapping) and part in node:
            line = node.lines.get(part, line)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            break
    return line


def _expand_tree(tree: Any, environ: Mapping[str, str], path: tuple[str | int, ...], root: Any, file: Path) -> Any:
    if isinstance(tree, _Mapping):
        for key in list(tree):
            tree[key] = _expand_tree(tree[key], environ, (*path, key), root, file)
        return tree
    if isinstance(tree, list):
        return [_expand_tree(v, environ, (*path, i), root, file) for i, v in enumerate(tree)]
    if isinstance(tree, str):
        try:
            return expand_env(tree, environ)
        except KeyError as missing:
            where = _format_where(file, _line_of(root, path), path)
            raise ConfigError(
                f"{where}: environment variable {missing.args[0]} is not set; export it before starting the hub, "
                f"or give a default as ${{{missing.args[0]}:-value}}"
            ) from None
    return tree


def _format_where(file: Path, line: int | None, loc: tuple[int | str, ...]) -> str:
    dotted = ".".join(str(p) for p in loc) or "(top level)"
    return f"{file}:{line}: {dotted}" if line else f"{file}: {dotted}"


def _allowed_keys(loc: tuple[int | str, ...]) -> list[str]:
    model: type[BaseModel] = HubConfig
    parts = list(loc[:-1])
    while parts:
        part = parts.pop(0)
        field = model.model_fields.get(str(part))
        if field is None:
            return []
        annotation = field.annotation
        if annotation is HubSettings or annotation is ToolFilter:
            model = annotation
        elif str(part) == "servers":
            model = ServerConfig
            if parts:
                parts.pop(0)  # the server's name
        else:
            return []
    return list(model.model_fields)


def _describe(error: Any, file: Path, tree: Any) -> str:
    loc: tuple[int | str, ...] = tuple(error["loc"])
    where = _format_where(file, _line_of(tree, loc), loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc)
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"{where}: unknown key {loc[-1]!r}; {hint}allowed keys: {', '.join(allowed)}"
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind == "missing":
        return f"{where}: required key is missing"
    return f"{where}: {message} (got {error.get('input')!r})" if kind.endswith("_type") else f"{where}: {message}"


def parse_config(text: str, file: Path, environ: Mapping[str, str] | None = None) -> HubConfig:
    """Parse and validate the text of a servers.yaml.

    Raises:
        ConfigError: the text is not valid YAML or not a valid configuration.
    """
    try:
        tree = yaml.load(text, Loader=_LineLoader)
    except ConfigError as exc:
        raise ConfigError(f"{file}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{file}{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if tree is None:
        tree = _Mapping({}, {}, 1)
    if not isinstance(tree, _Mapping):
        raise ConfigError(f"{file}: the top level must be a mapping with a 'servers:' key")
    tree = _expand_tree(tree, os.environ if environ is None else environ, (), tree, file)
    problems = _name_problems(tree, file)
    try:
        config = HubConfig.model_validate(tree)
    except ValidationError as exc:
        problems += [_describe(e, file, tree) for e in exc.errors()]
    if problems:
        listed = "\n".join(f"  - {p}" for p in problems)
        raise ConfigError(f"{file} is not a valid hub configuration:\n{listed}")
    return config


def _name_problems(tree: _Mapping, file: Path) -> list[str]:
    """A server's key is its prefix unless `prefix:` says otherwise, so it must then be a valid prefix."""
    servers = tree.get("servers")
    if not isinstance(servers, _Mapping):
        return []
    problems = []
    for name, server in servers.items():
        if isinstance(server, dict) and server.get("prefix") is None and not re.fullmatch(PREFIX_PATTERN, str(name)):
            where = _format_where(file, _line_of(tree, ("servers", name)), ("servers", name))
            problems.append(
                f"{where}: server name {name!r} cannot be used as a prefix (1-32 lowercase letters, digits or '-', "
                "starting with a letter); rename it or set 'prefix:' for it"
            )
    return problems


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> LoadedConfig:
    """Read, expand and validate a servers.yaml.

    Raises:
        ConfigError: the file is missing, unreadable or invalid.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        hint = "pass --config PATH or create it (see docs/configuration.md)"
        raise ConfigError(f"{file}: no such file; {hint}") from None
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read it: {exc.strerror}") from None
    return LoadedConfig(path=file.resolve(), config=parse_config(text, file, environ))
