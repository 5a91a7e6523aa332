"""The commands that run a hub in this process: serve, check, list, cost, call and pin.

The configuration is loaded first (the log file's place and rotation are settings), then the logs are set up and
the Hub is built. Nothing heavy is imported before: a desktop host times the hub's start.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import sys
from typing import TYPE_CHECKING

from hub.cli.output import EXIT_INTERRUPTED, EXIT_USAGE, StartProgress, fail

if TYPE_CHECKING:
    from hub.access.identity import Identity
    from hub.app import Hub
    from hub.config.schema import LoadedConfig
    from hub.logs import CallLog


def load(given: str | None) -> LoadedConfig | int:
    """The configuration (`given`: --config or $HUB_CONFIG), or the exit status after saying on stderr why it
    cannot be loaded."""
    from hub.config import ConfigError, load_config
    from hub.config.paths import config_path

    path, missing = config_path(given)
    if missing is not None:
        return fail(missing, EXIT_USAGE)
    try:
        return load_config(path)
    except ConfigError as exc:
        return fail(str(exc), EXIT_USAGE)


def run_hub_command(args: argparse.Namespace, started: float) -> int:
    """The command's exit status; `started` is the process's start, from which a host's first listing is timed."""
    import anyio

    try:
        return anyio.run(_run, args, started)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


async def _run(args: argparse.Namespace, started: float) -> int:
    from hub.config.paths import default_log_path
    from hub.logs import configure_logging

    serving = args.command == "serve"
    loaded = load(args.config)  # first: the log file's place and rotation are settings (nothing logs before)
    if isinstance(loaded, int):
        return loaded
    rotate = loaded.config.hub.log_rotate
    # The desktop's call log: `hub serve` on stdio with no log file named also appends to the user's log directory
    # (`hub.log_file: false` turns it off), so that `hub logs` works out of the box.
    desktop = serving and not args.http and loaded.config.hub.log_file is None
    call_log = configure_logging(
        args.log_format or ("json" if serving else "console"),
        args.log_level or ("info" if serving else "warning"),
        args.log_file or (str(loaded.log_path) if serving and loaded.log_path else None),
        rotate.max_bytes,
        rotate.backups,
        str(default_log_path()) if desktop else None,
    )
    from hub.access.identity import local_user

    identity = local_user(getattr(args, "identity", None), tuple(getattr(args, "group", ())))
    if serving:
        return await _serve(args, loaded, call_log, started, identity)
    from hub.app import Hub

    if args.command == "pin":  # pinning reads the servers' own definitions: nothing is held back by the old lock
        loaded = dataclasses.replace(loaded, lock=None)
    return await _one_shot(Hub(loaded, call_log, started, identity), args)


async def _serve(
    args: argparse.Namespace, loaded: LoadedConfig, call_log: CallLog, started: float, identity: Identity
) -> int:
    """`hub serve`: until the host leaves (stdio) or the process is stopped (HTTP); `identity` is the stdio host's.

    An address other machines can reach is refused without `auth:` in servers.yaml (unless --insecure-no-auth), with
    status 2 before anything starts: a team hub open to anyone who can reach it would call every tool with the hub's
    credentials.
    """
    http, reachable = args.http is not None, False
    has_auth = loaded.config.auth is not None
    if http:
        from hub.host.http_server import parse_bind

        host, port = parse_bind(args.http)
        reachable = not _loopback(host)
        if reachable and not (has_auth or args.insecure_no_auth):
            return fail(
                f"--http {args.http} is reachable from other machines, and servers.yaml has no 'auth:': anyone who "
                "can reach it would call every tool with the hub's credentials. Add 'auth:' (docs/team.md), bind to "
                "127.0.0.1, or pass --insecure-no-auth if another layer authenticates every request",
                EXIT_USAGE,
            )
    from hub.app import Hub, Observing, replica_id
    from hub.observe.tracing import Tracing  # the OpenTelemetry SDK is imported only if OTEL_* ask for traces
    from hub.serve import serve

    hub = Hub(
        loaded,
        call_log,
        started,
        identity,
        replica=replica_id(args.replica_id),
        observing=Observing(metrics=http, recent=http, tracing=Tracing.from_environment()),
        stateless=args.stateless,
        auth_required=reachable and has_auth,
    )
    if http and sys.stderr.isatty():  # a person started it: one line to read among the JSON log lines
        url = f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"
        print(f"hub: serving MCP at {url} (Ctrl-C stops)", file=sys.stderr, flush=True)
    await serve(hub, args.http, args.allow_host)
    return 0


def _loopback(host: str) -> bool:
    """Whether `--http` on `host` listens on this machine only."""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _one_shot(hub: Hub, args: argparse.Namespace) -> int:
    from hub.host.inprocess import InProcessHost

    if args.command == "pin":
        from hub.cli.pin import run_pin

        return await run_pin(hub, args, sys.stdout)
    from hub.cli.call import ask_on_terminal, print_call
    from hub.cli.check import print_check, print_cost, print_list
    from hub.relay.builtins import HEALTH_TOOL
    from hub.relay.catalog import SEARCH_TOOL

    async with hub.running():
        late: list[str] = []
        if args.command != "call" or args.wait is not None or args.name in (SEARCH_TOOL, HEALTH_TOOL):
            # Each server at most its own connect_timeout (`hub call` waits only for its tool's server: the router
            # holds the call until that one is up, as bounded; the hub's own search and health speak of them all).
            progress = StartProgress(sys.stderr)
            await hub.startup.settle(limit_s=args.wait, progress=progress.starting)
            progress.done()
            late = [name for name, child in hub.children.items() if not child.settled.is_set()]
        hub.startup.end()  # the wait is over: the listing below does not wait again
        if args.command == "check":
            return print_check(hub, args.json, late, sys.stdout, args.wait)
        # A person at a terminal is asked to confirm a call held by `confirm:`; a script is not (it gets the error).
        asks = args.command == "call" and sys.stdin.isatty() and sys.stderr.isatty()
        host = InProcessHost(hub, ask_on_terminal if asks else None)
        await host.start()
        if args.command == "cost":
            return await print_cost(hub, host, args.json, sys.stdout)
        if args.command == "list":
            return await print_list(hub, host, args.json, sys.stdout, sys.stderr)
        return await print_call(host, args.name, args.arguments, args.json, sys.stdout)
