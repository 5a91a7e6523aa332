"""The hub's log file: whole lines only, each exactly once across the rotated files, from any thread; reopened on
request (SIGHUP, after logrotate moved it); and followed across rotations, each line once."""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from hub.config import ConfigError, load_config
from hub.logfile import Follower, LogFile, rotated_siblings
from hub.logs import configure_logging, reopen_log_file


def every_file(path: Path) -> list[Path]:
    return [*rotated_siblings(path), path]


def all_lines(path: Path) -> list[str]:
    """Every line of the file and its rotated siblings, oldest first; asserts that each file ends with a newline."""
    lines: list[str] = []
    for file in every_file(path):
        text = file.read_text()
        assert text == "" or text.endswith("\n"), f"{file.name} ends in the middle of a line"
        lines += text.splitlines()
    return lines


@pytest.fixture
def open_log() -> Iterator[Callable[..., LogFile]]:
    """`LogFile(...)`, closed after the test whether it passed or not: a file left open is a ResourceWarning whenever
    the collector gets to it, in whichever test runs then."""
    opened: list[LogFile] = []

    def open_(path: Path, max_bytes: int = 0, backups: int = 1) -> LogFile:
        opened.append(LogFile(path, max_bytes, backups))
        return opened[-1]

    yield open_
    for log in opened:
        log.close()


def test_rotation_keeps_every_line_once_in_order_and_no_file_over_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "hub.log"
    log = LogFile(path, max_bytes=500, backups=1000)
    written = [f'{{"n": {i}, "pad": "{"x" * (i % 40)}"}}' for i in range(400)]
    for line in written:
        log.write(line + "\n")
    log.close()
    assert all_lines(path) == written
    files = every_file(path)
    assert len(files) > 10, "the limit was crossed many times"
    assert all(f.stat().st_size <= 500 for f in files)
    assert [f.name for f in files[-3:]] == ["hub.log.2", "hub.log.1", "hub.log"]


def test_the_oldest_files_beyond_backups_are_deleted(tmp_path: Path) -> None:
    path = tmp_path / "hub.log"
    log = LogFile(path, max_bytes=100, backups=2)
    for i in range(100):
        log.write(f"line {i:03d} {'.' * 40}\n")
    log.close()
    assert [f.name for f in every_file(path)] == ["hub.log.2", "hub.log.1", "hub.log"]
    assert all_lines(path)[-1] == f"line 099 {'.' * 40}"


def test_a_line_longer_than_the_limit_is_written_whole_in_a_file_of_its_own(
    tmp_path: Path, open_log: Callable[..., LogFile]
) -> None:
    path = tmp_path / "hub.log"
    log = open_log(path, max_bytes=50, backups=5)
    log.write("short\n")
    log.write("L" * 200 + "\n")
    log.write("after\n")
    assert [f.read_text() for f in every_file(path)] == ["short\n", "L" * 200 + "\n", "after\n"]


def test_max_bytes_zero_never_rotates(tmp_path: Path, open_log: Callable[..., LogFile]) -> None:
    path = tmp_path / "hub.log"
    log = open_log(path, max_bytes=0)
    for i in range(1000):
        log.write(f"{i}\n")
    assert rotated_siblings(path) == [] and len(path.read_text().splitlines()) == 1000


def test_threads_printing_lines_in_two_writes_never_split_or_mix_them(
    tmp_path: Path, open_log: Callable[..., LogFile]
) -> None:
    """print() writes a message, then its newline (structlog's PrintLogger does so); with 8 threads at once and a
    rotation every few lines, each file still holds whole lines, and every line is there exactly once."""
    path = tmp_path / "hub.log"
    log = open_log(path, max_bytes=2000, backups=10_000)
    start = threading.Barrier(8)

    def writer(t: int) -> None:
        start.wait()
        for i in range(300):
            print(f'{{"thread": {t}, "i": {i}, "text": "{"abc" * (i % 7)}"}}', file=log)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    seen = [json.loads(line) for line in all_lines(path)]  # each line is one whole JSON object
    assert sorted((e["thread"], e["i"]) for e in seen) == [(t, i) for t in range(8) for i in range(300)]
    for t in range(8):
        assert [e["i"] for e in seen if e["thread"] == t] == list(range(300)), "each thread's lines in order"


def test_reopen_begins_a_new_file_after_the_old_one_was_moved_away(
    tmp_path: Path, open_log: Callable[..., LogFile]
) -> None:
    path = tmp_path / "hub.log"
    log = open_log(path, max_bytes=0)
    log.write("before\n")
    path.rename(tmp_path / "hub.log.moved")
    log.write("still the old file until reopened\n")
    log.reopen()
    log.write("after\n")
    assert (tmp_path / "hub.log.moved").read_text() == "before\nstill the old file until reopened\n"
    assert path.read_text() == "after\n"


def test_close_ends_a_line_left_without_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "hub.log"
    log = LogFile(path)
    log.write("whole\npart")
    assert path.read_text() == "whole\n"
    log.close()
    assert path.read_text() == "whole\npart\n"


def test_rotated_siblings_are_numbered_files_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "hub[1].log"  # glob characters in the name are names, not patterns
    for name in ("hub[1].log", "hub[1].log.1", "hub[1].log.2", "hub[1].log.10", "hub[1].log.3.gz", "hub[1].log.x"):
        (tmp_path / name).write_text("")
    (tmp_path / "hub[1].log.0").write_text("")
    assert [p.name for p in rotated_siblings(path)] == ["hub[1].log.10", "hub[1].log.2", "hub[1].log.1"]


def test_structlog_stdlib_and_the_call_log_share_the_rotating_file(tmp_path: Path, restore_logging: None) -> None:
    path = tmp_path / "hub.log"
    call_log = configure_logging("json", "info", str(path), max_bytes=600, backups=100)
    for i in range(30):
        structlog.get_logger("test").info("event_of_structlog", i=i)
        logging.getLogger("test.stdlib").warning("from stdlib %d", i)
        call_log({"method": "tools/call", "name": f"t_{i}", "outcome": "ok", "duration_ms": 1.0})
    lines = [json.loads(line) for line in all_lines(path)]
    assert [e["i"] for e in lines if e["event"] == "event_of_structlog"] == list(range(30))
    assert [e["event"] for e in lines if e["event"].startswith("from stdlib")] == [
        f"from stdlib {i}" for i in range(30)
    ]
    assert [e["name"] for e in lines if e["event"] == "call"] == [f"t_{i}" for i in range(30)]
    assert len(rotated_siblings(path)) > 3


def test_reopen_log_file_moves_on_to_a_new_file_and_says_so(tmp_path: Path, restore_logging: None) -> None:
    path = tmp_path / "hub.log"
    call_log = configure_logging("json", "info", str(path))
    structlog.get_logger("test").info("first")
    path.rename(tmp_path / "hub.log.old")
    reopen_log_file(call_log)
    structlog.get_logger("test").info("second")
    assert [json.loads(line)["event"] for line in (tmp_path / "hub.log.old").read_text().splitlines()] == ["first"]
    new = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["event"] for e in new] == ["log_file_reopened", "second"]
    assert re.search(r"hub\.log$", new[0]["file"])


# ---- following -----------------------------------------------------------------------------------------------


def test_follow_reads_appended_lines_across_rotation_and_truncation(tmp_path: Path) -> None:
    path = tmp_path / "hub.log"
    path.write_text("old 1\nold 2\nhalf of a li")
    follower = Follower(path, from_end=True)
    assert follower.poll() == []
    with path.open("a") as f:
        f.write("ne\nnew 1\nnew ")
    assert follower.poll() == ["new 1"], "the line begun before the start is not one; an unfinished one waits"
    with path.open("a") as f:
        f.write("2\n")
    assert follower.poll() == ["new 2"]
    # Rotation: the last lines of the old file first, then the new file from its start.
    with path.open("a") as f:
        f.write("last of old\n")
    path.rename(tmp_path / "hub.log.1")
    assert follower.poll() == ["last of old"], "moved away, no new file yet: the old one is still read"
    with (tmp_path / "hub.log.1").open("a") as f:
        f.write("late in old\n")
    path.write_text("first of new\n")
    assert follower.poll() == ["late in old", "first of new"]
    # Truncation in place (copytruncate): read again from the start.
    path.write_text("")
    assert follower.poll() == []
    with path.open("a") as f:
        f.write("after truncation\n")
    assert follower.poll() == ["after truncation"]
    follower.close()


def test_follow_waits_for_a_file_not_there_yet_and_reads_it_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "hub.log"
    follower = Follower(path, from_end=True)
    assert follower.poll() == [] and follower.identity is None
    path.write_text("one\ntwo\n")
    assert follower.poll() == ["one", "two"]
    follower.close()


def test_follow_reads_every_file_rotated_between_two_polls_each_line_once(
    tmp_path: Path, open_log: Callable[..., LogFile]
) -> None:
    path = tmp_path / "hub.log"
    log = open_log(path, max_bytes=60, backups=1000)
    log.write("start\n")
    follower = Follower(path, from_end=True)
    written: list[str] = []
    for round_ in range(5):
        for i in range(40):  # about 13 rotations between two polls
            written.append(f"round {round_} line {i:02d} ....")
            log.write(written[-1] + "\n")
        assert len(rotated_siblings(path)) > 10 * (round_ + 1)
    followed = follower.poll()
    assert followed == written
    log.write("one more\n")
    assert follower.poll() == ["one more"]
    follower.close()


def test_follow_after_the_old_file_was_deleted_reads_the_files_written_since(
    tmp_path: Path, open_log: Callable[..., LogFile]
) -> None:
    path = tmp_path / "hub.log"
    log = open_log(path, max_bytes=40, backups=2)
    log.write("first line, followed from here ..\n")
    follower = Follower(path, from_end=False)
    assert follower.poll() == ["first line, followed from here .."]
    for i in range(3):  # the followed file rotates to .1, .2, then past backups: deleted
        log.write(f"line {i} ..............................\n")
    assert follower.poll() == [f"line {i} .............................." for i in range(3)]
    follower.close()


def test_the_log_settings_have_defaults_bounds_and_a_path_relative_to_servers_yaml(tmp_path: Path) -> None:
    path = tmp_path / "servers.yaml"
    path.write_text("servers: {}\n")
    loaded = load_config(path)
    assert loaded.log_path is None
    assert (loaded.config.hub.log_rotate.max_bytes, loaded.config.hub.log_rotate.backups) == (10 * 1024 * 1024, 5)
    path.write_text("hub:\n  log_file: logs/hub.log\n  log_rotate: {max_bytes: 0, backups: 2}\nservers: {}\n")
    loaded = load_config(path)
    assert loaded.log_path == tmp_path / "logs" / "hub.log"
    assert loaded.config.hub.log_rotate.max_bytes == 0
    path.write_text("hub:\n  log_rotate: {backups: 0, max_bytes: -1}\nservers: {}\n")
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert "hub.log_rotate.backups" in str(refused.value) and "hub.log_rotate.max_bytes" in str(refused.value)


def test_a_rotation_that_fails_loses_no_line_and_is_tried_again_later(
    tmp_path: Path,
    open_log: Callable[..., LogFile],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "hub.log"
    log = open_log(path, max_bytes=100, backups=5)
    replace = os.replace
    failures = iter([OSError("the file is held open elsewhere")])

    def flaky_replace(src: Any, dst: Any) -> None:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        replace(src, dst)

    monkeypatch.setattr(os, "replace", flaky_replace)
    written = [f"line {i:02d} {'.' * 31}" for i in range(8)]  # 40 bytes each: a rotation due every 2 lines
    for line in written:
        log.write(line + "\n")
    assert all_lines(path) == written
    assert "hub: cannot rotate" in capsys.readouterr().err
    sizes = [f.stat().st_size for f in every_file(path)]
    # The rotation at 80 bytes failed: the file may grow to 80 + max_bytes before the next try, which succeeds.
    assert sizes == [160, 80, 80]


def test_a_deleted_log_file_is_begun_again_at_the_next_rotation(
    tmp_path: Path, open_log: Callable[..., LogFile]
) -> None:
    path = tmp_path / "hub.log"
    log = open_log(path, max_bytes=30, backups=5)
    log.write("x" * 20 + "\n")
    path.unlink()
    log.write("y" * 20 + "\n")
    assert path.read_text() == "y" * 20 + "\n" and rotated_siblings(path) == []
