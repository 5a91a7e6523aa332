"""calls/s over HTTP with a host that costs little CPU: the hub's HTTP front against a direct HTTP child.

    python -m bench.raw_http                   # 5 alternating rounds of 1,500 echo calls, 64 in flight, SDK child
    python -m bench.raw_http --rounds 3 --out F    # 3 rounds; the figures also written to F (JSON)

The bench's own client (the SDK's) takes a full core at 64 calls in flight, so on 2 cores it sets the pace of the
direct run and shares the cores with the hub and its child (docs/performance.md, "Sixth round"). This host is
asyncio on keep-alive sockets: each request written by hand, the response's SSE body read whole and the answer's
`data:` line `json.loads`-ed. It costs ~0.15 core, so each server is bound by its own CPU. It also prints the
CPU this client used, in cores.

Every wait is bounded (LIMIT); both servers are stopped in a `finally` (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from bench import procs
from bench.harness import LIMIT, PY, REPO, THIS_HUB, Run, free_port, write_results

PROTOCOL = "2025-11-25"


class RawHttpHost:
    """One Streamable HTTP session at `port`, driven over plain HTTP/1.1."""

    def __init__(self, port: int, token: str | None = None) -> None:
        self.port = port
        self.session: str | None = None
        self.ids = 0
        self.auth = f"Authorization: Bearer {token}\r\n" if token else ""

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], message: dict[str, Any]) -> Any:
        """POST one message; the answer to it (None for a notification)."""
        reader, writer = conn
        body = json.dumps(message).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
            f"MCP-Protocol-Version: {PROTOCOL}\r\n{self.auth}"
            + (f"Mcp-Session-Id: {self.session}\r\n" if self.session else "")
            + "\r\n"
        )
        writer.write(head.encode() + body)
        lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        self.session = headers.get("mcp-session-id", self.session)
        data = bytearray()
        if headers.get("transfer-encoding") == "chunked":
            while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
                data += (await reader.readexactly(size + 2))[:-2]
            await reader.readexactly(2)
        else:
            data += await reader.readexactly(int(headers.get("content-length", 0)))
        if "id" not in message:
            return None
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {bytes(data)[:300]!r}")
        if headers.get("content-type", "").startswith("application/json"):
            return json.loads(data)
        for line in bytes(data).splitlines():
            if line.startswith(b"data:"):
                answer = json.loads(line[5:])
                if answer.get("id") == message["id"] and "method" not in answer:
                    return answer
        raise RuntimeError(f"no answer in {bytes(data)[:300]!r}")

    async def open(self) -> None:
        conn = await self.connect()
        try:
            info = {"name": "bench-raw-http", "version": "1"}
            params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": info}
            await self.post(conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
            await self.post(conn, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        finally:
            conn[1].close()

    async def call(self, conn: Any, tool: str) -> None:
        self.ids += 1
        params = {"name": tool, "arguments": {"text": "hello"}}
        answer = await self.post(conn, {"jsonrpc": "2.0", "id": self.ids, "method": "tools/call", "params": params})
        if "error" in answer or answer["result"].get("isError"):
            raise RuntimeError(f"{tool} failed: {answer}")

    async def burst(self, tool: str, inflight: int, total: int) -> float:
        """calls/s with `inflight` calls kept in flight, each on its own keep-alive connection."""
        started = 0

        async def worker() -> None:
            nonlocal started
            conn = await self.connect()
            try:
                while started < total:
                    started += 1
                    await self.call(conn, tool)
            finally:
                conn[1].close()

        began = time.perf_counter()
        await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(inflight))), LIMIT)
        return total / (time.perf_counter() - began)


async def _listening(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + LIMIT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listened on {port} within {LIMIT}s") from None
            await asyncio.sleep(0.05)


async def serve_hub(run: Run, config: Path, log_file: Path, output: IO[str]) -> tuple[subprocess.Popen[bytes], int]:
    """This checkout's `hub serve --http` on a free loopback port, once it listens (its stdout and stderr to
    `output`); stopped again if it never does."""
    port = free_port()
    argv = ["-m", "hub", "serve", "--config", str(config), "--log-file", str(log_file), "--http", f"127.0.0.1:{port}"]
    process = subprocess.Popen(
        [PY, *argv], cwd=REPO, stdin=subprocess.DEVNULL, stdout=output, stderr=output, start_new_session=True
    )
    run.seen.add(process.pid)
    try:
        await _listening(process, port)
    except BaseException:
        procs.stop(process)
        raise
    return process, port


async def _ready(host: RawHttpHost, tool: str) -> None:
    """Call until the tool answers (a hub's child may still be starting)."""
    deadline = time.monotonic() + LIMIT
    while True:
        conn = await host.connect()
        try:
            await host.call(conn, tool)
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)
        finally:
            conn[1].close()


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    run = Run()
    processes: list[subprocess.Popen[bytes]] = []
    try:
        log = (run.dir / "servers.log").open("w")
        port_file = run.dir / "direct.port"
        child = [*run.child_args(args.kind, args.tools, "direct"), "--http", "--port-file", str(port_file)]
        hub_port = free_port()
        config = run.hub_config(THIS_HUB, args.kind, 1, args.tools)
        hub_argv = ["-m", "hub", "serve", "--config", str(config), "--log-file", str(run.dir / "hub.log")]
        for argv in (child, [*hub_argv, "--http", f"127.0.0.1:{hub_port}"]):
            process = subprocess.Popen(
                [PY, *argv], cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
            )
            processes.append(process)
            run.seen.add(process.pid)
        deadline = time.monotonic() + LIMIT
        while not port_file.exists():
            if processes[0].poll() is not None:
                raise RuntimeError(f"the direct child exited with {processes[0].returncode}; see {log.name}")
            if time.monotonic() > deadline:
                raise TimeoutError("the direct child never wrote its port")
            await asyncio.sleep(0.05)
        ports = {"direct": int(port_file.read_text()), "hub": hub_port}
        hosts = {label: RawHttpHost(port) for label, port in ports.items()}
        tools = {"direct": "echo", "hub": "c0_echo"}
        for label, host in hosts.items():
            await _listening(processes[0 if label == "direct" else 1], host.port)
            await host.open()
            await _ready(host, tools[label])
            await host.burst(tools[label], args.inflight, 200)  # warm-up
        rates: dict[str, list[float]] = {label: [] for label in hosts}
        client_cores: dict[str, list[float]] = {label: [] for label in hosts}
        order = list(hosts)
        for r in range(args.rounds):
            for label in order if r % 2 == 0 else order[::-1]:
                cpu, began = sum(os.times()[:2]), time.perf_counter()
                rates[label].append(await hosts[label].burst(tools[label], args.inflight, args.calls))
                client_cores[label].append((sum(os.times()[:2]) - cpu) / (time.perf_counter() - began))
        direct = statistics.median(rates["direct"])
        return {
            label: {
                "calls_per_s": round(statistics.median(rates[label]), 1),
                "ratio": round(statistics.median(rates[label]) / direct, 2),
                "client_cores": round(statistics.median(client_cores[label]), 2),
                "rounds": [round(x, 1) for x in rates[label]],
            }
            for label in hosts
        }
    finally:
        for process in processes:
            procs.stop(process)
        run.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kind", choices=["sdk"], default="sdk", help="the child (the raw one serves stdio only)")
    parser.add_argument("--tools", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=1500, help="calls per round (default: 1500)")
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--out", help="also write the figures to this JSON file")
    args = parser.parse_args()
    results = asyncio.run(measure(args))
    for label, row in results.items():
        print(
            f"{label:6s} {row['calls_per_s']:8.1f} calls/s  {row['ratio']:.2f}x direct  "
            f"client {row['client_cores']:.2f} core  rounds {row['rounds']}"
        )
    write_results(args.out, args, results)


if __name__ == "__main__":
    main()
