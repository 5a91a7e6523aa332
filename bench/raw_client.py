"""A host with no SDK: newline-delimited JSON-RPC over a server's stdin/stdout, blocking reads, `json.loads`.

The SDK's client validates each message it reads; for a 142 KB listing that costs it ~15 ms, more than the hub takes
to answer. This client measures a request as a host written in any language would see it at the least: from
the request's write to its answer read whole and decoded. Every read is bounded (`select` with a timeout).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

from bench import procs

PROTOCOL = "2025-11-25"


class RawStdio:
    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str] | None, errlog: Any, limit: float) -> None:
        # A process group of its own: `procs.stop` signals the group, and without one its TERM never arrived.
        self.process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
            bufsize=0,
            start_new_session=True,
        )
        self.pid = self.process.pid
        self._limit = limit
        self._ids = 0
        self._pending = b""

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request; its answer's result (notifications and other lines before it are skipped)."""
        self._ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._ids, "method": method}
        if params is not None:
            message["params"] = params
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        while True:
            answer = json.loads(self._line())
            if answer.get("id") == self._ids and "method" not in answer:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer["result"]
                return result

    def notify(self, method: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")

    def initialize(self) -> None:
        info = {"name": "bench-raw-client", "version": "1"}
        self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": info})
        self.notify("notifications/initialized")

    def _line(self) -> bytes:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + self._limit
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError(f"no answer within {self._limit}s")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise EOFError("the server closed its stdout")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # the spec's first step; procs.stop then TERMs and KILLs if need be
        procs.stop(self.process)


def listing_until(client: RawStdio, expected: int, limit: float) -> dict[str, Any]:
    """tools/list until it has `expected` tools (a hub whose children are still starting has fewer); bounded."""
    deadline = time.monotonic() + limit
    while True:
        listing = client.request("tools/list")
        if len(listing.get("tools") or ()) >= expected or time.monotonic() > deadline:
            return listing
        time.sleep(0.05)


def timed_lists(clients: list[RawStdio], reps: int) -> list[list[float]]:
    """Seconds per tools/list (write → answer read and decoded), for each client, alternating A B / B A."""
    samples: list[list[float]] = [[] for _ in clients]
    order = list(range(len(clients)))
    for rep in range(reps):
        for i in order if rep % 2 == 0 else order[::-1]:
            began = time.perf_counter()
            clients[i].request("tools/list")
            samples[i].append(time.perf_counter() - began)
    return samples
