"""Real-world host config files for the installer and import tests, laid out in a temporary home directory.

Each is shaped like what the host writes or its documentation shows: other servers, other settings, comments where
the format has them (Zed's and VS Code's JSON with comments, Codex's TOML), tabs and a trailing comma (VS Code),
Windows line ends (Windsurf on Windows).
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hub.install.clients import Paths

CLAUDE_DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop", "/Users/me/Downloads"]
    }
  },
  "globalShortcut": "Alt+Space"
}
"""

CLAUDE_CODE = """{
  "numStartups": 42,
  "installMethod": "npm-global",
  "autoUpdates": true,
  "projects": {
    "/home/me/src/app": {
      "allowedTools": [],
      "mcpServers": {},
      "hasTrustDialogAccepted": true
    }
  },
  "mcpServers": {
    "sentry": {
      "type": "http",
      "url": "https://mcp.sentry.dev/mcp"
    }
  },
  "userID": "0f3c9d1e2b"
}
"""

CURSOR = """{
  "mcpServers": {
    "playwright": {
      "command": "npx",
      "args": ["@playwright/mcp@latest"]
    },
    "notion": {
      "url": "https://mcp.notion.com/mcp"
    }
  }
}
"""

VSCODE = """{
\t// MCP servers for every workspace (Ctrl+Shift+P: MCP: Open User Configuration)
\t"inputs": [
\t\t{
\t\t\t"type": "promptString",
\t\t\t"id": "github-token",
\t\t\t"description": "GitHub personal access token",
\t\t\t"password": true
\t\t}
\t],
\t"servers": {
\t\t"github": {
\t\t\t"type": "http",
\t\t\t"url": "https://api.githubcopilot.com/mcp/",
\t\t\t"headers": { "Authorization": "Bearer ${input:github-token}" }
\t\t},
\t\t/* local servers */
\t\t"fetch": { "type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"] },
\t}
}
"""

WINDSURF = (
    '{\r\n  "mcpServers": {\r\n    "brave-search": {\r\n      "command": "npx",\r\n'
    '      "args": ["-y", "@modelcontextprotocol/server-brave-search"],\r\n'
    '      "env": { "BRAVE_API_KEY": "BSAq7Zr2xW9vK4mT1nL8pY3cF6hJ0dG5" }\r\n    }\r\n  }\r\n}\r\n'
)

ZED = """// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{
  "ui_font_size": 16,
  "buffer_font_size": 15,
  "theme": {
    "mode": "system",
    "light": "One Light",
    "dark": "One Dark"
  },
  // Postgres for the agent panel
  "context_servers": {
    "postgres": {
      "source": "custom",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://localhost/mydb"],
      "env": {}
    } // read-only role
  },
  "vim_mode": true
}
"""

GEMINI = """{
  "theme": "GitHub",
  "selectedAuthType": "oauth-personal",
  "mcpServers": {
    "context7": {
      "httpUrl": "https://mcp.context7.com/mcp",
      "headers": {
        "CONTEXT7_API_KEY": "ctx7sk-4f8a2b9c-1d3e-4f5a-9b8c-7d6e5f4a3b2c"
      }
    }
  }
}
"""

CODEX = """# Codex CLI configuration
model = "gpt-5-codex"
approval_policy = "on-request"  # ask before running commands

[mcp_servers.docs]
command = "npx"
args = ["-y", "@upstash/context7-mcp"]

[mcp_servers.docs.env]
CONTEXT7_API_KEY = "ctx7sk-0a1b2c3d4e5f6a7b8c9d"

[profiles.fast]
model = "gpt-5-mini"  # cheaper
"""


def strip_jsonc(text: str) -> Any:
    """JSON with comments read the way its hosts read it: comments and trailing commas dropped, then `json`.

    Written apart from hub.install.jsonc on purpose: the installer's output is checked by another reader."""
    token = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.DOTALL)
    bare = token.sub(lambda m: m.group(1) or "", text)
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", bare))


@dataclass(frozen=True)
class Host:
    """A client's file on one platform: where it is under the home directory, what it holds, how it is read."""

    client: str
    platform: str
    relative: str  # under the home directory
    text: str
    read: Callable[[str], Any]
    key: str
    env: tuple[tuple[str, str], ...] = ()

    @property
    def id(self) -> str:
        return f"{self.client}-{self.platform}"

    def paths(self, root: Path) -> Paths:
        home = root / "home"
        env = {name: value.replace("$HOME", str(home)) for name, value in self.env}
        return Paths(home=home, platform=self.platform, env=env, cwd=root / "project")

    def lay_out(self, root: Path) -> Path:
        file = root / "home" / self.relative
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(self.text.encode())
        (root / "project").mkdir(exist_ok=True)
        return file


def _toml(text: str) -> Any:
    return tomllib.loads(text)


HOSTS = [
    Host(
        "claude-desktop",
        "darwin",
        "Library/Application Support/Claude/claude_desktop_config.json",
        CLAUDE_DESKTOP,
        json.loads,
        "mcpServers",
    ),
    Host(
        "claude-desktop",
        "win32",
        "AppData/Roaming/Claude/claude_desktop_config.json",
        CLAUDE_DESKTOP,
        json.loads,
        "mcpServers",
        (("APPDATA", "$HOME/AppData/Roaming"),),
    ),
    Host(
        "claude-desktop", "linux", ".config/Claude/claude_desktop_config.json", CLAUDE_DESKTOP, json.loads, "mcpServers"
    ),
    Host("claude-code", "linux", ".claude.json", CLAUDE_CODE, json.loads, "mcpServers"),
    Host("cursor", "win32", ".cursor/mcp.json", CURSOR, json.loads, "mcpServers"),
    Host(
        "vscode", "linux", "xdg/Code/User/mcp.json", VSCODE, strip_jsonc, "servers", (("XDG_CONFIG_HOME", "$HOME/xdg"),)
    ),
    Host("vscode", "darwin", "Library/Application Support/Code/User/mcp.json", VSCODE, strip_jsonc, "servers"),
    Host("windsurf", "win32", ".codeium/windsurf/mcp_config.json", WINDSURF, json.loads, "mcpServers"),
    Host("zed", "linux", ".config/zed/settings.json", ZED, strip_jsonc, "context_servers"),
    Host("zed", "darwin", ".config/zed/settings.json", ZED, strip_jsonc, "context_servers"),
    Host(
        "zed",
        "win32",
        "AppData/Roaming/Zed/settings.json",
        ZED,
        strip_jsonc,
        "context_servers",
        (("APPDATA", "$HOME/AppData/Roaming"),),
    ),
    Host("gemini", "darwin", ".gemini/settings.json", GEMINI, json.loads, "mcpServers"),
    Host("codex", "linux", ".codex/config.toml", CODEX, _toml, "mcp_servers"),
    Host(
        "codex", "win32", "codex-home/config.toml", CODEX, _toml, "mcp_servers", (("CODEX_HOME", "$HOME/codex-home"),)
    ),
]


# Claude Desktop's file with a secret of each shape `hub import` moves to servers.env (and one entry it cannot run).
GITHUB_PAT = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
LINEAR_KEY = "lin_api_9fKq2Lm7Xw3Rt8Yb1Nc6Vd0Zp4Hs5Gj"
STRIPE_KEY = "sk_live_51Hh3kLm9QwErTyUiOp0AsDf"
DB_PASSWORD = "correct horse battery staple"
QUERY_KEY = "a8f3k2Lq9ZxP0wR7tY5uV1nM4bC6dE8g"
OPENAI = "sk-proj-Xw3Rt8Yb1Nc6Vd0Zp4Hs5Gj9fKq2Lm7"
SECRETS = (GITHUB_PAT, LINEAR_KEY, STRIPE_KEY, DB_PASSWORD, QUERY_KEY, OPENAI)

DESKTOP_WITH_SECRETS = {
    "mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "Europe/Paris"]},
        "GitHub": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": GITHUB_PAT, "GITHUB_TOOLSETS": "repos,issues"},
        },
        "linear": {
            "command": "npx",
            "args": [
                "-y",
                "mcp-remote",
                "https://mcp.linear.app/sse",
                "--header",
                f"Authorization: Bearer {LINEAR_KEY}",
            ],
        },
        "stripe": {"command": "npx", "args": ["-y", "@stripe/mcp", "--tools=all", f"--api-key={STRIPE_KEY}"]},
        "postgres": {"command": "pg-mcp", "env": {"PGPASSWORD": DB_PASSWORD, "PGHOST": "db.internal"}},
        "search": {"url": f"https://search.example.com/mcp?api_key={QUERY_KEY}&region=eu", "type": "http"},
        "openai": {"url": "https://llm.example.com/mcp", "headers": {"Authorization": f"Bearer {OPENAI}"}},
        "hub": {"command": "/opt/hub/.venv/bin/hub", "args": ["serve", "--config", "/home/me/servers.yaml"]},
        "broken": {"args": ["no command"]},
    },
    "globalShortcut": "Alt+Space",
}


def desktop(root: Path, document: dict[str, Any] = DESKTOP_WITH_SECRETS) -> tuple[Paths, Path]:
    paths = Paths(root / "home", "linux", {}, root / "project")
    file = root / "home" / ".config" / "Claude" / "claude_desktop_config.json"
    file.parent.mkdir(parents=True)
    (root / "project").mkdir()
    file.write_text(json.dumps(document, indent=2) + "\n")
    return paths, file
