"""Registration only: the integration marker, and the fixtures of tests/support/fixtures.py. What tests share is
imported from tests/support/ (tests/README.md)."""

from __future__ import annotations

import pytest

from tests.support.fixtures import anyio_backend, fake_keyring, restore_logging
from tests.support.paths import REPO

__all__ = ["anyio_backend", "fake_keyring", "restore_logging"]

# Tests under these folders spawn processes (the hub, children): they carry the integration marker, so that
# `pytest -m "not integration"` is the seconds-long suite.
SPAWNING = ("integration", "faults", "conformance", "fuzz")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.relative_to(REPO / "tests").parts[0] in SPAWNING:
            item.add_marker(pytest.mark.integration)
