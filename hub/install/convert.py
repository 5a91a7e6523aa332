"""A host's server entry as a servers.yaml child (hub/config/schema.py `ServerConfig`), its secrets moved out.

Read: `command`/`args`/`env`/`cwd` (Zed's older `"command": {"path", ...}` too; Codex's `env_vars` -> `inherit_env`);
`url`, `serverUrl` (Windsurf), `httpUrl` (Gemini's Streamable HTTP; Gemini's `url` is SSE) with `headers` and
`type`; Codex's `bearer_token_env_var`, `http_headers`, `env_http_headers` as headers; `disabled`/`enabled`; tool
filters (`includeTools`/`excludeTools`, `enabled_tools`/`disabled_tools`). `${env:NAME}` becomes `${NAME}`, VS
Code's `${userHome}` and `${workspaceFolder}` their paths. Other keys are named in the notes, never dropped silently.

Secrets (hub.install.secrets) in `env`, `headers`, `args` and a URL become `${VAR}`, the value kept in the
`SecretStore` for the env file; a header's scheme stays visible (`Authorization: Bearer ${LINEAR_TOKEN}`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hub.install.secrets import (
    CONNECTION_PASSWORD,
    URL_USERINFO,
    SecretStore,
    is_reference,
    looks_secret,
    secret_env,
    secret_header,
    secret_name,
    split_scheme,
    variable_name,
)

# The keys of a host's entry that the conversion reads; any other is named in the notes.
_KNOWN = frozenset({
    "command", "args", "env", "cwd", "url", "serverUrl", "httpUrl", "headers", "type", "transport", "source",
    "enabled", "disabled", "env_vars", "bearer_token_env_var", "http_headers", "env_http_headers", "includeTools",
    "excludeTools", "enabled_tools", "disabled_tools", "settings",
})  # fmt: skip
_TRANSPORTS = {
    "sse": "sse",
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamableHttp": "streamable-http",
}
_ENV_REFERENCE = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_QUERY = re.compile(r"([?&])([^=&#]+)=([^&#]*)")
_HEADER_ARG = re.compile(r"^([A-Za-z0-9-]+):\s*(\S.*)$")
_HEADER_FLAGS = frozenset({"--header", "-H", "--headers", "--http-header"})
_INPUT = re.compile(r"\$\{input:([^}]+)\}")


class Unusable(ValueError):
    """An entry that is neither a command nor a URL (or otherwise cannot be a child); the message says why."""


@dataclass
class Converted:
    """A child's keys for servers.yaml, what the person should know about it, and the secrets it now references."""

    child: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    secrets: list[str] = field(default_factory=list)


def fit_prefix(name: str) -> str:
    """An entry's name fitted to the prefix rules: lowercase letters, digits and '-', starting with a letter, at most
    32 characters (`GitHub MCP` -> `github-mcp`, `@org/server` -> `org-server`); `server` if nothing is left."""
    fitted = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    fitted = re.sub(r"^[0-9-]+", "", fitted)[:32].rstrip("-")
    return fitted or "server"


def convert(raw: Mapping[str, Any], variables: Mapping[str, str], gemini: bool = False) -> Converted:
    """The child for a host's entry; `variables` are the host's own path variables (`userHome`, `workspaceFolder`).

    Raises:
        Unusable: the entry has neither a command nor a URL.
    """
    raw = _flatten_zed(raw)
    converted = Converted({})
    if isinstance(raw.get("command"), str) and raw["command"]:
        _stdio(raw, converted.child)
    elif _url(raw):
        _remote(raw, converted.child, gemini)
    else:
        raise Unusable("neither a command nor a URL")
    if raw.get("disabled") is True or raw.get("enabled") is False:
        converted.child["enabled"] = False
    _tool_filter(raw, converted.child)
    unknown = sorted(set(raw) - _KNOWN)
    if unknown:
        converted.notes.append(f"not imported: {', '.join(unknown)}")
    converted.child = _substitute(converted.child, variables, converted.notes)
    return converted


def _flatten_zed(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    command = raw.get("command")
    if not isinstance(command, dict):
        return raw
    flat = {k: v for k, v in raw.items() if k != "command"}
    return {**flat, "command": command.get("path"), "args": command.get("args", []), "env": command.get("env", {})}


def _url(raw: Mapping[str, Any]) -> str | None:
    return next((str(raw[k]) for k in ("url", "serverUrl", "httpUrl") if isinstance(raw.get(k), str) and raw[k]), None)


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _stdio(raw: Mapping[str, Any], child: dict[str, Any]) -> None:
    child["command"] = str(raw["command"])
    args = raw.get("args")
    if isinstance(args, list) and args:
        child["args"] = [str(a) for a in args]
    if _strings(raw.get("env")):
        child["env"] = _strings(raw.get("env"))
    if isinstance(raw.get("cwd"), str) and raw["cwd"]:
        child["cwd"] = raw["cwd"]
    passed = raw.get("env_vars")
    if isinstance(passed, list) and passed:
        child["inherit_env"] = [str(name) for name in passed]


def _remote(raw: Mapping[str, Any], child: dict[str, Any], gemini: bool) -> None:
    child["url"] = _url(raw)
    kind = raw.get("type") or raw.get("transport")
    if isinstance(kind, str) and kind in _TRANSPORTS:
        child["transport"] = _TRANSPORTS[kind]
    elif "httpUrl" in raw:
        child["transport"] = "streamable-http"
    elif gemini and "url" in raw:
        child["transport"] = "sse"  # Gemini CLI: `url` is an SSE endpoint, `httpUrl` a Streamable HTTP one
    headers = {**_strings(raw.get("headers")), **_strings(raw.get("http_headers"))}
    headers |= {name: f"${{{var}}}" for name, var in _strings(raw.get("env_http_headers")).items()}
    if isinstance(raw.get("bearer_token_env_var"), str):
        headers["Authorization"] = f"Bearer ${{{raw['bearer_token_env_var']}}}"
    if headers:
        child["headers"] = headers


def _tool_filter(raw: Mapping[str, Any], child: dict[str, Any]) -> None:
    lists = {
        "allow": raw.get("includeTools") or raw.get("enabled_tools"),
        "deny": raw.get("excludeTools") or raw.get("disabled_tools"),
    }
    tools = {kind: [str(t) for t in names] for kind, names in lists.items() if isinstance(names, list) and names}
    if tools:
        child["tools"] = tools


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """`value` with `change` applied to every string in it."""
    if isinstance(value, dict):
        return {k: _map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, change) for v in value]
    return change(value) if isinstance(value, str) else value


def _substitute(value: Any, variables: Mapping[str, str], notes: list[str]) -> Any:
    """`${env:NAME}` -> `${NAME}`, the host's path variables by their paths, in every string of `value`."""

    def one(text: str) -> str:
        text = _ENV_REFERENCE.sub(r"${\1}", text)
        for name, path in variables.items():
            text = text.replace(f"${{{name}}}", path)
        for unresolved in re.findall(r"\$\{(workspaceFolder|userHome)\}", text):
            notes.append(f"uses ${{{unresolved}}}, which only its host can fill: replace it in servers.yaml")
        return text

    return _map_strings(value, one)


def hide_secrets(
    prefix: str, converted: Converted, store: SecretStore, inputs: Mapping[str, str] | None = None
) -> None:
    """Replace every secret of the child by a `${VAR}` whose value goes to `store` (named in `converted.secrets`),
    and every host prompt (`${input:ID}`, described in `inputs`) by a `${VAR}` the person fills in."""
    child = converted.child
    label = variable_name(prefix)
    _fill_inputs(child, label, store, converted, inputs or {})
    for name, value in list(child.get("env", {}).items()):
        if secret_env(name, value):
            child["env"][name] = _reference(store, converted, value, name, variable_name(prefix, name))
        else:
            child["env"][name] = _hide_embedded(value, label, store, converted)
    for name, value in list(child.get("headers", {}).items()):
        if secret_header(name, value):
            child["headers"][name] = _hide_header(name, value, prefix, store, converted)
    if "args" in child:  # `--token=...`, the word after `--api-key`, `--header "Authorization: ..."` (mcp-remote)
        args = child["args"]
        child["args"] = [
            _hide_arg(arg, args[i - 1] if i > 0 else "", i, label, store, converted) for i, arg in enumerate(args)
        ]
    if "url" in child:
        child["url"] = _hide_embedded(child["url"], label, store, converted)


def _fill_inputs(
    child: dict[str, Any], label: str, store: SecretStore, converted: Converted, inputs: Mapping[str, str]
) -> None:
    """`${input:ID}` -> `${LABEL_ID}`, in every string of the child: the host would have asked for the value, the
    hub cannot, so the env file gets the variable empty under a note saying what to fill in."""

    def fill(match: re.Match[str]) -> str:
        key = match.group(1).rsplit(":", 1)[-1]  # `${input:id}`, or `${input:command:id}`
        what = inputs.get(key) or f"the value its host asked for as ${{input:{key}}}"
        own = variable_name(key)  # `github-token` of the server `github` is GITHUB_TOKEN, not GITHUB_GITHUB_TOKEN
        var = store.placeholder(what, own if own.startswith(f"{label}_") else variable_name(label, key))
        note = f"fill in {var} in the env file ({what})"
        if note not in converted.notes:
            converted.notes.append(note)
        return f"${{{var}}}"

    child.update(_map_strings(child, lambda text: _INPUT.sub(fill, text)))


def _hide_embedded(text: str, label: str, store: SecretStore, converted: Converted) -> str:
    """The secrets inside a longer value: a URL's password (`postgresql://admin:PW@db/app`) or a user name that is
    a token (`https://TOKEN@host`), a URL query's secret parameter, a connection string's `Password=...`."""

    def userinfo(match: re.Match[str]) -> str:
        password, user = match.group("password"), match.group("user")
        if password and not is_reference(password):
            var = variable_name(label, "password")
            return match.group("start") + ":" + _reference(store, converted, password, var) + "@"
        if password is None and looks_secret(user):
            start = match.group("start")[: -len(user)]
            return start + _reference(store, converted, user, variable_name(label, "token")) + "@"
        return match.group(0)

    def query(match: re.Match[str]) -> str:
        separator, name, value = match.groups()
        if not value or is_reference(value) or not (secret_name(name) or looks_secret(value)):
            return match.group(0)
        return f"{separator}{name}=" + _reference(store, converted, value, variable_name(label, name))

    def field_(match: re.Match[str]) -> str:
        if is_reference(match.group(2)):
            return match.group(0)
        return match.group(1) + _reference(store, converted, match.group(2), variable_name(label, "password"))

    if "://" in text:
        text = URL_USERINFO.sub(userinfo, text)
        text = _QUERY.sub(query, text)
    return CONNECTION_PASSWORD.sub(field_, text)


def _reference(store: SecretStore, converted: Converted, value: str, *names: str) -> str:
    var = store.put(value, *names)
    if var not in converted.secrets:
        converted.secrets.append(var)
    return f"${{{var}}}"


def _hide_header(name: str, value: str, label: str, store: SecretStore, converted: Converted) -> str:
    shown, credential = split_scheme(value)
    return shown + _reference(store, converted, credential, variable_name(label, "token" if shown else name))


def _hide_arg(arg: str, flag: str, index: int, label: str, store: SecretStore, converted: Converted) -> str:
    name, equals, value = arg.partition("=")
    if equals and name in _HEADER_FLAGS:  # `--header=Authorization: Bearer ...`
        return f"{name}=" + _hide_arg(value, name, index, label, store, converted)
    header = _HEADER_ARG.match(arg)
    if header and flag in _HEADER_FLAGS and secret_header(header.group(1), header.group(2)):
        space = " " if arg[len(header.group(1)) + 1 :].startswith(" ") else ""
        hidden = _hide_header(header.group(1), header.group(2).strip(), label, store, converted)
        return f"{header.group(1)}:{space}{hidden}"
    if equals and name.startswith("-") and value and secret_name(name) and not is_reference(value):
        return f"{name}=" + _reference(store, converted, value, variable_name(label, name))
    if flag.startswith("-") and "=" not in flag and secret_name(flag) and arg and not is_reference(arg):
        return _reference(store, converted, arg, variable_name(label, flag))
    if header and secret_header(header.group(1), header.group(2)) and secret_name(header.group(1)):
        return f"{header.group(1)}: " + _hide_header(header.group(1), header.group(2), label, store, converted)
    if looks_secret(arg):
        return _reference(store, converted, arg, variable_name(label, "arg", str(index + 1)))
    return _hide_embedded(arg, label, store, converted)


def identity(child: Mapping[str, Any]) -> tuple[Any, ...]:
    """What makes two children the same server: the command and its arguments, or the URL."""
    if child.get("command"):
        return ("command", child["command"], tuple(child.get("args") or ()))
    return ("url", child.get("url"))
