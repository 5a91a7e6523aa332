"""`hub init`: a first servers.yaml, commented, and what `hub import` could bring in from the hosts on this machine.

The file holds one server that needs nothing but the hub's own install, and comments that say how to add more;
below them, one comment line per host config (user or project) that lists servers, with the command that imports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hub.install.clients import CLIENTS, Paths, runs_hub
from hub.install.edit import EditError
from hub.install.importer import open_source, validate_servers

TEMPLATE = """\
# servers.yaml: the MCP servers this hub serves, each under a name that prefixes its tools (written by hub init).
# Every key is documented in docs/configuration.md; the hub re-reads this file when it changes.
#
# Add a server:     hub add NAME -- COMMAND [ARGS...]      (a local server over stdio)
#                   hub add NAME --url URL [--header K=V]  (a remote server)
#                   hub add --registry NAME                (from the MCP Registry)
# Remove one:       hub remove NAME
# Secrets go to servers.env beside this file (mode 0600, kept out of git); this file only names them: ${VAR}.
servers:
  # Current time and time zone conversion (mcp-server-time on PyPI, installed with the hub).
  time:
    command: mcp-server-time
    args: ["--local-timezone", "${HUB_TIMEZONE:-UTC}"]
"""


@dataclass(frozen=True)
class Found:
    """A host config with servers the hub could import: the client, its scope, the file and the entries' names."""

    client: str
    scope: str
    file: Path
    names: list[str]

    @property
    def command(self) -> str:
        return f"hub import {self.client}" + (" --scope project" if self.scope == "project" else "")


def find_imports(paths: Paths) -> list[Found]:
    """Every client's user and project file that lists servers other than the hub itself."""
    found = []
    for name, client in CLIENTS.items():
        for scope in ("user", "project"):
            try:
                source = open_source(name, paths, scope)
            except (EditError, ValueError):  # no file, unreadable, or no such scope for this client
                continue
            names = [entry for entry, raw in source.entries.items() if not runs_hub(raw)]
            if names:
                found.append(Found(client.name, scope, source.target.file, names))
    return found


def init_text(found: list[Found], into: Path) -> str:
    """The new servers.yaml: the template, then a comment naming what each host has and how to import it.

    Raises:
        EditError: the result is not a valid configuration (a bug in the template).
    """
    text = TEMPLATE
    if found:
        text += "\n# Servers your hosts already have (bring them in, secrets to servers.env, with the command):\n"
        text += "".join(f"#   {f.command:<40} {', '.join(f.names)}\n" for f in found)
    validate_servers(text, into, "the new servers.yaml")
    return text
