"""`hub install CLIENT` and `hub import CLIENT|PATH`: the hub into a host's config, and the host's servers into
servers.yaml (hub.install; the options: docs/cli.md). `--dry-run` prints unified diffs (never a secret's value).

Nothing heavy is imported here at module level: hub.cli.parser takes CLIENT_NAMES from here.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from hub.cli.output import EXIT_FAILED, EXIT_USAGE, fail, print_table
from hub.connect.token import DEFAULT_ENV, DEFAULT_KEYRING_USER, TokenError, from_keyring

if TYPE_CHECKING:
    from hub.install.clients import Paths
    from hub.install.importer import ImportPlan
    from hub.install.installer import Change

CLIENT_NAMES = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf", "zed", "gemini", "codex")


def run_install_command(args: argparse.Namespace, paths: Paths | None = None, out: TextIO | None = None) -> int:
    """`hub install ...` or `hub import ...`; `paths` and `out` default to the real system and stdout."""
    from hub.install.clients import Paths
    from hub.install.edit import EditError

    paths = paths or Paths.current()
    out = out or sys.stdout
    try:
        if args.command == "import":
            return _import(args, paths, out)
        return _install(args, paths, out)
    except EditError as exc:
        return fail(str(exc))


def servers_yaml(given: str | None, paths: Paths) -> tuple[Path, str | None]:
    """servers.yaml as `hub serve` would find it (the user config directory's when there is none yet), absolute;
    and why it is missing (None: it exists)."""
    from hub.config.paths import config_path

    path, missing = config_path(given)
    return Path(os.path.abspath(paths.cwd / Path(path).expanduser())), missing


def _install(args: argparse.Namespace, paths: Paths, out: TextIO) -> int:
    from hub.install.clients import CLIENTS
    from hub.install.installer import client_target, restore, restore_plan, uninstall_plan

    if args.status:
        return _status(args, paths, out)
    if args.client not in CLIENTS:
        problem = "name a client" if args.client is None else f"unknown client {args.client!r}; known clients"
        return fail(f"install: {problem}: {', '.join(CLIENT_NAMES)} (or --status)", EXIT_USAGE)
    client = CLIENTS[args.client]
    try:
        target = client_target(client, paths, args.scope)
    except ValueError as exc:
        return fail(str(exc), EXIT_USAGE)
    if args.restore:
        latest, change = restore_plan(target)
        if not args.dry_run:
            restore(latest, change)
        _report(change, args.dry_run, out)
        return 0
    if args.uninstall:
        _report(_carry_out(uninstall_plan(target, args.name), args.dry_run), args.dry_run, out)
        return 0
    if args.url is not None:
        return _install_url(args, client, target, out)
    return _install_local(args, client, target, paths, out)


def _install_local(args: argparse.Namespace, client: Any, target: Any, paths: Paths, out: TextIO) -> int:
    """`hub install CLIENT`: the entry that runs this hub on servers.yaml, and a warning for each `${VAR}` of it
    that the host will not give the hub."""
    from hub.install.clients import hub_executable, serve_command
    from hub.install.installer import plan

    if args.token_env is not None or args.keyring is not None:
        return fail("--token-env and --keyring say where a team hub's token is: they go with --url", EXIT_USAGE)
    config, missing = servers_yaml(args.config, paths)
    if missing is not None:
        return fail(missing, EXIT_USAGE)
    command = serve_command(hub_executable(), config)
    change = _carry_out(plan(target, args.name, command), args.dry_run)
    _report(change, args.dry_run, out)
    if change.changes and not args.dry_run:
        out.write(f"  runs: {shlex.join(command)}\n  restart {client.title} to start it\n")
    _warn_unreached(client.title, client.terminal, config, change, args.name, paths)
    return 0


def _warn_unreached(title: str, terminal: bool, config: Path, change: Change, name: str, paths: Paths) -> None:
    """One line on stderr for each `${VAR}` of servers.yaml that breaks the hub the host `title` (`terminal`: run
    from a shell) starts from the entry (hub.install.reach): the entry is written all the same (exit status 0)."""
    from hub.config.loader import ConfigError
    from hub.install.edit import open_servers
    from hub.install.reach import unreached, warning

    # The entry's own `env` stays in the file `hub install` writes; a host CLI's `mcp add` writes none.
    entry = {} if change.commands else open_servers(change.after, change.target.key, change.target.toml).entries()
    given = entry.get(name, {}).get("env") if isinstance(entry.get(name), dict) else None
    env = {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else {}
    try:
        found = unreached(config, env, paths.env, terminal)
    except ConfigError as exc:
        print(f"hub: warning: the hub {title} starts will not start: {exc}", file=sys.stderr)
        return
    for item in found:
        print(f"hub: warning: {warning(item, title, config)}", file=sys.stderr)


def _install_url(args: argparse.Namespace, client: Any, target: Any, out: TextIO) -> int:
    """`hub install CLIENT --url URL`: the host's own HTTP entry with the token from `--token-env` where it takes
    one (written to the file directly: a host CLI would want the token itself), else a `hub connect` bridge; always
    the bridge with `--keyring`, since no host reads the OS keyring itself."""
    from hub.install.clients import REMOTE, connect_command, hub_executable
    from hub.install.installer import plan

    url, variable, service = args.url, args.token_env or DEFAULT_ENV, args.keyring
    if not url.startswith(("http://", "https://")) or "?" in url:
        return fail("--url must be an http(s) URL without a query string (the token never goes in it)", EXIT_USAGE)
    if not variable.replace("_", "").isalnum():
        return fail(f"--token-env {variable!r} is not an environment variable name", EXIT_USAGE)
    if service is not None and not (service.strip() and args.keyring_user.strip()):
        return fail("--keyring and --keyring-user name a keyring entry: they cannot be blank", EXIT_USAGE)
    if service is None:
        token, source = ["--token-env", variable], f"${variable}"
    else:
        user = args.keyring_user
        token = ["--keyring", service] + (["--keyring-user", user] if user != DEFAULT_KEYRING_USER else [])
        source = f"the keyring (service {service!r}, user {user!r})"
    remote = REMOTE.get(client.name) if service is None else None
    if remote is not None:
        target = dataclasses.replace(target, entry=lambda _command: remote(url, variable), cli=None)
        command = [url]
    else:
        command = connect_command(hub_executable(), url, token)
    change = _carry_out(plan(target, args.name, command), args.dry_run)
    _report(change, args.dry_run, out)
    if change.changes and not args.dry_run:
        how = "its own HTTP client" if remote is not None else f"`{shlex.join(command)}`"
        out.write(f"  {client.title} reaches {url} through {how}, with the token from {source}\n")
        if service is None:
            out.write(f"  set {variable} in the environment {client.title} starts with, then restart it\n")
        else:
            out.write(f"  restart {client.title} to start it\n")
    if service is not None and client.name in REMOTE:
        out.write(f"  {client.title} reads no keyring itself: its entry runs `hub connect`, which does\n")
    if service is not None:
        _check_keyring(service, args.keyring_user)
    return 0


def _check_keyring(service: str, user: str) -> None:
    """Warn (stderr) when the keyring entry the written entry reads cannot be had now: not stored yet (the message
    names the command that stores it), no `keyring` package, a keyring that cannot be read. The token is read to
    know, and dropped."""
    try:
        from_keyring(service, user)
    except TokenError as exc:
        print(f"hub: warning: {exc}", file=sys.stderr)


def _carry_out(change: Change, dry_run: bool) -> Change:
    from hub.install.installer import apply

    return change if dry_run else apply(change, datetime.now())


def _report(change: Change, dry_run: bool, out: TextIO, hidden: tuple[str, ...] = ()) -> None:
    """The change as the person reads it: a diff when dry (with the `hidden` values, secrets, redacted), then one
    line on what it did (or would do)."""
    verb = "would run" if dry_run else "ran"
    for argv in change.commands:
        out.write(f"{verb}: {shlex.join(argv)}\n")
    if dry_run and not change.commands:
        diff = change.diff()
        for value in sorted(hidden, key=len, reverse=True):
            diff = diff.replace(value, "[REDACTED]")
        out.write(diff)
    line = f"{change.target.label}: {change.summary} ({change.target.file})"
    if dry_run:
        line += "; dry run, nothing written" if change.changes else "; nothing to change"
    elif change.backup is not None:
        line += f"; backup: {change.backup.name}"
    elif not change.changes:
        line += "; nothing written"
    out.write(line + "\n")


def _status(args: argparse.Namespace, paths: Paths, out: TextIO) -> int:
    from hub.install.clients import hub_executable, serve_command
    from hub.install.installer import status

    expected = serve_command(hub_executable(), servers_yaml(args.config, paths)[0])
    rows = status(paths, args.name, expected)
    table = [["CLIENT", "SCOPE", "STATE", "ENTRY", "FILE"]]
    table += [[r.client, r.scope, r.state, r.name, str(r.file)] for r in rows]
    print_table(table, out)
    for r in rows:
        if r.state in ("drift", "unreadable", "remote"):
            out.write(f"{r.state}: {r.client} ({r.scope}) {r.name or r.file}: {r.detail}\n")
    if any(r.state == "drift" for r in rows):
        out.write(f"hub install CLIENT writes: {shlex.join(expected)}\n")
        return EXIT_FAILED
    return 0


def _import(args: argparse.Namespace, paths: Paths, out: TextIO) -> int:
    from hub.config.envfile import parse_env_file
    from hub.install.clients import hub_executable, serve_command
    from hub.install.importer import open_source, plan_import, write_import
    from hub.install.installer import plan
    from hub.redaction import MIN_SECRET_CHARS

    into, missing = servers_yaml(args.into or args.config, paths)
    if missing is not None and (args.into or args.config):
        return fail(missing, EXIT_USAGE)
    try:
        source = open_source(args.source, paths, args.scope)
    except ValueError as exc:  # a client without that scope
        return fail(str(exc), EXIT_USAGE)
    imported = plan_import(source, into, paths)
    _print_items(imported, out)
    if args.dry_run:
        _print_dry(imported, out)
    else:
        for path in write_import(imported):
            out.write(f"wrote {path}{_what(imported, path)}\n")
    if args.consolidate:
        change = plan(source.target, args.name, serve_command(hub_executable(), into), imported.hub_serves)
        out.write("\n")
        secrets = tuple(v for v in parse_env_file(imported.env.after).values() if len(v) >= MIN_SECRET_CHARS)
        _report(_carry_out(change, args.dry_run), args.dry_run, out, secrets)
        if not args.dry_run:  # the files it reads are written now (a dry run's are not, so it cannot tell)
            host = source.client
            title, terminal = (host.title, host.terminal) if host is not None else (str(source.target.file), False)
            _warn_unreached(title, terminal, into, change, args.name, paths)
    return 0


def _print_items(imported: ImportPlan, out: TextIO) -> None:
    out.write(f"from {imported.source.target.file}:\n")
    rows = [["SERVER", "ENTRY", "STATE", "NOTES"]]
    for item in imported.items:
        notes = list(item.converted.notes) + ([item.reason] if item.reason else [])
        if item.converted.secrets and item.state == "added":
            notes.append(f"secrets to {imported.env.path.name}: {', '.join(item.converted.secrets)}")
        rows.append([item.prefix or "-", item.name, item.state, "; ".join(notes)])
    print_table(rows, out)


def _what(imported: ImportPlan, path: Path) -> str:
    added = sum(1 for i in imported.items if i.state == "added")
    if path == imported.servers.path:
        return f": {added} server{'s' if added != 1 else ''} added"
    if path == imported.env.path:
        return f" (mode 0600): the secrets {imported.servers.path.name} references"
    return f": lists {imported.env.path.name}"


def _print_dry(imported: ImportPlan, out: TextIO) -> None:
    from hub.install.edit import unified_diff

    for change in (imported.servers, imported.gitignore):
        if change.changes:
            out.write(unified_diff(change.path, change.before, change.after))
    if imported.env.changes:
        shown = ", ".join(imported.new_secrets)
        out.write(f"would add to {imported.env.path} (mode 0600): {shown} (values not shown)\n")
    out.write("dry run, nothing written\n")
