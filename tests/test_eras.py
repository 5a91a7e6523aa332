"""Pure logic of the era bridge and of attributing child requests to host sessions (no processes)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from hub.eras import MAX_INPUT_ROUNDS, child_log_level, client_mode, drive_input_rounds, strip_child_stamp
from hub.relay import Ambiguous, Waiting, owner_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def host_request(connection: object) -> Any:
    """Just what attribution looks at: the request's session connection."""
    return SimpleNamespace(session=SimpleNamespace(_connection=connection))


def test_one_session_in_flight_owns_the_childs_request_even_with_several_calls() -> None:
    session = object()
    first, second = host_request(session), host_request(session)
    assert owner_of([first, second]) is second
    assert owner_of([]) is None


def test_several_sessions_in_flight_are_ambiguous() -> None:
    owner = owner_of([host_request(object()), host_request(object()), host_request(object())])
    assert isinstance(owner, Ambiguous) and owner.sessions == 3


def test_a_parked_call_is_a_session_of_its_own() -> None:
    parked = Waiting()
    assert owner_of([parked]) is parked
    assert isinstance(owner_of([parked, host_request(object())]), Ambiguous)


def test_pinned_2026_still_discovers_capabilities() -> None:
    assert client_mode("legacy") == "legacy"
    assert client_mode("auto") == client_mode("2026-07-28") == "auto"


def test_log_opt_in_toward_a_2026_child() -> None:
    opted = {types.LOG_LEVEL_META_KEY: "info"}
    assert child_log_level("2026-07-28", opted, "debug") == "info", "a 2026 host's own opt-in wins"
    assert child_log_level("2026-07-28", None, "debug") is None, "a 2026 host that did not opt in gets none"
    assert child_log_level("2025-11-25", None, "warning") == "warning", "a 2025 host's setLevel becomes the opt-in"
    assert child_log_level("2025-11-25", None, None) is None


def test_the_childs_server_info_stamp_is_dropped_and_vendor_meta_kept() -> None:
    stamped = {"content": [], "_meta": {types.SERVER_INFO_META_KEY: {"name": "child"}, "com.x/trace": "1"}}
    assert strip_child_stamp(stamped) == {"content": [], "_meta": {"com.x/trace": "1"}}
    assert strip_child_stamp({"content": [], "_meta": {types.SERVER_INFO_META_KEY: {}}}) == {"content": []}
    assert strip_child_stamp({"content": []}) == {"content": []}


SAMPLE = {"method": "sampling/createMessage",
          "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "q"}}], "maxTokens": 5}}
ANSWER = types.CreateMessageResult(role="assistant", content=types.TextContent(text="a"), model="m")


async def test_input_rounds_are_asked_of_the_host_and_resent_with_the_state() -> None:
    asked: list[str] = []
    resent: list[tuple[dict[str, Any], str | None]] = []

    async def ask(request: types.ServerRequest) -> Any:
        asked.append(request.method)
        return ANSWER

    async def resend(responses: dict[str, Any], state: str | None) -> dict[str, Any]:
        resent.append((responses, state))
        if len(resent) == 1:
            return {"resultType": "input_required", "inputRequests": {"again": SAMPLE}, "requestState": "s2"}
        return {"content": [{"type": "text", "text": "done"}], "resultType": "complete"}

    first = {"resultType": "input_required", "inputRequests": {"q": SAMPLE}, "requestState": "s1"}
    result = await drive_input_rounds(first, ask, resend)
    assert result["content"][0]["text"] == "done"
    assert asked == ["sampling/createMessage"] * 2
    assert [(list(r), s) for r, s in resent] == [(["q"], "s1"), (["again"], "s2")]


async def test_a_refused_input_request_fails_the_call_and_endless_rounds_stop() -> None:
    first = {"resultType": "input_required", "inputRequests": {"q": SAMPLE}}

    async def refuse(request: types.ServerRequest) -> Any:
        return types.ErrorData(code=types.INVALID_REQUEST, message="no sampling here")

    async def never(responses: dict[str, Any], state: str | None) -> dict[str, Any]:
        return first

    with pytest.raises(MCPError, match="no sampling here"):
        await drive_input_rounds(first, refuse, never)

    async def answer(request: types.ServerRequest) -> Any:
        return ANSWER

    with pytest.raises(MCPError, match=f"more than {MAX_INPUT_ROUNDS}"):
        await drive_input_rounds(first, answer, never)
