"""The children a hub runs in the tests, and the servers.yaml that declares them."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import EVERYTHING, REPO


def everything_server() -> dict[str, Any]:
    """The pinned reference server from npm (installed by .ci/run from tests/npm/package.json)."""
    if not EVERYTHING.exists():
        message = f"{EVERYTHING} is missing: run `npm ci --prefix tests/npm` (as .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return {"command": str(EVERYTHING), "args": ["stdio"]}


def python_child(module: str, *args: str, **extra: Any) -> dict[str, Any]:
    """A child of our own under tests/children, run with this interpreter."""
    return {"command": sys.executable, "args": ["-m", module, *args], "cwd": str(REPO), **extra}


def write_config(directory: Path, servers: dict[str, Any], hub: dict[str, Any] | None = None) -> Path:
    path = directory / "servers.yaml"
    path.write_text(yaml.safe_dump({"hub": hub or {}, "servers": servers}, sort_keys=False))
    return path
