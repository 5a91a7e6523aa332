"""Logging setup: structlog to stderr or a file, never stdout (stdout carries the protocol in stdio mode).

One call, from the CLI, configures everything; the SDK's stdlib logging is bridged into the same output.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

LogFormat = Literal["json", "console"]


def configure_logging(fmt: LogFormat = "json", level: str = "info", file: str | None = None) -> TextIO:
    """Route structlog and stdlib logging to one stream; returns that stream."""
    stream: TextIO = open(file, "a", encoding="utf-8", buffering=1) if file else sys.stderr  # noqa: SIM115
    numeric = logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=stream.isatty())
    )
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
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
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # The SDK logs routine protocol chatter at INFO; keep it out unless debugging.
    root.setLevel(max(numeric, logging.WARNING) if numeric > logging.DEBUG else numeric)
    return stream
