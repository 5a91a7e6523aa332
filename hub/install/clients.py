"""The hosts `hub install` and `hub import` know (`CLIENTS`): where each keeps its MCP servers for each scope, in
which format, and what the hub's entry looks like there. Every location is computed from a `Paths`, never from the
running system, so tests can lay out a Windows or macOS home in a temporary directory. Every JSON file is edited as
JSON with comments (hub.install.jsonc), which keeps plain JSON as it was too.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Scope = Literal["user", "project"]
SCOPES: tuple[Scope, ...] = ("user", "project")


@dataclass(frozen=True)
class Paths:
    """The system as far as host config files go: whose home, which platform, which environment, which project."""

    home: Path
    platform: str  # "linux", "darwin" or "win32" (sys.platform; anything else is laid out as Linux)
    env: Mapping[str, str]
    cwd: Path

    @classmethod
    def current(cls) -> Paths:
        return cls(Path.home(), sys.platform, dict(os.environ), Path.cwd())

    def variable(self, name: str) -> Path | None:
        """The directory an environment variable names, if it is absolute."""
        value = self.env.get(name, "")
        return Path(value) if value and Path(value).is_absolute() else None

    def app_data(self) -> Path:
        """Where desktop applications keep per-user settings: Application Support on macOS, %APPDATA% on Windows,
        $XDG_CONFIG_HOME (else ~/.config) on Linux."""
        if self.platform == "darwin":
            return self.home / "Library" / "Application Support"
        if self.platform == "win32":
            return self.variable("APPDATA") or self.home / "AppData" / "Roaming"
        return self.variable("XDG_CONFIG_HOME") or self.home / ".config"

    def which(self, program: str) -> str | None:
        """`program` as found on this environment's PATH (None when there is no PATH)."""
        path = self.env.get("PATH")
        return shutil.which(program, path=path) if path else None


def _home(relative: str) -> Callable[[Paths], Path]:
    return lambda paths: paths.home / relative


def _app_data(relative: str) -> Callable[[Paths], Path]:
    return lambda paths: paths.app_data() / relative


def _zed_settings(paths: Paths) -> Path:
    if paths.platform == "darwin":  # Zed keeps ~/.config/zed on macOS too, not Application Support
        return paths.home / ".config" / "zed" / "settings.json"
    if paths.platform == "win32":
        return paths.app_data() / "Zed" / "settings.json"
    return paths.app_data() / "zed" / "settings.json"


def _plain(command: list[str]) -> dict[str, Any]:
    return {"command": command[0], "args": command[1:]}


def _typed(command: list[str]) -> dict[str, Any]:
    return {"type": "stdio", **_plain(command)}


def _zed(command: list[str]) -> dict[str, Any]:
    return {"source": "custom", "enabled": True, **_plain(command)}


@dataclass(frozen=True)
class Client:
    """One host: its config file for each scope, where its servers are in it, and the hub's entry there."""

    name: str
    title: str
    key: tuple[str, ...]  # the path of the servers' mapping from the top of the file
    user_file: Callable[[Paths], Path]
    project_file: str | None  # relative to the project directory; None: the client has no project scope
    entry: Callable[[list[str]], dict[str, Any]]  # the hub's entry for a command line
    toml: bool = False
    cli: str | None = None  # a command that edits the file itself, used when it is on PATH (Claude Code's `claude`)
    # Started from a terminal, so the hub it starts has the shell's environment and directory (hub.install.reach);
    # a desktop application's has the desktop session's.
    terminal: bool = False

    def file(self, paths: Paths, scope: Scope) -> Path:
        """The config file of this scope.

        Raises:
            ValueError: the client has no project scope.
        """
        if scope == "user":
            return self.user_file(paths)
        if self.project_file is None:
            raise ValueError(f"{self.name} has no project scope; use --scope user")
        return paths.cwd / self.project_file


CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (
        Client(
            "claude-desktop",
            "Claude Desktop",
            ("mcpServers",),
            _app_data("Claude/claude_desktop_config.json"),
            None,
            _plain,
        ),
        Client(
            "claude-code",
            "Claude Code",
            ("mcpServers",),
            lambda p: (p.variable("CLAUDE_CONFIG_DIR") or p.home) / ".claude.json",
            ".mcp.json",
            _typed,
            cli="claude",
            terminal=True,
        ),
        Client("cursor", "Cursor", ("mcpServers",), _home(".cursor/mcp.json"), ".cursor/mcp.json", _plain),
        Client("vscode", "VS Code", ("servers",), _app_data("Code/User/mcp.json"), ".vscode/mcp.json", _typed),
        Client("windsurf", "Windsurf", ("mcpServers",), _home(".codeium/windsurf/mcp_config.json"), None, _plain),
        Client("zed", "Zed", ("context_servers",), _zed_settings, ".zed/settings.json", _zed),
        Client(
            "gemini",
            "Gemini CLI",
            ("mcpServers",),
            _home(".gemini/settings.json"),
            ".gemini/settings.json",
            _plain,
            terminal=True,
        ),
        Client(
            "codex",
            "Codex",
            ("mcp_servers",),
            lambda p: (p.variable("CODEX_HOME") or p.home / ".codex") / "config.toml",
            ".codex/config.toml",
            _plain,
            toml=True,
            terminal=True,
        ),
    )
}

# A team hub at a URL, for the hosts that take a remote entry in their file, with the token read from an environment
# variable by the host itself (never written into the file): name -> (url, variable) -> entry. The others (Claude
# Desktop skips remote entries; Zed and Gemini expand no variables in headers) get `hub connect URL --token-env VAR`;
# so does every host when the token is in the OS keyring (`--keyring`), which no host reads itself.
REMOTE: dict[str, Callable[[str, str], dict[str, Any]]] = {
    "claude-code": lambda url, var: {"type": "http", "url": url, "headers": {"Authorization": f"Bearer ${{{var}}}"}},
    "cursor": lambda url, var: {"url": url, "headers": {"Authorization": f"Bearer ${{env:{var}}}"}},
    "vscode": lambda url, var: {"type": "http", "url": url, "headers": {"Authorization": f"Bearer ${{env:{var}}}"}},
    "windsurf": lambda url, var: {"serverUrl": url, "headers": {"Authorization": f"Bearer ${{env:{var}}}"}},
    "codex": lambda url, var: {"url": url, "bearer_token_env_var": var},
}


def connect_command(executable: list[str], url: str, token: list[str]) -> list[str]:
    """The command line of `hub connect` (hub.connect: a stdio host to a team hub); `token` says where its token
    is (`--token-env VAR`, or `--keyring SERVICE [--keyring-user USER]`), never what it is."""
    return [*executable, "connect", url, *token]


# A file given by path to `hub import`: which entry shape goes with which key (for --consolidate).
ENTRY_FOR_KEY: dict[str, Callable[[list[str]], dict[str, Any]]] = {
    "mcpServers": _plain,
    "servers": _typed,
    "context_servers": _zed,
    "mcp_servers": _plain,
}


def hub_executable(executable: str | None = None, windows: bool = sys.platform == "win32") -> list[str]:
    """The command that runs this hub, by absolute path (a host starts it with a PATH of its own): the `hub` script
    next to the interpreter, else the interpreter with `-m hub`. Not resolved: a venv's interpreter is a link, and
    only the link's directory has the venv's packages."""
    python = os.path.abspath(executable or sys.executable)
    script = Path(python).parent / ("hub.exe" if windows else "hub")
    return [str(script)] if script.is_file() else [python, "-m", "hub"]


def serve_command(executable: list[str], config: Path) -> list[str]:
    """The command line a host runs: the hub serving `config` (an absolute path) on stdio."""
    return [*executable, "serve", "--config", str(config)]


def runs_hub(entry: Mapping[str, Any]) -> bool:
    """Whether a host's entry starts a hub: `.../hub serve ...` or `.../python -m hub serve ...` (any name)."""
    command, args = entry.get("command"), entry.get("args")
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    program = Path(command.replace("\\", "/")).name.lower().removesuffix(".exe")
    if program == "hub":
        return args[:1] in (["serve"], ["connect"])
    return program.startswith("python") and args[:2] == ["-m", "hub"] and args[2:3] in (["serve"], ["connect"])
