"""The fronts see the hub through one interface (hub.host.port.HubPort): no module of hub/host imports the app, not
even under TYPE_CHECKING or inside a function, and the app's Hub has every member the interface names (mypy checks
their types where hub/serve.py and the command line hand a Hub to a front)."""

from __future__ import annotations

import ast
import io
from pathlib import Path

from hub.app import Hub
from hub.config import parse_config
from hub.config.schema import LoadedConfig
from hub.host.port import HubPort
from hub.logs import CallLog

HOST = Path(__file__).resolve().parents[2] / "hub" / "host"


def _imported(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def test_no_host_module_imports_the_app() -> None:
    offenders = {
        path.name: sorted(m for m in _imported(path) if m == "hub.app" or m.startswith("hub.app."))
        for path in sorted(HOST.glob("*.py"))
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_a_hub_has_every_member_of_the_port() -> None:
    path = Path("servers.yaml")
    hub = Hub(LoadedConfig(path, parse_config("servers: {}\n", path, {})), call_log=CallLog(io.StringIO()))
    members = _members(HubPort)
    assert {"settings", "route", "cancel", "readiness", "reload_from_disk"} <= members
    assert sorted(name for name in members if not hasattr(hub, name)) == []
