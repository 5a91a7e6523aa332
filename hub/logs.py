"""Logging setup: structlog to stderr or a file, never stdout (stdout carries the protocol in stdio mode).

One call, from the CLI, configures everything; the SDK's stdlib logging goes to the same output.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
import time
from collections.abc import MutableMapping
from typing import Any, Literal, TextIO, cast

import structlog

from hub.logfile import LogFile
from hub.redaction import Redactor

LogFormat = Literal["json", "console"]
# A log field longer than this (a string a host or a child sent, an error message quoting one) is cut: one message
# must not write megabytes of log. Kept whole: tracebacks, and a rejected configuration's problems (the hub's own
# text, every value in it bounded or not shown: hub.config.loader).
FIELD_LIMIT = 2000
_WHOLE_FIELDS = frozenset({"exception", "event"})
_WHOLE_EVENTS = frozenset({"config_rejected"})
# The call-log fields whose text comes from a host or a child, and may carry a secret (hub.redaction).
_FOREIGN_FIELDS = ("name", "original", "error_message", "arguments")


def _bound_fields(logger: Any, name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """A structlog processor: every string field cut to FIELD_LIMIT characters."""
    if event.get("event") in _WHOLE_EVENTS:
        return event
    for key, value in event.items():
        if type(value) is str and len(value) > FIELD_LIMIT and key not in _WHOLE_FIELDS:
            event[key] = f"{value[:FIELD_LIMIT]}... ({len(value)} characters)"
    return event


class Throttle:
    """Counts how often something happens and says when to log it: at most `per_second` times in any second, so that
    a peer that keeps sending what cannot be handled cannot flood the log."""

    def __init__(self, per_second: int = 1) -> None:
        self.per_second = per_second
        self.count = 0
        self._window = -1.0
        self._in_window = 0

    def tick(self) -> bool:
        """One more occurrence; True if this one should be logged."""
        self.count += 1
        now = time.monotonic()
        if now - self._window >= 1.0:
            self._window, self._in_window = now, 0
        self._in_window += 1
        return self._in_window <= self.per_second


class CallLog:
    """Writes the call log's line for each routed request (docs/call-log.md).

    With `stream` (JSON format, info enabled) the line is rendered here, with the keys, order and timestamp structlog
    would give it: structlog's full chain costs several times the line itself, on every call. Without it, the line
    goes through structlog like any other (console format, or a level that filters it out).
    """

    def __init__(
        self, stream: TextIO | None = None, redactor: Redactor | None = None, file: LogFile | None = None
    ) -> None:
        self._stream = stream
        self.redactor = redactor or Redactor()
        self.file = file  # the log file every line goes to (None: stderr), for SIGHUP to reopen
        self._log = structlog.get_logger("hub.calls")
        self._json = json.JSONEncoder(default=repr)

    def __call__(self, fields: dict[str, Any]) -> None:
        for key in _FOREIGN_FIELDS:  # the fields a host or a child wrote; the others are the hub's own words
            value = fields.get(key)
            if value is not None:
                fields[key] = self.redactor.value(value)
        stream = self._stream
        if stream is None:
            self._log.info("call", **fields)
            return
        now = datetime.datetime.now(tz=datetime.UTC).isoformat().replace("+00:00", "Z")
        fields.update(event="call", level="info", timestamp=now)
        stream.write(self._json.encode(fields) + "\n")


def _erase_line(logger: Any, name: str, line: Any) -> Any:
    """A rendered console line, preceded by "go to the line's start and erase it" (a terminal only)."""
    return "\r\x1b[K" + line


def configure_logging(
    fmt: LogFormat = "json",
    level: str = "info",
    file: str | None = None,
    max_bytes: int = 0,
    backups: int = 1,
    default_file: str | None = None,
) -> CallLog:
    """Route structlog and stdlib logging to one stream; returns the call log's writer on that stream.

    With `file`, lines are appended to it whole, rotated past `max_bytes` (0: never) keeping `backups` files
    (hub.logfile). Without, `default_file` (the desktop's call log) is written so and stderr too; a default file
    that cannot be made leaves stderr alone, with a line on stderr saying why.
    """
    log_file = LogFile(file, max_bytes, backups) if file else None
    if log_file is None and default_file:
        try:
            log_file = LogFile(default_file, max_bytes, backups, tee=sys.stderr)
        except OSError as exc:
            print(f"hub: no call log file ({exc}); logging to stderr only", file=sys.stderr)
    # A LogFile has all that structlog, stdlib logging and the call log use of a text stream: write, flush, isatty.
    stream = cast(TextIO, log_file) if log_file else sys.stderr
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    redactor = Redactor()
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _bound_fields,
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=stream.isatty())
    )
    # On a terminal, a console line first erases the line the cursor is on: the one-shot commands' progress line
    # (hub.cli.output.StartProgress) would otherwise run on into it.
    rendered: list[structlog.types.Processor] = [renderer]
    if fmt != "json" and stream.isatty():
        rendered.append(_erase_line)
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, redactor.processor, *rendered],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,  # a library's exception text is redacted like any field
                redactor.processor,
                *rendered,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # The SDK logs routine protocol chatter at INFO; keep it out unless debugging.
    root.setLevel(max(numeric, logging.WARNING) if numeric > logging.DEBUG else numeric)
    return CallLog(stream if fmt == "json" and numeric <= logging.INFO else None, redactor, log_file)


def reopen_log_file(call_log: CallLog) -> None:
    """Reopen the log file, if logging goes to one: after external rotation (logrotate, then SIGHUP)."""
    if call_log.file is not None:
        call_log.file.reopen()
        structlog.get_logger("hub").info("log_file_reopened", file=str(call_log.file.path))
