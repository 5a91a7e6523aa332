"""The call log's own JSON rendering writes what structlog would have written for the same line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hub.logs import CallLog, configure_logging

FIELDS = {
    "method": "tools/call",
    "host_session": "conn-7fe5d3f01c90",
    "request_id": 2,
    "child": "time",
    "name": "time_get_current_time",
    "original": "get_current_time",
    "duration_ms": 3.79,
    "outcome": "error",
    "bytes_in": 18,
    "bytes_out": 0,
    "error_code": -32603,
    "error_message": "server 'time' closed the connection; exited with code 3 — «stderr»",
    "arguments": {"timezone": "Europe/Paris", "nested": [1, 2.5, None, True]},
}
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def test_the_direct_line_matches_structlogs_line_but_for_the_time(tmp_path: Path, restore_logging: None) -> None:
    log_file = tmp_path / "hub.log"
    direct = configure_logging("json", "info", str(log_file))
    direct(dict(FIELDS))
    via_structlog = CallLog()  # no stream: through structlog, configured above to the same file
    via_structlog(dict(FIELDS))
    first, second = log_file.read_text().splitlines()
    ours, theirs = json.loads(first), json.loads(second)
    assert list(ours) == list(theirs), "same keys, same order"
    assert ISO_UTC.match(ours["timestamp"]) and ISO_UTC.match(theirs["timestamp"])
    ours.pop("timestamp"), theirs.pop("timestamp")
    assert ours == theirs == {**FIELDS, "event": "call", "level": "info"}
    assert first.split('"timestamp"')[0] == second.split('"timestamp"')[0], "byte for byte up to the time"


@pytest.mark.parametrize(("fmt", "level"), [("console", "info"), ("json", "warning")])
def test_console_format_and_higher_levels_go_through_structlog(
    tmp_path: Path, fmt: str, level: str, restore_logging: None
) -> None:
    log_file = tmp_path / "hub.log"
    call_log = configure_logging(fmt, level, str(log_file))  # type: ignore[arg-type]
    call_log(dict(FIELDS))
    text = log_file.read_text()
    if level == "warning":
        assert text == "", "an info line is filtered out at level warning"
    else:
        assert "time_get_current_time" in text and not text.startswith("{")
