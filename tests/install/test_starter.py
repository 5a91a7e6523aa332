"""hub init's servers.yaml: valid, commented, naming the hosts' servers that hub import would bring in."""

from __future__ import annotations

import json
from pathlib import Path

from hub.config.loader import parse_config
from hub.install.clients import Paths
from hub.install.starter import TEMPLATE, find_imports, init_text


def test_the_hosts_servers_are_found_but_not_the_hub_itself(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".cursor").mkdir(parents=True)
    (project / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"gh": {"command": "gh-mcp"}}}))
    desktop = home / ".config" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    hub = {"command": "/opt/hub/bin/hub", "args": ["serve", "--config", "/x/servers.yaml"]}
    desktop.write_text(json.dumps({"mcpServers": {"hub": hub, "pg": {"command": "pg-mcp"}}}))
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps({"mcpServers": {"hub": hub}}))  # only the hub
    found = find_imports(Paths(home, "linux", {}, project))
    assert [(f.client, f.scope, f.names, f.command) for f in found] == [
        ("claude-desktop", "user", ["pg"], "hub import claude-desktop"),
        ("cursor", "project", ["gh"], "hub import cursor --scope project"),
    ]
    text = init_text(found, project / "servers.yaml")
    assert text.startswith(TEMPLATE)
    assert text.endswith("#   hub import cursor --scope project        gh\n")
    assert list(parse_config(text, project / "servers.yaml", {}).servers) == ["time"]
    assert init_text([], project / "servers.yaml") == TEMPLATE
