"""`hub connect URL`: the command line of the stdio ↔ Streamable HTTP connector (`hub.connect`).

It starts no hub and reads no servers.yaml: the hub is at the URL. The token comes from an environment variable
(`--token-env`, default HUB_TOKEN) or the OS keyring (`--keyring`), never from the command line. Logs go to stderr
(or --log-file); stdout carries the protocol alone.
"""

from __future__ import annotations

import argparse
import os
import sys
from urllib.parse import urlsplit

from hub.connect.token import DEFAULT_ENV, Token, TokenError, from_env, from_keyring

EXIT_USAGE = 2


def _token(args: argparse.Namespace) -> Token:
    """Raises: TokenError."""
    if args.keyring is not None:
        return from_keyring(args.keyring, args.keyring_user)
    return from_env(args.token_env or DEFAULT_ENV, os.environ, required=args.token_env is not None)


def _url_problem(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return f"URL must be an http:// or https:// address, such as https://hub.example.com/mcp, not {url!r}"
    if "access_token" in parts.query:
        return "put the token in an environment variable (--token-env) or the keyring, not in the URL"
    return None


def run_connect(args: argparse.Namespace) -> int:
    """`hub connect`: 0 once the host has closed stdin; 2 on bad usage or a token that cannot be had."""
    problem = _url_problem(args.url)
    if problem is not None:
        print(f"hub connect: {problem}", file=sys.stderr)
        return EXIT_USAGE
    try:
        token = _token(args)
    except TokenError as exc:
        print(f"hub connect: {exc}", file=sys.stderr)
        return EXIT_USAGE
    from hub.logs import configure_logging

    call_log = configure_logging(args.log_format, args.log_level, args.log_file)
    if token.value is not None:
        call_log.redactor.add([token.value])  # never in a log line, even quoted back in a hub's error
    import anyio

    from hub.connect.run import connect

    try:
        anyio.run(connect, args.url, token)
    except KeyboardInterrupt:
        return 130
    return 0
