"""A stdio child's wire: its process, newline-delimited JSON-RPC on its pipes, and a bounded tail of its stderr.

The hub's own rather than the SDK's `stdio_client`, because a supervisor needs what that one hides: the exit code or
signal, the pid, a tail of stderr for error messages, lines over `max_result_bytes` refused as they arrive, and
tolerance of a child that prints non-JSON on stdout (logged and skipped, not fatal).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

from hub.config.schema import ServerConfig
from hub.platform.pipes import Broken, Lines, Writer
from hub.platform.processes import EXIT_GRACE, ChildProcess, describe_exit, process_spec, spawn
from hub.platform.watchdog import Watchdog
from hub.upstream.connection import Connection, Events
from hub.upstream.denials import SandboxWatch

# Lines of a child's stderr kept for error messages, and the most of one line kept or logged.
STDERR_TAIL_LINES = 20
STDERR_LINE_LIMIT = 2000
# After the process exits, how long its last output may take to be read before the connection ends.
DRAIN_AFTER_EXIT = 0.5
# After its stdout ends, how long the process may take to report its exit status (for the error message).
SETTLE_EXIT = 1.0


class StdioWire:
    """Writes a child's stdin; its stdout lines go to the connection, its stderr to the log and the tail (and, for a
    sandboxed child, to its `watch`, which logs the sandbox's denials)."""

    def __init__(self, name: str, watch: SandboxWatch | None = None) -> None:
        self.name = name
        self.watch = watch
        self.stdin: Writer | None = None
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.stdout_ended = anyio.Event()
        self._stderr = Lines(1 << 20, self._stderr_line, self._stderr_oversized)
        self._log = structlog.get_logger("hub.child").bind(child=name)

    def send(self, message: dict[str, Any], line: bytes) -> None:
        if self.stdin is None:
            raise Broken("the process is not running")
        self.stdin.write(line + b"\n")

    def negotiated(self, version: str) -> None:
        pass

    def stderr(self, chunk: bytes) -> None:
        self._stderr.feed(chunk)

    def _stderr_line(self, raw: bytes) -> None:
        line = raw[:STDERR_LINE_LIMIT].decode("utf-8", "replace").rstrip()
        if line:
            self.stderr_tail.append(line)
            self._log.info("child_stderr", line=line)
            if self.watch is not None:
                self.watch.stderr(line)

    def _stderr_oversized(self, head: bytes, tail: bytes, size: int) -> None:
        self._stderr_line(head + b" ... (%d bytes)" % size)

    def reason(self, process: ChildProcess) -> str:
        """Why the connection ended: the exit status and the last lines of stderr."""
        parts = [f"server '{self.name}' closed the connection"]
        if process.returncode is not None:
            parts.append(describe_exit(process.returncode))
        if self.stderr_tail:
            parts.append("last stderr: " + " | ".join(list(self.stderr_tail)[-5:]))
        return "; ".join(parts)


@asynccontextmanager
async def open_stdio(
    name: str, config: ServerConfig, events: Events, watchdog: Watchdog, tg: TaskGroup
) -> AsyncIterator[Connection]:
    """Start the child's process and yield its connection; leaving stops the process (bounded).

    Raises:
        OSError: the command or working directory does not exist or cannot be run.
    """
    assert config.command is not None
    spec = process_spec(
        config.command, config.args, config.env, config.inherit_env, config.cwd, None, config.grants(), name
    )
    watch = None if spec.exposure is None else SandboxWatch(name, spec.exposure)
    wire = StdioWire(name, watch)
    process = await spawn(spec, watchdog.mark)
    watchdog.add(process.pid)
    connection = Connection(name, wire, events, watch)
    limit = config.max_result_bytes
    lines = Lines(limit, connection.receive, lambda head, tail, size: connection.oversized(head, tail, size, limit))
    try:
        wire.stdin = process.attach(tg, lines.feed, wire.stderr, wire.stdout_ended.set)
        # A descendant holding stdout open must not keep requests waiting: they fail once the child has exited.
        tg.start_soon(_end_after, connection, process, wire, process.exited, wire.stdout_ended, DRAIN_AFTER_EXIT)
        tg.start_soon(_end_after, connection, process, wire, wire.stdout_ended, process.exited, SETTLE_EXIT)
        yield connection
    finally:
        # Stopped by the hub (a reload, the hub's own stop) unless the process ended first: requests still in flight
        # are answered now, before the child answers them itself as it sees its stdin close.
        connection.ended(f"server '{name}' was stopped by the hub")
        # A process that never finished its handshake has no session to end cleanly: it is not given the grace to
        # exit on its own (a hung one would hold a one-shot command, or the next attempt, for nothing).
        await process.stop(EXIT_GRACE if connection.server_info else 0.0)
        watchdog.discard(process.pid)


async def _end_after(
    connection: Connection, process: ChildProcess, wire: StdioWire, first: anyio.Event, then: anyio.Event, grace: float
) -> None:
    """Once `first` is set, and `then` too or `grace` has passed, the connection ends with the process's reason."""
    await first.wait()
    with anyio.move_on_after(grace):
        await then.wait()
    connection.ended(wire.reason(process))
