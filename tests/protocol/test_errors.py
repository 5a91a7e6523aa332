"""What the host gets for each way a routed request fails (hub.protocol.errors): an isError result for a tools/call
that failed short of the child's own answer, a JSON-RPC error otherwise."""

from __future__ import annotations

import pytest

from hub.protocol import errors
from hub.protocol.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, REQUEST_TIMEOUT


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (errors.Unavailable("down", {"server": "a"}), "unavailable"),
        (errors.Busy("busy"), "busy"),
        (errors.TimedOut("slow", {"server": "a"}), "timeout"),
        (errors.TooLarge("big"), "too_large"),
    ],
)
def test_a_tool_call_that_failed_short_of_the_child_is_an_is_error_result(error: errors.HubError, outcome: str) -> None:
    assert errors.answer(error, "tools/call") == (
        {"content": [{"type": "text", "text": error.message}], "isError": True},
        None,
    )
    assert error.outcome == outcome


@pytest.mark.parametrize(
    ("error", "wire"),
    [
        (
            errors.Unavailable("down", {"server": "a"}),
            {"code": INTERNAL_ERROR, "message": "down", "data": {"server": "a"}},
        ),
        (errors.TimedOut("slow"), {"code": REQUEST_TIMEOUT, "message": "slow"}),
        (errors.BadRequest("bad"), {"code": INVALID_PARAMS, "message": "bad"}),
        (errors.InvalidRequest("dup"), {"code": INVALID_REQUEST, "message": "dup"}),
    ],
)
def test_other_methods_get_a_json_rpc_error(error: errors.HubError, wire: dict[str, object]) -> None:
    assert errors.answer(error, "resources/read") == (None, wire)


@pytest.mark.parametrize(
    "error",
    [errors.BadRequest("bad"), errors.UnknownName("Unknown tool: 'x'"), errors.ChildError(-5, "a: no", {"d": 1})],
)
def test_what_the_host_or_the_child_got_wrong_is_an_error_even_for_a_tool_call(error: errors.HubError) -> None:
    result, wire = errors.answer(error, "tools/call")
    assert result is None
    assert wire is not None and wire["code"] == error.code


def test_a_childs_error_keeps_its_code_and_data_and_names_the_child() -> None:
    error = errors.child_error("time", {"code": -32602, "message": "bad zone", "data": {"tz": "Mars"}})
    assert isinstance(error, errors.ChildError)
    assert (error.code, error.message, error.data, error.outcome) == (-32602, "time: bad zone", {"tz": "Mars"}, "error")


def test_a_child_closing_the_connection_under_a_request_is_unavailable() -> None:
    error = errors.child_error("time", {"code": -32000, "message": "Connection closed"})
    assert isinstance(error, errors.Unavailable)
    assert error.message == "server 'time' closed the connection (Connection closed)"
    assert error.data == {"server": "time"}


def test_a_child_error_without_a_usable_code_or_message_is_an_internal_error() -> None:
    error = errors.child_error("time", {"code": 1.5, "message": ["x"]})
    assert (error.code, error.message) == (INTERNAL_ERROR, "time: an error without a message")
