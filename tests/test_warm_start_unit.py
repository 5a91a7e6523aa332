"""Warm start's pure logic: what the early front answers and holds, and what the cache keeps (no processes)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from hub.warm_start import KEEP_FILES, REPLAY_ID, Answers, EarlyFront, WarmStart, cache_file

INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {"listChanged": True}},
    "serverInfo": {"name": "hub"},
}
LISTING = b'{"tools":[{"name":"a_b","inputSchema":{"type":"object"}}]}'


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def initialize(request_id: Any = 0, version: str = "2025-11-25") -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {"protocolVersion": version}})


@pytest.fixture
def front(monkeypatch: pytest.MonkeyPatch) -> tuple[EarlyFront, list[dict[str, Any]]]:
    written: list[dict[str, Any]] = []
    monkeypatch.setattr(EarlyFront, "_write", staticmethod(lambda data: written.append(json.loads(data))))
    return EarlyFront(Answers("2025-11-25", INIT, LISTING)), written


def test_initialize_then_tools_list_and_ping_are_answered_and_the_rest_held_in_order(front: Any) -> None:
    early, written = front
    for raw in (
        initialize(7),
        line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        b"   ",
        line({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}),
        line({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "a_b"}}),
        line({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
        line({"jsonrpc": "2.0", "id": 10, "method": "tools/list", "params": {"cursor": "2"}}),
        b"not json",
    ):
        early._take(raw)
    assert written == [
        {"jsonrpc": "2.0", "id": 7, "result": INIT},
        {"jsonrpc": "2.0", "id": 8, "result": json.loads(LISTING)},
        {"jsonrpc": "2.0", "id": "p", "result": {}},
    ]
    held = [json.loads(raw) if raw != b"not json" else raw for raw in early._handoff.lines]
    assert held[0] == {**json.loads(initialize(7)), "id": REPLAY_ID}, "the SDK session still sees the initialize"
    assert [m["method"] if isinstance(m, dict) else m for m in held[1:]] == [
        "notifications/initialized",
        "tools/call",
        "tools/list",
        b"not json",
    ]
    assert early._handoff.initialize == INIT and early._handoff.listing == LISTING


@pytest.mark.parametrize(
    "first",
    [
        [initialize(1, "2025-06-18")],  # another revision than the cached answer's
        [line({"jsonrpc": "2.0", "id": 1, "method": "ping"}), initialize(2)],  # not the first message
    ],
)
def test_nothing_is_answered_without_a_matching_first_initialize(front: Any, first: list[bytes]) -> None:
    early, written = front
    for raw in [*first, line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})]:
        early._take(raw)
    assert written == []
    assert early._handoff.lines == [*first, line({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})]
    assert early._handoff.initialize is None


def test_answers_round_trip_readable_by_the_user_alone_and_a_foreign_file_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "x.json"
    Answers("2025-11-25", INIT, LISTING).save(path)
    assert Answers.load(path) == Answers("2025-11-25", INIT, LISTING)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    path.write_text('{"format": 99}\n{}')
    assert Answers.load(path) is None
    assert Answers.load(tmp_path / "missing.json") is None


def test_the_key_changes_with_the_config_bytes_and_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUB_CACHE_DIR", str(tmp_path / "c"))
    one, two = tmp_path / "a.yaml", tmp_path / "b.yaml"
    one.write_text("servers: {}\n")
    two.write_text("servers: {}\n")
    key = cache_file(one)
    assert key is not None and key.parent == tmp_path / "c"
    assert cache_file(two) != key
    one.write_text("servers: {}\n# edited\n")
    assert cache_file(one) != key
    assert cache_file(tmp_path / "absent.yaml") is None


def test_a_replayed_answer_that_differs_is_a_mismatch_and_the_listing_kept_goes_with_it(tmp_path: Path) -> None:
    warm = WarmStart(tmp_path / "w.json")
    warm.sent = INIT
    warm.saw_initialize(json.loads(initialize(REPLAY_ID)))
    newer = {**INIT, "serverInfo": {"name": "hub", "version": "2"}}
    assert warm.answer(REPLAY_ID, newer) is True, "the host already has an answer: dropped"
    assert warm.mismatch == newer
    warm.listing("2024-11-05", LISTING)  # another revision than the one initialize negotiated: not kept
    assert not (tmp_path / "w.json").exists()
    warm.listing("2025-11-25", LISTING)
    assert Answers.load(tmp_path / "w.json") == Answers("2025-11-25", newer, LISTING)


def test_an_ordinary_initialize_answer_is_recorded_and_sent(tmp_path: Path) -> None:
    warm = WarmStart(tmp_path / "w.json")
    warm.saw_initialize(json.loads(initialize(1)))
    assert warm.answer(2, INIT) is False and warm.answer(1, INIT) is False  # other ids pass; its own is sent too
    assert warm.mismatch is None
    warm.listing("2025-11-25", LISTING)
    assert Answers.load(tmp_path / "w.json") == Answers("2025-11-25", INIT, LISTING)


def test_the_cache_directory_keeps_only_the_most_recent_files(tmp_path: Path) -> None:
    for index in range(KEEP_FILES + 5):
        path = tmp_path / f"{index:03d}.json"
        Answers("2025-11-25", INIT, LISTING).save(path)
        os.utime(path, (1_000_000 + index, 1_000_000 + index))  # written one second apart
    kept = sorted(p.name for p in tmp_path.glob("*.json"))
    assert len(kept) == KEEP_FILES and kept[0] == "005.json", "the oldest went first"
