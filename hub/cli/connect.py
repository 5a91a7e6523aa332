"""`hub connect URL`: the host on stdio, the hub at the URL (hub.connect), until the host leaves.

It starts no hub and reads no servers.yaml; the token is never on the command line; stdout carries the protocol.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from urllib.parse import urlsplit

import anyio
import structlog

from hub.cli.output import EXIT_INTERRUPTED, EXIT_USAGE
from hub.connect.forward import Forwarder
from hub.connect.remote import Remote, new_client
from hub.connect.token import Token, TokenError, from_options
from hub.logs import configure_logging
from hub.platform import WINDOWS
from hub.platform.stdio_wire import stdio_wire

# Each ends hub connect as the host leaving does: the session is ended at the hub first.
STOP_SIGNALS = () if WINDOWS else (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
# The longest line taken from the host; a longer one is dropped as it arrives (and answered, if its id is found).
MAX_LINE_BYTES = 64 * 1024 * 1024

_log = structlog.get_logger("hub.connect")


def run_connect(args: argparse.Namespace) -> int:
    """`hub connect`: 0 once the host has closed stdin; 2 on bad usage or a token that cannot be had."""
    problem = _url_problem(args.url)
    if problem is not None:
        print(f"hub connect: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        token = from_options(args.token_env, args.keyring, args.keyring_user, os.environ)
    except TokenError as exc:
        print(f"hub connect: {exc}", file=sys.stderr)
        return EXIT_USAGE
    call_log = configure_logging(args.log_format or "json", args.log_level or "info", args.log_file)
    if token.value is not None:
        call_log.redactor.add([token.value])  # never in a log line, even quoted back in a hub's error
    try:
        anyio.run(connect, args.url, token)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return 0


def _url_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"URL must be an http:// or https:// address, such as https://hub.example.com/mcp, not {url!r}"
    if "access_token" in parts.query:
        return "put the token in an environment variable (--token-env) or the keyring, not in the URL"
    return None


async def connect(url: str, token: Token) -> None:
    """Forward between the host on stdin/stdout and the hub at `url` until the host closes stdin (or stops reading,
    or a stop signal comes); then the hub's session is ended (DELETE, bounded)."""
    _log.info("connect_started", url=url, token_source=token.source, token=token.value is not None)
    async with new_client(token) as http:
        remote = Remote(url, token, http, lambda capabilities: forwarder.renewed(capabilities))
        # The wire calls the forwarder only from the event loop, which runs nothing before `forwarder` is set below.
        async with (
            anyio.create_task_group() as tg,
            stdio_wire(
                tg,
                MAX_LINE_BYTES,
                lambda line: forwarder.line(line),
                lambda head, size: forwarder.oversized(head, size, MAX_LINE_BYTES),
            ) as wire,
        ):
            forwarder = Forwarder(remote, wire.write, tg)
            tg.start_soon(forwarder.run)
            tg.start_soon(remote.listen, forwarder.send)
            stopping = anyio.Event()
            tg.start_soon(_stop_on_signal, wire.gone, stopping)
            await wire.gone.wait()
            await forwarder.drain(stopping)  # end of input: the answers to what was sent still come (bounded)
            tg.cancel_scope.cancel()
        await remote.close()
    _log.info("connect_stopped", url=url)


async def _stop_on_signal(gone: anyio.Event, stopping: anyio.Event) -> None:
    if not STOP_SIGNALS:
        return
    with anyio.open_signal_receiver(*STOP_SIGNALS) as received:
        async for signum in received:
            _log.info("connect_stopping", signal=signal.Signals(signum).name)
            stopping.set()
            gone.set()
            return
