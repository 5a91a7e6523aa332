"""The fixtures tests/conftest.py registers for every test."""

from __future__ import annotations

import logging
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
