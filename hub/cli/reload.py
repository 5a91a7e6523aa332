"""`hub reload (--pid PID | --url URL)`: make a running hub re-read its servers.yaml (SIGHUP, or POST /reload).

The token for --url is found as `hub connect` finds it, never on the command line. The hub that reloads says in its
own log whether the new file was taken (`config_reloaded`) or refused (`config_rejected`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from hub.cli.output import EXIT_USAGE, fail
from hub.connect.token import TokenError, from_options


def run_reload(args: argparse.Namespace) -> int:
    """0 once the signal is sent or the hub answered the POST; 1 when there is no such process or hub, or it
    refused; 2 when the token cannot be had."""
    pid, url = args.pid, args.url
    if pid is not None:
        if not hasattr(signal, "SIGHUP"):
            return fail("this system has no SIGHUP; use --url with a hub serving HTTP")
        try:
            os.kill(pid, signal.SIGHUP)
        except ProcessLookupError:
            return fail(f"no process {pid}")
        sys.stdout.write(f"sent SIGHUP to {pid}; the hub logs config_reloaded or config_rejected\n")
        return 0
    assert url is not None
    import urllib.error
    import urllib.request

    try:
        token = from_options(args.token_env, args.keyring, args.keyring_user, os.environ)
    except TokenError as exc:
        return fail(str(exc), EXIT_USAGE)
    request = urllib.request.Request(url.rstrip("/") + "/reload", method="POST", headers=token.header())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            sys.stdout.write(response.read().decode() + "\n")  # a one-shot command: stdout is the user's
            return 0
    except urllib.error.HTTPError as exc:
        refused = f" ({token.refused()})" if exc.code == 401 else ""
        return fail(f"{exc.code}: {exc.read().decode().strip()}{refused}")
    except OSError as exc:
        return fail(f"cannot reach {url}: {exc}")
