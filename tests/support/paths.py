"""Where things are: the repository, and the pinned reference server from npm."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
EVERYTHING = REPO / "tests" / "npm" / "node_modules" / ".bin" / "mcp-server-everything"
