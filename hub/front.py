"""Host-facing transports: stdio (one host, e.g. a desktop app's config entry) and Streamable HTTP (a team).

In stdio mode stdout carries only the protocol: the SDK's `stdio_server` owns fd 1 while serving and every
log line goes to stderr or the log file.

Over HTTP the hub binds to 127.0.0.1 unless told otherwise, and checks Host and Origin (DNS-rebinding
protection): loopback names are allowed at the served port; other names must be listed with --allow-host.
"""

from __future__ import annotations

import structlog
import uvicorn
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings

from hub.config import LoadedConfig
from hub.hub import Hub
from hub.server import build_server

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


async def serve_stdio(loaded: LoadedConfig) -> None:
    hub = Hub(loaded)
    server = build_server(hub)
    async with hub.running(), stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
    structlog.get_logger("hub").info("hub_stopped", reason="stdin closed")


def parse_bind(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return (host or "127.0.0.1").strip("[]"), int(port)


def security_settings(host: str, port: int, allowed: list[str]) -> TransportSecuritySettings:
    """Loopback names, the bound name and each --allow-host value, at the served port unless one is given."""
    names = [*LOOPBACK, *allowed]
    if host not in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "::"):
        names.append(host)
    hosts = [
        name if name.rpartition(":")[2].isdigit() and not name.endswith("]") else f"{name}:{port}" for name in names
    ]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


async def serve_http(loaded: LoadedConfig, bind: str, allowed: list[str]) -> None:
    host, port = parse_bind(bind)
    hub = Hub(loaded)
    server = build_server(hub)
    app = server.streamable_http_app(
        streamable_http_path="/mcp", host=host, transport_security=security_settings(host, port, allowed)
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    async with hub.running():
        structlog.get_logger("hub").info("hub_http_listening", url=f"http://{host}:{port}/mcp")
        await uvicorn.Server(config).serve()
