"""The fixtures tests/conftest.py registers for every test."""

from __future__ import annotations

import logging
import sys
import types
from collections.abc import Iterator

import pytest
import structlog

from hub.logfile import LogFile


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure_logging changes the process's logging; put it back for the tests that follow, and close the log
    files it opened (left open, each is a ResourceWarning whenever the collector gets to it: an error here)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.reset_defaults()
    for handler in root.handlers:
        stream = getattr(handler, "stream", None)
        if handler not in handlers and isinstance(stream, LogFile):
            stream.close()
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def fake_keyring(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[tuple[str, str], str]]:
    """A stand-in for the optional `keyring` package, in this process: the entries it holds, (service, user) ->
    token; service "broken" is a keyring that cannot be read."""
    entries: dict[tuple[str, str], str] = {}
    errors = types.ModuleType("keyring.errors")

    class KeyringError(Exception):
        pass

    errors.KeyringError = KeyringError  # type: ignore[attr-defined]
    module = types.ModuleType("keyring")

    def get_password(service: str, user: str) -> str | None:
        if service == "broken":
            raise KeyringError("no backend")
        return entries.get((service, user))

    module.get_password = get_password  # type: ignore[attr-defined]
    module.errors = errors  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "keyring", module)
    monkeypatch.setitem(sys.modules, "keyring.errors", errors)
    yield entries
