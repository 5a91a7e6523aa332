"""`hub logs`: the call log (docs/call-log.md) as a person reads it: the calls as a table, filtered, then a summary
per server and tool (calls, errors, p50 and p95 duration).

It reads the JSON lines `hub serve` writes (`--log-file`, or `hub.log_file` in servers.yaml) and starts nothing: no
hub, no server. Lines with `"event": "call"` are the calls; every other line (lifecycle events, console-format text,
a line a crash cut short) is skipped and never fatal. The rotated files (`hub.log.N` ... `hub.log.1`, see
`hub.logfile`) are read first, oldest first, so a rotation hides no call. `--follow` reads the lines as they are
appended, polling every POLL_INTERVAL, and follows the file across rotation (a new file at the path: another inode)
and truncation.
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import math
import os
import re
import signal
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any, TextIO

from hub.cli.output import print_table, table_row
from hub.logfile import Follower, file_identity, read_lines, rotated_siblings

# Every outcome of docs/call-log.md (a test keeps the two equal): a misspelt --outcome is refused, not silently empty.
OUTCOMES = (
    "ok",
    "tool_error",
    "error",
    "denied",
    "timeout",
    "cancelled",
    "unavailable",
    "busy",
    "too_large",
    "input_required",
    "uncollected",
    "read_only",
    "quarantined",
    "invalid_arguments",
    "not_confirmed",
    "not_task_capable",
    "task_failed",
)
# How often --follow looks for new lines: a person sees a call within this, and an idle follow costs nothing.
POLL_INTERVAL = 0.2
# An error message is cut to this many characters in the table (--json keeps the line whole).
ERROR_WIDTH = 60
# Column widths of the table while following (later rows are not known yet); a longer cell pushes its row right.
FOLLOW_WIDTHS = (24, 10, 10, 28, 12, 9, 0)
HEADER = ("TIME", "IDENTITY", "CHILD", "NAME", "OUTCOME", "MS", "ERROR")
_RIGHT = frozenset({5})  # the duration column
_AGO = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_since(text: str, now: datetime.datetime | None = None) -> datetime.datetime:
    """`--since`: an ISO time (naive means UTC, as the log's timestamps are) or a time ago (`10m`, `2h`, `1d`).

    Raises:
        ValueError: neither form, with a message that shows both.
    """
    ago = _AGO.fullmatch(text.strip())
    if ago:
        now = now or datetime.datetime.now(datetime.UTC)
        return now - datetime.timedelta(seconds=float(ago.group(1)) * _SECONDS[ago.group(2)])
    when = _iso_time(text.strip())
    if when is None:
        raise ValueError(
            f"{text!r} is not a time: give an ISO time (2026-11-30T06:00, UTC unless it has an offset) or a time "
            "ago (30s, 10m, 2h, 1d, 1w)"
        )
    return when


def since_argument(text: str) -> datetime.datetime:
    try:
        return parse_since(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def decode_line(raw: str) -> dict[str, Any] | None:
    """A log line's fields; None if it is not a JSON object (console format, a line cut short, garbage)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, a number too long to convert, nesting too deep
        return None
    return value if isinstance(value, dict) else None


def _text(fields: dict[str, Any], key: str) -> str | None:
    value = fields.get(key)
    return value if isinstance(value, str) else None


def duration(fields: dict[str, Any]) -> float | None:
    value = fields.get("duration_ms")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def timestamp(fields: dict[str, Any]) -> datetime.datetime | None:
    text = _text(fields, "timestamp")
    return None if text is None else _iso_time(text)


def _iso_time(text: str) -> datetime.datetime | None:
    """An ISO time, UTC when it has no offset (as the log's timestamps are); None if `text` is not one."""
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.UTC)


@dataclass(frozen=True)
class CallFilter:
    """Which call lines to show: each option narrows; none given, every call."""

    children: frozenset[str] = frozenset()
    tool: str | None = None
    outcomes: frozenset[str] = frozenset()
    slower_than: float | None = None
    since: datetime.datetime | None = None

    def matches(self, call: dict[str, Any]) -> bool:
        if self.children and _text(call, "child") not in self.children:
            return False
        if self.tool is not None:
            name = _text(call, "name")
            if name is None or not fnmatch.fnmatchcase(name, self.tool):
                return False
        if self.outcomes and _text(call, "outcome") not in self.outcomes:
            return False
        if self.slower_than is not None:
            took = duration(call)
            if took is None or took <= self.slower_than:
                return False
        if self.since is not None:
            when = timestamp(call)
            if when is None or when < self.since:
                return False
        return True


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile: the smallest value with at least p% of the values at or below it (a duration
    that was measured, never an interpolation). `values` must not be empty."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class _Group:
    calls: int = 0
    errors: int = 0
    durations: list[float] = field(default_factory=list)


class Summary:
    """Calls, errors (outcomes other than `ok`) and p50/p95 duration per (server, exposed name), and in total."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], _Group] = {}

    def add(self, call: dict[str, Any]) -> None:
        key = (_text(call, "child") or "-", _text(call, "name") or "-")
        group = self._groups.setdefault(key, _Group())
        group.calls += 1
        group.errors += int(_text(call, "outcome") != "ok")
        took = duration(call)
        if took is not None:
            group.durations.append(took)

    @property
    def calls(self) -> int:
        return sum(g.calls for g in self._groups.values())

    def rows(self) -> list[list[str]]:
        """The summary table: a header, one row per (server, name) in order, and the total."""
        total = _Group()
        rows = [["CHILD", "NAME", "CALLS", "ERRORS", "P50_MS", "P95_MS"]]
        for (child, name), group in sorted(self._groups.items()):
            rows.append([child, name, *_figures(group)])
            total.calls += group.calls
            total.errors += group.errors
            total.durations += group.durations
        rows.append(["total", "", *_figures(total)])
        return rows


def _figures(group: _Group) -> list[str]:
    quantiles = [f"{percentile(group.durations, p):.2f}" if group.durations else "" for p in (50, 95)]
    return [str(group.calls), str(group.errors), *quantiles]


def call_cells(call: dict[str, Any]) -> list[str]:
    """A call's row: time (UTC, to the millisecond), identity, server, exposed name, outcome, ms, error (cut)."""
    when = timestamp(call)
    shown = (
        when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        if when
        else (_text(call, "timestamp") or "-")
    )
    took = duration(call)
    error = " ".join((_text(call, "error_message") or "").split())
    if len(error) > ERROR_WIDTH:
        error = error[: ERROR_WIDTH - 3] + "..."
    return [
        shown,
        _text(call, "identity") or "-",
        _text(call, "child") or "-",
        _text(call, "name") or "-",
        _text(call, "outcome") or "-",
        "" if took is None else f"{took:.2f}",
        error,
    ]


@dataclass
class _Printer:
    """Writes the matching calls (a table, or the lines as they are) and keeps their summary."""

    matches: CallFilter
    as_json: bool
    out: TextIO
    summary: Summary = field(default_factory=Summary)
    not_json: int = 0
    rows: list[list[str]] = field(default_factory=list)

    def take(self, raw: str) -> list[str] | None:
        """The table row of a matching call line (the line itself already printed with --json); else None."""
        fields = decode_line(raw)
        if fields is None:
            self.not_json += bool(raw.strip())
            return None
        if fields.get("event") != "call" or not self.matches.matches(fields):
            return None
        self.summary.add(fields)
        if self.as_json:
            self.out.write(raw + "\n")
            return None
        return call_cells(fields)

    def end(self, err: TextIO) -> None:
        """The summary: after the table on stdout, or on stderr with --json (stdout stays JSON lines)."""
        where = err if self.as_json else self.out
        if self.summary.calls:
            if not self.as_json:
                where.write("\n")
            print_table(self.summary.rows(), where)
        else:
            where.write("no matching calls\n")
        if self.not_json:
            err.write(f"hub: skipped {self.not_json} line(s) that are not JSON (written with --log-format console?)\n")


def run_logs(args: argparse.Namespace, config: str | None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """`hub logs`; `config` is the servers.yaml found as for the other commands, None if there is none."""
    path = _log_path(args.file or args.log_file, config, err)
    if path is None:
        return 1
    printer = _Printer(
        CallFilter(frozenset(args.child), args.tool, frozenset(args.outcome), args.slower_than, args.since),
        args.json,
        out,
    )
    # `hub logs | head`: the BrokenPipeError ends it as it ends every command (hub.cli.main: quietly, status 141).
    if args.follow:
        _follow(path, printer, args.since is not None, err)
        return 0
    return _read(path, printer, err)


def _log_path(given: str | None, config: str | None, err: TextIO) -> Path | None:
    """FILE or --log-file; else `hub.log_file` of servers.yaml (its includes and servers.env as the hub reads
    them), read without validating the rest (a server's `${TOKEN}` the shell does not have must not keep a person
    from their logs); else, when servers.yaml sets none (or there is none), the desktop's default call log."""
    if given is not None:
        return Path(given)
    if config is None or not os.path.exists(config):
        return _default_log(err)
    from hub.config.expansion import expand_env
    from hub.config.loader import ConfigError, read_unchecked

    try:
        tree, environ = read_unchecked(Path(config))
    except ConfigError as exc:
        err.write(f"hub: {exc}\n")
        return None
    settings = tree.get("hub") if isinstance(tree, dict) else None
    value = settings.get("log_file") if isinstance(settings, dict) else None
    if value is None:
        return _default_log(err)
    if not isinstance(value, str):
        said = str(value).lower() if isinstance(value, bool) else value
        err.write(f"hub: {config} sets hub.log_file: {said}, so no log file is written; give FILE or --log-file PATH\n")
        return None
    try:
        value = expand_env(value, environ)
    except KeyError as exc:
        err.write(f"hub: hub.log_file in {config} uses ${{{exc.args[0]}}}, which is not set\n")
        return None
    return Path(config).parent / Path(value).expanduser()


def _default_log(err: TextIO) -> Path | None:
    """The desktop's call log, if `hub serve` has written it."""
    from hub.config.paths import default_log_path

    path = default_log_path()
    if not path.exists():
        err.write(
            f"hub: no call log at {path} yet: `hub serve` on stdio writes it unless hub.log_file is set (or false); "
            "give FILE, or --log-file PATH, or set hub.log_file in servers.yaml\n"
        )
        return None
    return path


def _read(path: Path, printer: _Printer, err: TextIO) -> int:
    """The rotated files oldest first, then the file. The file is opened first: lines a rotation moves out of it
    while the others are read are still read, once."""
    try:
        current: IO[bytes] | None = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        current = None
    try:
        if current is None and not rotated_siblings(path):
            err.write(f"hub: no such file: {path}\n")
            return 1
        skip = file_identity(current) if current is not None else None
        for lines in _siblings(path, skip):
            printer.rows += _taken(printer, lines)
        if current is not None:
            printer.rows += _taken(printer, read_lines(current))
    finally:
        if current is not None:
            current.close()
    if printer.rows:
        print_table([HEADER, *printer.rows], printer.out, _RIGHT)
    printer.end(err)
    return 0


def _siblings(path: Path, skip: tuple[int, int] | None) -> Iterator[list[str]]:
    """The lines of each rotated file, oldest first; but the file `skip` (the one already open as `path`: a rotation
    since the listing made it a sibling), and a file rotated away since the listing."""
    for sibling in rotated_siblings(path):
        try:
            with open(sibling, "rb") as older:
                if file_identity(older) != skip:
                    yield list(read_lines(older))
        except FileNotFoundError:
            continue


def _taken(printer: _Printer, lines: Iterable[str]) -> list[list[str]]:
    return [row for row in map(printer.take, lines) if row is not None]


def _follow(path: Path, printer: _Printer, since: bool, err: TextIO) -> None:
    """Print calls as they come until Ctrl-C or SIGTERM, then the summary. With --since, the calls logged since then
    (the rotated files included) come first."""
    follower = Follower(path, from_end=not since)
    previous = signal.signal(signal.SIGTERM, _stop)
    out = printer.out
    try:
        if not printer.as_json:
            out.write(table_row(HEADER, FOLLOW_WIDTHS, _RIGHT))
        if since:
            for lines in _siblings(path, follower.identity):
                _print_follow(printer, lines)
        waiting = "" if follower.identity else " (not there yet)"
        err.write(f"hub: following {path}{waiting}; Ctrl-C to stop\n")
        err.flush()
        while True:
            lines = follower.poll()
            _print_follow(printer, lines)
            out.flush()
            if not lines:
                time.sleep(POLL_INTERVAL)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        follower.close()
    printer.end(err)
    out.flush()


def _print_follow(printer: _Printer, lines: Iterable[str]) -> None:
    for row in _taken(printer, lines):
        printer.out.write(table_row(row, FOLLOW_WIDTHS, _RIGHT))


def _stop(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends --follow as Ctrl-C does: with the summary, and exit status 0."""
    raise KeyboardInterrupt
