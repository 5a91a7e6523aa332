"""hub.cli.start: what a stdio hub loads to start. Packages only some hubs use stay out of everyone's start-up:
httpx2's client (URL and OAuth children, JWT), prometheus_client (the HTTP front's metrics), the SDK's package
(a schema with `x-mcp-header`). Each costs a stdio hub tens of milliseconds and megabytes before its first answer."""

from __future__ import annotations

import subprocess
import sys

# What `hub serve` over stdio imports on its way to serving (hub.cli.start.run_hub_command's stdio path).
STDIO_HUB = ("hub.cli.main", "hub.cli.start", "hub.app", "hub.serve", "hub.host.stdio", "hub.observe.tracing")
NOT_AT_START = ("httpx2", "prometheus_client", "mcp")


def test_a_stdio_hub_starts_without_the_packages_only_some_hubs_use() -> None:
    code = (
        "import importlib, sys\n"
        f"for name in {STDIO_HUB!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(name for name in {NOT_AT_START!r} if name in sys.modules))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout
