"""The hub as a real subprocess (`hub serve --http`), and other processes a test runs: each wait bounded, each
process stopped even when the test is cancelled."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from tests.support.paths import REPO
from tests.support.system import free_port
from tests.support.waits import WAIT


def serve_http_command(config: Path, port: int, log_file: Path, *extra: str) -> list[str]:
    """The command line of `hub serve --http` on 127.0.0.1:`port`."""
    return [
        sys.executable,
        "-m",
        "hub",
        "serve",
        "--config",
        str(config),
        "--http",
        f"127.0.0.1:{port}",
        "--log-file",
        str(log_file),
        *extra,
    ]


async def run_bounded(argv: list[str], limit: float = 120.0, **options: Any) -> subprocess.CompletedProcess[bytes]:
    """`anyio.run_process(argv, check=False, **options)`, failing the test if it takes over `limit` seconds."""
    with anyio.fail_after(limit):
        return await anyio.run_process(argv, check=False, **options)


async def stop_process(process: Process, grace: float = 15.0) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `grace` seconds; the wait for its exit is bounded and
    shielded, so that a test being cancelled still leaves no process behind."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.terminate()
            with anyio.move_on_after(grace):
                await process.wait()
        if process.returncode is None:
            with suppress(ProcessLookupError):
                process.kill()
            with anyio.move_on_after(5):
                await process.wait()


async def wait_listening(process: Process, port: int, limit: float = WAIT) -> None:
    """Until something accepts connections on 127.0.0.1:`port`; fails if `process` exits first, or after `limit`."""
    with anyio.fail_after(limit):
        while True:
            assert process.returncode is None, f"the hub exited with {process.returncode} before listening"
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)  # another process binds it; no event exists
                continue
            await stream.aclose()
            return


@asynccontextmanager
async def serve_hub_http(config: Path, log_file: Path, *extra: str, port: int | None = None) -> AsyncIterator[str]:
    """`hub serve --http` as a real subprocess (on `port`, else a free one); yields its /mcp URL once it accepts
    connections (bounded)."""
    port = port or free_port()
    with log_file.with_suffix(".err").open("wb") as err:
        process = await anyio.open_process(
            serve_http_command(config, port, log_file, *extra), cwd=REPO, stdout=subprocess.DEVNULL, stderr=err
        )
        try:
            await wait_listening(process, port)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            await stop_process(process)
