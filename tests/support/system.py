"""The machine: programs from the system's packages, and free loopback ports."""

from __future__ import annotations

import os
import shutil
import socket

import pytest


def system_tool(name: str) -> str:
    """The path of a program from the system's packages (haproxy, redis-server, ...); the test is skipped when it is
    missing, except under CI, where .ci/run installs it and its absence is a failure."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin")
    if found is None:
        message = f"{name} is not installed (.ci/run installs it from Debian's packages)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
