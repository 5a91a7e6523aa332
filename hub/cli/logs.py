"""`hub logs`: the call log (docs/call-log.md) as a table of calls, filtered, then a summary per server and tool.

It starts nothing. Lines with `"event": "call"` are the calls; any other line (lifecycle events, console-format text,
a line a crash cut short) is skipped, never fatal. The rotated files (hub.logfile) are read first, oldest first, so
a rotation hides no call; `--follow` polls every POLL_INTERVAL and follows the file across rotation and truncation.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fnmatch
import json
import math
import os
import re
import signal
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any, TextIO

from hub.cli.output import print_table, table_row
from hub.logfile import Follower, file_identity, opened_siblings, read_lines, rotated_siblings

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
        name, took, when = _text(call, "name"), duration(call), timestamp(call)
        return (
            (not self.children or _text(call, "child") in self.children)
            and (self.tool is None or (name is not None and fnmatch.fnmatchcase(name, self.tool)))
            and (not self.outcomes or _text(call, "outcome") in self.outcomes)
            and (self.slower_than is None or (took is not None and took > self.slower_than))
            and (self.since is None or (when is not None and when >= self.since))
        )


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank percentile: the smallest value with at least p% of the values at or below it (a duration
    that was measured, never an interpolation). `values` must not be empty."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


# One call as the summary counts it: whether it failed (an outcome other than `ok`), and its duration if logged.
_Tally = tuple[bool, float | None]


class Summary:
    """Calls, errors (outcomes other than `ok`) and p50/p95 duration per (server, exposed name), and in total."""

    def __init__(self) -> None:
        self._groups: dict[tuple[str, str], list[_Tally]] = {}

    def add(self, call: dict[str, Any]) -> None:
        key = (_text(call, "child") or "-", _text(call, "name") or "-")
        self._groups.setdefault(key, []).append((_text(call, "outcome") != "ok", duration(call)))

    @property
    def calls(self) -> int:
        return sum(map(len, self._groups.values()))

    def rows(self) -> list[list[str]]:
        """The summary table: a header, one row per (server, name) in order, and the total."""
        rows = [["CHILD", "NAME", "CALLS", "ERRORS", "P50_MS", "P95_MS"]]
        rows += [[child, name, *_figures(calls)] for (child, name), calls in sorted(self._groups.items())]
        everything = [call for calls in self._groups.values() for call in calls]
        return [*rows, ["total", "", *_figures(everything)]]


def _figures(calls: list[_Tally]) -> list[str]:
    durations = [took for _, took in calls if took is not None]
    quantiles = [f"{percentile(durations, p):.2f}" if durations else "" for p in (50, 95)]
    return [str(len(calls)), str(sum(failed for failed, _ in calls)), *quantiles]


def call_cells(call: dict[str, Any]) -> list[str]:
    """A call's row: time (UTC, to the millisecond), identity, server, exposed name, outcome, ms, error (cut)."""
    when = timestamp(call)
    utc = when.astimezone(datetime.UTC).replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z" if when else None
    shown = utc or _text(call, "timestamp") or "-"
    took = duration(call)
    error = " ".join((_text(call, "error_message") or "").split())
    if len(error) > ERROR_WIDTH:
        error = error[: ERROR_WIDTH - 3] + "..."
    cells = [_text(call, key) or "-" for key in ("identity", "child", "name", "outcome")]
    return [shown, *cells, "" if took is None else f"{took:.2f}", error]


@dataclass
class _Printer:
    """Writes the matching calls (a table, or the lines as they are) and keeps their summary."""

    matches: CallFilter
    as_json: bool
    out: TextIO
    summary: Summary = field(default_factory=Summary)
    not_json: int = 0

    def rows(self, lines: Iterable[str]) -> list[list[str]]:
        """The table rows of the matching call lines (none with --json: those lines are printed as they are)."""
        return [row for row in map(self._take, lines) if row is not None]

    def _take(self, raw: str) -> list[str] | None:
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


def run_logs_command(args: argparse.Namespace) -> int:
    """`hub logs`, with servers.yaml found as for the other commands."""
    from hub.config.paths import config_path

    path, missing = config_path(args.config)
    return run_logs(args, None if missing else path)


def run_logs(args: argparse.Namespace, config: str | None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """`hub logs`; `config` is the servers.yaml found as for the other commands, None if there is none."""
    path = _log_path(args.file or args.log_file, config, err)
    if path is None:
        return 1
    matches = CallFilter(frozenset(args.child), args.tool, frozenset(args.outcome), args.slower_than, args.since)
    printer = _Printer(matches, args.json, out)
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
        current: IO[bytes] | None = open(path, "rb")  # noqa: SIM115 - closed by the `with` below
    except FileNotFoundError:
        if not rotated_siblings(path):
            err.write(f"hub: no such file: {path}\n")
            return 1
        current = None
    rows: list[list[str]] = []
    with current or contextlib.nullcontext():
        for lines in _siblings(path, file_identity(current) if current is not None else None):
            rows += printer.rows(lines)
        if current is not None:
            rows += printer.rows(read_lines(current))
    if rows:
        print_table([HEADER, *rows], printer.out, _RIGHT)
    printer.end(err)
    return 0


def _siblings(path: Path, skip: tuple[int, int] | None) -> list[list[str]]:
    """The lines of each rotated file, oldest first; but the file `skip` (the one already open as `path`: a rotation
    since the listing made it a sibling)."""
    with opened_siblings(path) as handles:
        return [list(read_lines(h)) for h in handles if file_identity(h) != skip]


def _follow(path: Path, printer: _Printer, since: bool, err: TextIO) -> None:
    """Print calls as they come until Ctrl-C or SIGTERM, then the summary. With --since, the calls logged since then
    (the rotated files included) come first."""
    follower = Follower(path, from_end=not since)
    previous = signal.signal(signal.SIGTERM, _stop)
    out = printer.out

    def show(lines: Iterable[str]) -> None:
        out.writelines(table_row(row, FOLLOW_WIDTHS, _RIGHT) for row in printer.rows(lines))

    try:
        if not printer.as_json:
            out.write(table_row(HEADER, FOLLOW_WIDTHS, _RIGHT))
        if since:
            for lines in _siblings(path, follower.identity):
                show(lines)
        waiting = "" if follower.identity else " (not there yet)"
        err.write(f"hub: following {path}{waiting}; Ctrl-C to stop\n")
        err.flush()
        while True:
            lines = follower.poll()
            show(lines)
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


def _stop(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends --follow as Ctrl-C does: with the summary, and exit status 0."""
    raise KeyboardInterrupt
