"""`hub add --registry NAME[@VERSION]`: a server of the official MCP Registry as a servers.yaml child.

The registry (its API: `GET /v0/servers/{name}/versions/{version|latest}`, `GET /v0/servers?search=`) or
`--registry-file` gives a server.json (the 2025-12-11 schema; the older snake_case keys are read too). The first
stdio package the hub can start is taken, else the first remote: npm `npx -y ID@VERSION`, PyPI `uvx ID==VERSION`,
OCI `docker run -i --rm [-e NAME]... IMAGE:VERSION` (docker passes each declared variable on from the child's
environment), a remote's `url` with `transport` and `headers`.

Arguments, environment variables and headers take their `value` (its `{variables}` filled in), else their `default`.
A secret, or a required value with neither, becomes a `${VAR}` placeholder to fill in servers.env; an optional one
with neither is left out and named in the notes.
"""

from __future__ import annotations

import json
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hub.install.convert import fit_prefix
from hub.install.secrets import variable_name

TIMEOUT_S = 15.0
_OFFICIAL = "io.modelcontextprotocol.registry/official"
_TEMPLATE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_RUNNERS = {"npm": "npx", "pypi": "uvx", "oci": "docker"}
_TRANSPORTS = {"streamable-http": "streamable-http", "sse": "sse", "http": "streamable-http"}


class RegistryError(ValueError):
    """The registry or the file cannot give a server the hub can add; the message says why."""


@dataclass
class RegistryEntry:
    """What `hub add` writes for a registry's server: a name, the child, a comment, and what is left to the user."""

    name: str
    child: dict[str, Any]
    comment: str
    placeholders: dict[str, str] = field(default_factory=dict)  # ${VAR} to fill in -> what goes there
    notes: list[str] = field(default_factory=list)


def entry_from_registry(
    spec: str | None, file: str | None, base_url: str, use: str | None = None, name: str | None = None
) -> RegistryEntry:
    """The entry for `spec` (`NAME` or `NAME@VERSION`) from the registry at `base_url`, or for the server.json at
    `file`; `use` picks the kind (`npm`, `pypi`, `oci`, `remote`) when the server offers several; `name` is the
    entry's name in servers.yaml (default: from the registry's name, `entry_name`).

    Raises:
        RegistryError: not found, not readable, or nothing in it the hub can run.
    """
    if file:
        return server_entry(_read_file(Path(file).expanduser()), file, None, use, name)
    assert spec is not None
    document, status = fetch_server(base_url, spec)
    return server_entry(document, f"{base_url.rstrip('/')} ({spec})", status, use, name)


def fetch_server(base_url: str, spec: str) -> tuple[dict[str, Any], str | None]:
    """The server.json of `spec` at the registry, and its status there (`active`, `deprecated` ...).

    Raises:
        RegistryError: the registry cannot be reached, or has no such server (the message names close matches).
    """
    name, _, version = spec.partition("@")
    base = base_url.rstrip("/")
    quoted = urllib.parse.quote(name, safe="")
    url = f"{base}/v0/servers/{quoted}/versions/{urllib.parse.quote(version or 'latest', safe='')}"
    answer = _get_json(url)
    if answer is None:
        close = search(base, name.rsplit("/", 1)[-1]) if name else []
        hint = f"; its servers named like it: {', '.join(close[:10])}" if close else ""
        what = f"{name}@{version}" if version else name
        raise RegistryError(f"the registry at {base} has no server {what}{hint}")
    document = answer.get("server", answer) if isinstance(answer, dict) else None
    if not isinstance(document, dict):
        raise RegistryError(f"{url}: not a server document")
    meta = answer.get("_meta")
    official = meta.get(_OFFICIAL) if isinstance(meta, dict) else None
    return document, official.get("status") if isinstance(official, dict) else None


def search(base_url: str, text: str) -> list[str]:
    """The names of the registry's servers (latest versions) whose name contains `text`."""
    query = urllib.parse.urlencode({"search": text, "version": "latest", "limit": "20"})
    answer = _get_json(f"{base_url.rstrip('/')}/v0/servers?{query}")
    rows = answer.get("servers") if isinstance(answer, dict) else None
    names = [row.get("server", row).get("name") for row in rows or [] if isinstance(row, dict)]
    return [n for n in names if isinstance(n, str)]


def _get_json(url: str) -> Any:
    """The JSON the registry answers at `url`; None for a 404."""
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "hub-add"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise RegistryError(f"{url}: the registry answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise RegistryError(
            f"{url}: cannot reach the registry ({reason}); set --registry-url or HUB_REGISTRY_URL"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise RegistryError(f"{url}: the registry's answer is not JSON") from None


def _read_file(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RegistryError(f"{path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RegistryError(f"{path}: not a JSON server.json: {exc}") from None
    if isinstance(document, dict) and isinstance(document.get("server"), dict):
        document = document["server"]  # a registry answer saved as is
    if not isinstance(document, dict):
        raise RegistryError(f"{path}: not a server.json (a JSON object with name, packages or remotes)")
    return document


def _get(item: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """`item[key]`, the camelCase key of the current schema or its snake_case form of the 2025-07 schema."""
    if key in item:
        return item[key]
    return item.get(re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), key), default)


def entry_name(server_name: str) -> str:
    """The servers.yaml name for a registry name: its last part without `mcp` and `server` words
    (`io.github.modelcontextprotocol/server-time` -> `time`, `io.github.brave/brave-search-mcp-server` ->
    `brave-search`)."""
    last = fit_prefix(server_name.rsplit("/", 1)[-1])
    words = [w for w in last.split("-") if w not in ("mcp", "server")]
    return fit_prefix("-".join(words)) if words else last


def server_entry(
    document: Mapping[str, Any],
    source: str,
    status: str | None = None,
    use: str | None = None,
    name_in_config: str | None = None,
) -> RegistryEntry:
    """The entry for one server.json.

    Raises:
        RegistryError: it is deleted, or has no package or remote the hub can run (or none of kind `use`).
    """
    name = document.get("name")
    if not isinstance(name, str) or not name:
        raise RegistryError(f"{source}: not a server.json (no name)")
    if status == "deleted":
        raise RegistryError(f"{name} is deleted from the registry")
    version = _get(document, "version") or (_get(document, "versionDetail") or {}).get("version", "")
    entry = RegistryEntry(
        name_in_config or entry_name(name), {}, f"{name} {version} (MCP Registry: {source})".replace("  ", " ")
    )
    if status == "deprecated":
        entry.notes.append(f"{name} is deprecated in the registry")
    package = _pick_package(document, use)
    remotes = [r for r in document.get("remotes") or [] if isinstance(r, dict) and r.get("url")]
    if package is not None:
        entry.child = _Builder(entry).package(package)
    elif remotes and use in (None, "remote"):
        entry.child = _Builder(entry).remote(remotes[0])
    else:
        kinds = sorted({str(_get(p, "registryType")) for p in document.get("packages") or [] if isinstance(p, dict)})
        offered = ", ".join(kinds + (["remote"] if remotes else [])) or "nothing"
        wanted = f" of kind {use}" if use else " the hub can start (npm, pypi, oci over stdio, or a remote)"
        raise RegistryError(f"{name} offers no package{wanted}; it offers: {offered}")
    return entry


def _pick_package(document: Mapping[str, Any], use: str | None) -> dict[str, Any] | None:
    """The first stdio package of kind `use` (any known kind when None), preferring one whose runner is on PATH."""
    packages = [
        p
        for p in document.get("packages") or []
        if isinstance(p, dict)
        and _get(p, "registryType") in _RUNNERS
        and (use is None or _get(p, "registryType") == use)
        and ((_get(p, "transport") or {}).get("type", "stdio") == "stdio")
    ]
    runnable = [p for p in packages if shutil.which(_runner(p))]
    return (runnable or packages)[0] if packages else None


def _literal(value: Any) -> str:
    """A value for servers.yaml, where `$$` is a literal `$` (hub.config.expansion)."""
    return str(value).replace("$", "$$")


def _runner(package: Mapping[str, Any]) -> str:
    hint = _get(package, "runtimeHint")
    return hint if hint in ("npx", "uvx", "docker", "bunx") else _RUNNERS[str(_get(package, "registryType"))]


class _Builder:
    """Fills one entry: values from templates and defaults, placeholders for the rest."""

    def __init__(self, entry: RegistryEntry) -> None:
        self.entry = entry

    def placeholder(self, var: str, what: str) -> str:
        self.entry.placeholders.setdefault(var, what)
        return f"${{{var}}}"

    def fill(self, template: str, variables: Mapping[str, Any]) -> str:
        """`template`'s `{name}`s: a variable's default unless it is secret, else a placeholder."""

        def one(match: re.Match[str]) -> str:
            key = match.group(1)
            found = variables.get(key)
            spec: Mapping[str, Any] = found if isinstance(found, dict) else {}
            if spec.get("default") is not None and not _get(spec, "isSecret"):
                return _literal(spec["default"])
            prefix, _, _ = template.partition("=")
            var = prefix if re.fullmatch(r"[A-Z_][A-Z0-9_]*", prefix) else variable_name(self.entry.name, key)
            return self.placeholder(var, spec.get("description") or f"the {key} for {self.entry.name} ({var})")

        return _TEMPLATE.sub(one, template.replace("$", "$$"))

    def value(self, item: Mapping[str, Any], var: str, label: str) -> str | None:
        """An argument's, variable's or header's value: its value, its default, a placeholder, or None (optional and
        without either: left out, and named in the notes)."""
        what = item.get("description") or label
        if isinstance(item.get("value"), str):
            return self.fill(item["value"], item.get("variables") or {})
        if item.get("default") is not None and not _get(item, "isSecret"):
            return _literal(item["default"])
        if _get(item, "isRequired"):
            return self.placeholder(var, what)
        self.entry.notes.append(f"optional, left out: {label} ({what})")
        return None

    def arguments(self, items: Any, label: str) -> list[str]:
        words: list[str] = []
        for item in items or []:
            if not isinstance(item, dict):
                continue
            flag = item.get("name") if item.get("type") == "named" else None
            hint = flag or _get(item, "valueHint") or "argument"
            value = self.value(item, variable_name(self.entry.name, str(hint)), f"{label} {hint}")
            if value is None:
                continue
            if flag and item.get("format") == "boolean":
                words += [flag] if value.lower() == "true" else []
            else:
                words += [flag, value] if flag else [value]
        return words

    def environment(self, items: Any) -> dict[str, str]:
        env = {}
        for item in items or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                value = self.value(item, item["name"], f"environment variable {item['name']}")
                if value is not None:
                    env[item["name"]] = value
        return env

    def package(self, package: Mapping[str, Any]) -> dict[str, Any]:
        kind, identifier = str(_get(package, "registryType")), str(package.get("identifier", ""))
        version = str(package.get("version") or "")
        runner = _runner(package)
        runtime = self.arguments(_get(package, "runtimeArguments"), "runtime argument")
        arguments = self.arguments(_get(package, "packageArguments"), "argument")
        env = self.environment(_get(package, "environmentVariables"))
        if kind == "npm":
            yes = ["-y"] if runner == "npx" else []
            args = [*yes, *runtime, f"{identifier}@{version}" if version else identifier]
        elif kind == "pypi":
            args = [*runtime, f"{identifier}=={version}" if version else identifier]
        else:
            args = self._docker(identifier, version, runtime, env)
        child: dict[str, Any] = {"command": runner, "args": [*args, *arguments]}
        if env:
            child["env"] = env
        return child

    def _docker(self, identifier: str, version: str, runtime: list[str], env: dict[str, str]) -> list[str]:
        image = identifier if ":" in identifier.rsplit("/", 1)[-1] or "@" in identifier or not version else None
        image = image or (f"{identifier}@{version}" if version.startswith("sha256:") else f"{identifier}:{version}")
        bare = identifier.split("@")[0].rsplit(":", 1)[0] if ":" in identifier.rsplit("/", 1)[-1] else identifier
        # server.json files that spell out `run -i --rm ... IMAGE` in runtimeArguments: those words once, the image last
        extra = [w for w in runtime if w not in ("run", "-i", "--rm", bare, identifier)]
        for index, word in enumerate(extra[1:], start=1):
            name, equals, value = word.partition("=")
            if extra[index - 1] == "-e" and equals and value == f"${{{name}}}":
                extra[index] = name  # `-e NAME=${NAME}` would show the value in `ps`: docker takes it from env
                env[name] = value
        passed = [w for name in env if name not in extra for w in ("-e", name)]
        return ["run", "-i", "--rm", *passed, *extra, image]

    def remote(self, remote: Mapping[str, Any]) -> dict[str, Any]:
        child: dict[str, Any] = {"url": self.fill(str(remote["url"]), remote.get("variables") or {})}
        kind = remote.get("type") or _get(remote, "transportType")
        if isinstance(kind, str) and kind in _TRANSPORTS:
            child["transport"] = _TRANSPORTS[kind]
        headers = {}
        for item in remote.get("headers") or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                var = variable_name(self.entry.name, item["name"])
                example = " (e.g. `Bearer <token>`)" if item["name"].lower() == "authorization" else ""
                value = self.value(item, var, f"the {item['name']} header for {self.entry.name}{example}")
                if value is not None:
                    headers[item["name"]] = value
        if headers:
            child["headers"] = headers
        return child
