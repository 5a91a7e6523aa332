"""`hub serve`: the hub started in this process serves MCP to one host on stdio, or Streamable HTTP with --http.

An address other machines can reach is refused without `auth:` in servers.yaml (unless --insecure-no-auth): a team
hub open to anyone who can reach it would call every tool with the hub's credentials.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from hub.cli.output import EXIT_USAGE, fail

if TYPE_CHECKING:
    from hub.access.identity import Identity
    from hub.config.schema import LoadedConfig
    from hub.logs import CallLog


async def run_serve(
    args: argparse.Namespace, loaded: LoadedConfig, call_log: CallLog, started: float, identity: Identity
) -> int:
    """Builds the Hub as `serve` needs it (`identity`: the stdio host's) and serves until the host leaves (stdio) or
    the process is stopped (HTTP); 2, without starting anything, when the address needs auth."""
    if args.http is not None:
        refusal = unprotected(args.http, loaded.config.auth is not None, args.insecure_no_auth)
        if refusal:
            return fail(refusal, EXIT_USAGE)
    from hub.app import Hub, Observing, replica_id
    from hub.observe.tracing import Tracing  # the OpenTelemetry SDK is imported only if OTEL_* ask for traces

    http = args.http is not None
    hub = Hub(
        loaded,
        call_log,
        started,
        identity,
        replica=replica_id(args.replica_id),
        observing=Observing(metrics=http, recent=http, tracing=Tracing.from_environment()),
        stateless=args.stateless,
        auth_required=http and loaded.config.auth is not None and not loopback(args.http),
    )
    from hub.serve import serve

    if http and sys.stderr.isatty():  # a person started it: one line to read among the JSON log lines
        print(f"hub: serving MCP at {endpoint(args.http)} (Ctrl-C stops)", file=sys.stderr, flush=True)
    await serve(hub, args.http, args.allow_host)
    return 0


def endpoint(bind: str) -> str:
    """The MCP endpoint's URL that `--http BIND` serves."""
    from hub.host.http_server import parse_bind

    host, port = parse_bind(bind)
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"


def loopback(bind: str) -> bool:
    """Whether `--http BIND` listens on this machine only."""
    import ipaddress

    from hub.host.http_server import parse_bind

    host = parse_bind(bind)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def unprotected(bind: str, has_auth: bool, insecure: bool) -> str | None:
    """Why `hub serve --http BIND` must not start: a team hub on a reachable address without authentication."""
    if has_auth or insecure or loopback(bind):
        return None
    return (
        f"--http {bind} is reachable from other machines, and servers.yaml has no 'auth:': anyone who can reach "
        "it would call every tool with the hub's credentials. Add 'auth:' (docs/team.md), bind to 127.0.0.1, or "
        "pass --insecure-no-auth if another layer authenticates every request"
    )
