"""`hub logs` on files written here: filters, the summary's figures, --since, lines that are not calls, rotated
files, and where the log is found by default. (Following a file: tests/test_logfile.py.)"""

from __future__ import annotations

import datetime
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from hub.cli.logs import (
    OUTCOMES,
    CallFilter,
    Summary,
    parse_since,
    percentile,
    run_logs,
)
from hub.cli.parser import build_parser
from tests.support.paths import REPO

UTC = datetime.UTC
NOW = datetime.datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def call(
    n: int,
    child: str | None = "time",
    name: str = "time_get_current_time",
    outcome: str = "ok",
    ms: float = 1.0,
    at: str = "2026-11-30T06:00:00.000000Z",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "method": "tools/call",
        "identity": "alice",
        "request_id": n,
        "child": child,
        "name": name,
        "duration_ms": ms,
        "outcome": outcome,
        **extra,
        "event": "call",
        "level": "info",
        "timestamp": at,
    }


def write_log(path: Path, entries: list[dict[str, Any] | str]) -> list[str]:
    lines = [e if isinstance(e, str) else json.dumps(e) for e in entries]
    path.write_text("".join(line + "\n" for line in lines))
    return lines


def logs(*argv: str, config: str | None = None) -> tuple[int, str, str]:
    args = build_parser().parse_args(["logs", *argv])
    out, err = io.StringIO(), io.StringIO()
    status = run_logs(args, config, out, err)
    return status, out.getvalue(), err.getvalue()


def table_rows(out: str) -> list[list[str]]:
    """The call table's rows (split on runs of 2+ spaces), header excluded, up to the blank line."""
    calls = out.split("\n\n")[0].splitlines()
    assert calls[0].split() == ["TIME", "IDENTITY", "CHILD", "NAME", "OUTCOME", "MS", "ERROR"]
    return [re.split(r"\s{2,}", line.strip()) for line in calls[1:]]


def summary_rows(text: str) -> dict[tuple[str, str], list[str]]:
    lines = text.split("\n\n")[-1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("CHILD"))
    rows: dict[tuple[str, str], list[str]] = {}
    for line in lines[start + 1 :]:
        cells = line.split()
        if cells[0] == "total":
            rows[("total", "")] = cells[1:]
        elif cells:
            rows[(cells[0], cells[1])] = cells[2:]
    return rows


# ---- the figures ---------------------------------------------------------------------------------------------


def test_percentiles_are_nearest_rank_on_known_durations() -> None:
    hundred = [float(v) for v in range(100, 0, -1)]  # 100 .. 1, unordered on purpose
    assert percentile(hundred, 50) == 50.0 and percentile(hundred, 95) == 95.0
    assert percentile([7.0], 50) == percentile([7.0], 95) == 7.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0 and percentile([1.0, 2.0, 3.0, 4.0], 95) == 4.0
    twenty = [float(v) for v in range(1, 21)]
    assert percentile(twenty, 95) == 19.0, "ceil(0.95 * 20) = 19th value"


def test_the_summary_counts_calls_and_errors_per_server_and_tool() -> None:
    summary = Summary()
    for i in range(1, 21):
        summary.add(call(i, ms=float(i)))
    summary.add(call(21, name="time_convert_time", outcome="tool_error", ms=5.0))
    summary.add(call(22, name="time_convert_time", outcome="timeout", ms=3000.0))
    summary.add(call(23, child=None, name="nope", outcome="error", ms=0.04))
    summary.add({"event": "call", "child": ["not", "text"], "duration_ms": "soon", "outcome": None})
    rows = summary.rows()
    assert rows[0] == ["CHILD", "NAME", "CALLS", "ERRORS", "P50_MS", "P95_MS"]
    assert rows[1:] == [
        ["-", "-", "1", "1", "", ""],
        ["-", "nope", "1", "1", "0.04", "0.04"],
        ["time", "time_convert_time", "2", "2", "5.00", "3000.00"],
        ["time", "time_get_current_time", "20", "0", "10.00", "19.00"],
        ["total", "", "24", "4", "10.00", "20.00"],
    ]


# ---- --since -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10m", NOW - datetime.timedelta(minutes=10)),
        ("2h", NOW - datetime.timedelta(hours=2)),
        ("1d", NOW - datetime.timedelta(days=1)),
        ("30s", NOW - datetime.timedelta(seconds=30)),
        ("1w", NOW - datetime.timedelta(weeks=1)),
        ("1.5h", NOW - datetime.timedelta(minutes=90)),
        ("2026-11-30T06:11:03Z", datetime.datetime(2026, 11, 30, 6, 11, 3, tzinfo=UTC)),
        ("2026-11-30T06:11", datetime.datetime(2026, 11, 30, 6, 11, tzinfo=UTC)),
        ("2026-11-30 06:11:03.5", datetime.datetime(2026, 11, 30, 6, 11, 3, 500000, tzinfo=UTC)),
        ("2026-11-30", datetime.datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30T07:11:03+01:00", datetime.datetime(2026, 11, 30, 6, 11, 3, tzinfo=UTC)),
    ],
)
def test_since_takes_iso_times_as_utc_and_times_ago(text: str, expected: datetime.datetime) -> None:
    assert parse_since(text, NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "10", "10 minutes", "-5m", "2026-13-01", ""])
def test_since_refuses_what_is_not_a_time_saying_what_is(text: str) -> None:
    with pytest.raises(ValueError, match=r"ISO time .* or a time ago \(30s, 10m, 2h, 1d, 1w\)"):
        parse_since(text, NOW)


def test_a_bad_since_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        logs("x.log", "--since", "soon")
    assert exited.value.code == 2 and "--since: 'soon' is not a time" in capsys.readouterr().err


# ---- filters -------------------------------------------------------------------------------------------------


def test_each_filter_narrows_and_together_they_all_apply() -> None:
    entries = [
        call(1, at="2026-11-30T06:00:00Z", ms=1.0),
        call(2, child="git", name="git_log", at="2026-11-30T07:00:00Z", ms=250.0),
        call(3, child="git", name="git_status", outcome="timeout", at="2026-11-30T08:00:00Z", ms=30000.0),
        call(4, child=None, name="nope", outcome="error", at="2026-11-30T09:00:00Z", ms=0.04),
    ]

    def kept(f: CallFilter) -> list[int]:
        return [e["request_id"] for e in entries if f.matches(e)]

    assert kept(CallFilter()) == [1, 2, 3, 4]
    assert kept(CallFilter(children=frozenset({"git"}))) == [2, 3]
    assert kept(CallFilter(children=frozenset({"git", "time"}))) == [1, 2, 3]
    assert kept(CallFilter(tool="git_*")) == [2, 3]
    assert kept(CallFilter(tool="*_status")) == [3]
    assert kept(CallFilter(tool="GIT_*")) == [], "globs are case-sensitive, as names are"
    assert kept(CallFilter(outcomes=frozenset({"timeout", "error"}))) == [3, 4]
    assert kept(CallFilter(slower_than=250.0)) == [3], "slower than: strictly more"
    assert kept(CallFilter(slower_than=0.5)) == [1, 2, 3]
    assert kept(CallFilter(since=datetime.datetime(2026, 11, 30, 7, tzinfo=UTC))) == [2, 3, 4], "at T or later"
    both = CallFilter(children=frozenset({"git"}), slower_than=1000.0, since=datetime.datetime(2026, 1, 1, tzinfo=UTC))
    assert kept(both) == [3]


def test_lines_with_missing_or_odd_fields_never_match_by_accident_nor_raise() -> None:
    odd: list[dict[str, Any]] = [
        {"event": "call"},
        {"event": "call", "child": ["git"], "name": 7, "outcome": {"x": 1}, "duration_ms": True, "timestamp": 5},
        {"event": "call", "timestamp": "not a time", "duration_ms": "12"},
    ]
    strict = [
        CallFilter(children=frozenset({"git"})),
        CallFilter(tool="*"),
        CallFilter(outcomes=frozenset({"ok"})),
        CallFilter(slower_than=0.0),
        CallFilter(since=datetime.datetime(2000, 1, 1, tzinfo=UTC)),
    ]
    assert all(not f.matches(e) for f in strict for e in odd)
    assert all(CallFilter().matches(e) for e in odd)


def test_the_outcomes_accepted_are_those_the_call_log_documents() -> None:
    page = (REPO / "docs" / "call-log.md").read_text()
    section = page.split("### `outcome`", 1)[1].split("\n\n", 2)[1]
    documented = re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE)
    assert tuple(documented) == OUTCOMES


# ---- the command on files ------------------------------------------------------------------------------------


def test_the_table_shows_only_calls_and_survives_malformed_lines(tmp_path: Path) -> None:
    path = tmp_path / "hub.log"
    write_log(
        path,
        [
            {"event": "hub_started", "level": "info", "timestamp": "2026-11-30T05:59:00Z"},
            call(1, ms=3.79, at="2026-11-30T06:11:03.496651Z"),
            "2026-11-30 06:11:04 [info     ] child_ready   child=git",  # console format
            '{"method": "tools/call", "event": "call", "outc',  # a line a crash cut short
            "[1, 2, 3]",
            "\x00\x01 binary \xff",
            "",
            call(
                2,
                child="slow",
                name="slow_die",
                outcome="unavailable",
                ms=44.67,
                at="2026-11-30T06:20:46.863224Z",
                identity="bob",
                error_message="server 'slow' closed the connection;\nexited with code 3; last stderr: " + "x" * 100,
            ),
        ],
    )
    with path.open("ab") as raw:
        raw.write(b"\xff\xfe not utf-8\n" + b'{"deep": ' * 100_000 + b"\n")
    status, out, err = logs(str(path))
    assert status == 0
    assert table_rows(out) == [
        ["2026-11-30T06:11:03.496Z", "alice", "time", "time_get_current_time", "ok", "3.79"],
        [
            "2026-11-30T06:20:46.863Z",
            "bob",
            "slow",
            "slow_die",
            "unavailable",
            "44.67",
            "server 'slow' closed the connection; exited with code 3; ...",
        ],
    ]
    assert summary_rows(out)[("total", "")] == ["2", "1", "3.79", "44.67"]
    assert "skipped 6 line(s) that are not JSON" in err


def test_json_prints_the_matching_lines_byte_for_byte_and_the_summary_on_stderr(tmp_path: Path) -> None:
    path = tmp_path / "hub.log"
    write_log(
        path,
        [
            call(1),
            call(2, outcome="tool_error", ms=9.5),
            {"event": "child_ready", "child": "time"},
            call(3, outcome="tool_error", ms=0.5),
        ],
    )
    path.write_text(path.read_text().replace('"duration_ms": ', '"duration_ms":   '))  # kept only if not re-encoded
    status, out, err = logs(str(path), "--json", "--outcome", "tool_error")
    assert status == 0
    assert out.splitlines() == [path.read_text().splitlines()[i] for i in (1, 3)]
    assert '"duration_ms":   9.5' in out
    assert [json.loads(line)["request_id"] for line in out.splitlines()] == [2, 3]
    assert summary_rows(err)[("time", "time_get_current_time")] == ["2", "2", "0.50", "9.50"]


def test_rotated_files_are_read_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "hub.log"
    write_log(tmp_path / "hub.log.2", [call(1), call(2)])
    write_log(tmp_path / "hub.log.1", [call(3)])
    write_log(path, [call(4), call(5)])
    write_log(tmp_path / "hub.log.1.gz", [call(99)])  # not a sibling hub logs reads
    status, out, _ = logs(str(path), "--json")
    assert status == 0
    assert [json.loads(line)["request_id"] for line in out.splitlines()] == [1, 2, 3, 4, 5]
    path.unlink()
    status, out, _ = logs(str(path), "--json")
    assert status == 0 and [json.loads(line)["request_id"] for line in out.splitlines()] == [1, 2, 3]


def test_no_file_and_no_match_are_said_plainly(tmp_path: Path) -> None:
    status, _, err = logs(str(tmp_path / "absent.log"))
    assert status == 1 and err == f"hub: no such file: {tmp_path / 'absent.log'}\n"
    write_log(tmp_path / "hub.log", [call(1)])
    status, out, _ = logs(str(tmp_path / "hub.log"), "--child", "git")
    assert status == 0 and out == "no matching calls\n"


def test_the_default_log_is_hub_log_file_of_servers_yaml_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "conf" / "servers.yaml"
    config.parent.mkdir()
    (tmp_path / "logs").mkdir()
    write_log(tmp_path / "logs" / "hub.log", [call(1)])
    # Another variable the shell has not set must not matter: only hub.log_file is read.
    config.write_text(
        "hub:\n  log_file: ${LOG_DIR:-../logs}/hub.log\nservers:\n  s:\n    url: https://x/mcp\n"
        "    headers: {Authorization: 'Bearer ${UNSET_TOKEN}'}\n"
    )
    monkeypatch.delenv("UNSET_TOKEN", raising=False)
    monkeypatch.delenv("LOG_DIR", raising=False)
    status, out, _ = logs("--json", config=str(config))
    assert status == 0 and json.loads(out)["request_id"] == 1
    write_log(tmp_path / "other.log", [call(2)])
    assert json.loads(logs("--json", str(tmp_path / "other.log"), config=str(config))[1])["request_id"] == 2
    assert (
        json.loads(logs("--json", "--log-file", str(tmp_path / "other.log"), config=str(config))[1])["request_id"] == 2
    )
    # No hub.log_file: the desktop's default call log, in the user's log directory (not written yet, then written).
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    config.write_text("servers: {}\n")
    status, _, err = logs(config=str(config))
    assert status == 1 and f"no call log at {tmp_path / 'state' / 'hub' / 'log' / 'hub.log'} yet" in err
    status, _, err = logs(config=None)
    assert status == 1 and "give FILE, or --log-file PATH, or set hub.log_file in servers.yaml" in err
    (tmp_path / "state" / "hub" / "log").mkdir(parents=True)
    write_log(tmp_path / "state" / "hub" / "log" / "hub.log", [call(3)])
    assert json.loads(logs("--json", config=str(config))[1])["request_id"] == 3
    assert json.loads(logs("--json", config=None)[1])["request_id"] == 3
    config.write_text("hub:\n  log_file: false\nservers: {}\n")
    status, _, err = logs(config=str(config))
    assert status == 1 and "sets hub.log_file: false, so no log file is written" in err

    # As the hub reads it: from an included file, with a variable of servers.env.
    (config.parent / "team.yaml").write_text("hub:\n  log_file: ${LOG_DIR}/hub.log\nservers: {}\n")
    (config.parent / "servers.env").write_text("LOG_DIR=../logs\n")
    config.write_text("include: [team.yaml]\nservers: {}\n")
    status, out, err = logs("--json", config=str(config))
    assert status == 0 and json.loads(out)["request_id"] == 1, err
