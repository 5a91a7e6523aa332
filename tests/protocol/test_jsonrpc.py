"""JSON-RPC framing (hub.protocol.jsonrpc) on well-formed and hostile input: every byte sequence ends as a Request,
Notification, Response or Invalid (with the id kept when it is usable), never as an exception."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hub.protocol.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    LARGE_ANSWER,
    PARSE_ERROR,
    QUOTE_LIMIT,
    EncodeError,
    Invalid,
    LoneSurrogate,
    Message,
    Notification,
    Request,
    Response,
    classify,
    encode,
    encode_strict,
    error_line,
    is_id,
    notification_line,
    parse,
    parse_answer,
    quote,
    request_line,
    result_line,
    surrogate_path,
)


def one(line: bytes) -> Message:
    message = parse(line)
    assert not isinstance(message, list)
    return message


def invalid(line: bytes) -> Invalid:
    message = one(line)
    assert isinstance(message, Invalid), message
    return message


# ---- well-formed messages -----------------------------------------------------------------------------------


def test_a_request_keeps_its_id_method_params_and_raw_line() -> None:
    line = b'{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"x"}}'
    assert one(line) == Request("a-1", "tools/call", {"name": "x"}, line)


def test_absent_params_are_an_empty_object() -> None:
    assert one(b'{"jsonrpc":"2.0","id":1,"method":"ping"}') == Request(
        1, "ping", {}, b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    )


def test_a_message_without_id_is_a_notification() -> None:
    assert one(b'{"jsonrpc":"2.0","method":"notifications/initialized"}') == Notification(
        "notifications/initialized", {}
    )


def test_results_and_errors_are_responses() -> None:
    assert one(b'{"jsonrpc":"2.0","id":3,"result":{"a":1}}') == Response(3, {"a": 1}, None)
    assert one(b'{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}') == Response(
        "x", None, {"code": 1, "message": "m"}
    )


# ---- hostile input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [b"", b"not json", b'{"jsonrpc":"2.0",', b"\xff\xfe\x00", b'{"jsonrpc":"2.0","id":"\xff","method":"m"}'],
    ids=["empty", "text", "cut-short", "invalid-utf8", "invalid-utf8-in-the-id"],
)
def test_what_is_not_json_is_a_parse_error_without_id(line: bytes) -> None:
    message = invalid(line)
    assert (message.code, message.id) == (PARSE_ERROR, None)
    assert message.reason.startswith("parse error: ")


def test_invalid_utf8_outside_the_id_is_a_parse_error_that_keeps_the_id() -> None:
    message = invalid(b'{"jsonrpc":"2.0","id":1,"method":"\xc0\xaf"}')
    assert (message.code, message.id) == (PARSE_ERROR, 1)
    assert message.reason.startswith("parse error: ")


def test_nesting_100000_deep_is_an_invalid_message_not_a_recursion_error() -> None:
    array = invalid(b"[" * 100_000 + b"1" + b"]" * 100_000)
    assert (array.code, array.id) == (PARSE_ERROR, None)
    member = invalid(b'{"a":' * 100_000 + b"1" + b"}" * 100_000)
    assert member.id is None
    assert member.code in (PARSE_ERROR, INVALID_REQUEST)
    assert "nested too deeply" in member.reason


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
        b'{"jsonrpc":"2.0","method":"x","params":' + b"[" * 100_000 + b"]" * 100_000 + b',"id":1}',
    ],
    ids=["id-first", "id-last"],
)
def test_params_nested_too_deeply_are_invalid_params_answerable_by_id(line: bytes) -> None:
    message = invalid(line)
    assert (message.code, message.id) == (INVALID_PARAMS, 1)
    assert "nested too deeply" in message.reason


def test_lone_surrogates_in_method_and_id_are_kept_and_can_be_answered() -> None:
    message = one(b'{"jsonrpc":"2.0","id":"\\ud800","method":"tools/\\udfff"}')
    assert isinstance(message, Request)
    assert (message.id, message.method) == ("\ud800", "tools/\udfff")
    answer = error_line(message.id, -32601, f"Method not found: {message.method!r}")
    assert answer.isascii() and answer.endswith(b"\n"), "escaped rather than refused"
    assert json.loads(answer)["id"] == "\ud800"
    assert json.loads(result_line(message.id, {"text": "\udfff"}))["result"] == {"text": "\udfff"}
    raw = one(b'{"jsonrpc":"2.0","id":1,"method":"\xed\xa0\x80"}')  # the same surrogate, written as UTF-8 bytes
    assert isinstance(raw, Request) and raw.method == "\ud800"


def test_a_wrong_jsonrpc_version_is_an_invalid_request_keeping_the_id() -> None:
    message = invalid(b'{"jsonrpc":"1.0","id":7,"method":"ping"}')
    assert message == Invalid(INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0", not "1.0"', 7)
    assert invalid(b'{"id":8,"method":"ping"}') == Invalid(
        INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0", not null', 8
    )


@pytest.mark.parametrize(
    ("method", "kind"), [("1", "a number"), ("null", "null"), ('["a"]', "an array"), ("{}", "an object")]
)
def test_a_method_that_is_not_a_string_is_an_invalid_request_keeping_the_id(method: str, kind: str) -> None:
    message = invalid(b'{"jsonrpc":"2.0","id":"q","method":%b}' % method.encode())
    assert message == Invalid(INVALID_REQUEST, f'invalid request: "method" must be a string, not {kind}', "q")


@pytest.mark.parametrize(("params", "kind"), [("[1,2]", "an array"), ('"x"', "a string"), ("null", "null")])
def test_params_that_are_not_an_object_are_invalid_params_keeping_the_id(params: str, kind: str) -> None:
    message = invalid(b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":%b}' % params.encode())
    assert message == Invalid(INVALID_PARAMS, f'invalid params: "params" must be an object, not {kind}', 9)


def test_a_notification_with_array_params_cannot_be_answered() -> None:
    message = invalid(b'{"jsonrpc":"2.0","method":"notifications/x","params":[1]}')
    assert (message.code, message.id) == (INVALID_PARAMS, None)


@pytest.mark.parametrize(
    ("value", "kind"),
    [("true", "a boolean"), ("false", "a boolean"), ("null", "null"), ("1.5", "a number"), ("[1]", "an array")],
)
def test_a_request_whose_id_is_not_a_string_or_integer_is_invalid_and_unanswerable(value: str, kind: str) -> None:
    message = invalid(b'{"jsonrpc":"2.0","id":%b,"method":"ping"}' % value.encode())
    assert message == Invalid(INVALID_REQUEST, f"invalid request: id must be a string or an integer, not {kind}")


@pytest.mark.parametrize("value", ["true", "null", "1.0", "{}"])
def test_a_response_whose_id_is_not_usable_is_invalid(value: str) -> None:
    message = invalid(b'{"jsonrpc":"2.0","id":%b,"result":{}}' % value.encode())
    assert (message.code, message.id) == (INVALID_REQUEST, None)


@pytest.mark.parametrize(
    "body",
    ['"result":[1]', '"result":{},"error":{"code":1,"message":"m"}', '"error":"bad"', '"result":null'],
    ids=["array-result", "both", "string-error", "null-result"],
)
def test_a_response_needs_exactly_one_object_result_or_error(body: str) -> None:
    message = invalid(b'{"jsonrpc":"2.0","id":4,%b}' % body.encode())
    assert message == Invalid(
        INVALID_REQUEST, "invalid response: it needs exactly one of an object 'result' or 'error'", 4
    )


@pytest.mark.parametrize(
    ("line", "kind"), [(b"1", "a number"), (b'"x"', "a string"), (b"null", "null"), (b"true", "a boolean")]
)
def test_a_json_value_that_is_not_an_object_is_an_invalid_request(line: bytes, kind: str) -> None:
    assert invalid(line) == Invalid(INVALID_REQUEST, f"invalid request: a message must be a JSON object, not {kind}")


def test_a_batch_gives_one_message_per_element_each_classified_on_its_own() -> None:
    batch = parse(
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},5,{"jsonrpc":"2.0","id":2,"method":3}]'
    )
    assert isinstance(batch, list)
    assert batch[0] == Request(1, "ping", {}, b"")
    assert batch[1] == Notification("n", {})
    assert isinstance(batch[2], Invalid) and batch[2].id is None
    assert isinstance(batch[3], Invalid) and batch[3].id == 2


def test_an_empty_batch_is_an_invalid_request() -> None:
    assert invalid(b"[]") == Invalid(INVALID_REQUEST, "invalid request: an empty batch")


def test_a_reason_quotes_at_most_the_limit_of_what_was_sent() -> None:
    message = invalid(b'{"jsonrpc":"' + b"x" * 10_000 + b'","id":1,"method":"m"}')
    assert len(message.reason) < QUOTE_LIMIT + 60
    assert message.reason.endswith('..."') or message.reason.endswith("...")


def test_classify_never_raises_on_any_decoded_value() -> None:
    values: tuple[Any, ...] = (
        None,
        0,
        1.5,
        "s",
        [],
        {},
        {"jsonrpc": "2.0"},
        {"jsonrpc": "2.0", "id": None},
        {"method": None},
    )
    for value in values:
        assert isinstance(classify(value, b""), Invalid)


def test_is_id_takes_strings_and_integers_only() -> None:
    values: tuple[Any, ...] = ("a", 0, -3, True, None, 1.0, [])
    assert [is_id(v) for v in values] == [True, True, True, False, False, False, False]


# ---- a child's answers: the exact bytes of a result ---------------------------------------------------------


def padded(line: bytes, large: bool) -> bytes:
    """`line` as it is, or over LARGE_ANSWER (a long text first in its result, else trailing blanks): a line that
    another parser decodes first (jsonrpc._large_result), which must come to the same message."""
    if not large:
        return line
    at = line.find(b'"result":{')
    if at < 0:
        return line + b" " * LARGE_ANSWER
    at += len(b'"result":{')
    pad = b'"pad":"' + b"x\\n" * (LARGE_ANSWER // 3) + b'"'
    return line[:at] + pad + (b"" if line[at : at + 1] == b"}" else b",") + line[at:]


LARGE = pytest.mark.parametrize("large", [False, True], ids=["small", "large"])


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}]}}',
        '{"jsonrpc":"2.0","id":12,"result":{"text":"h\u00e9llo \u2603"}}'.encode(),  # raw UTF-8: cut by characters
        b'{"jsonrpc":"2.0","id":0,"result":{"text":"caf\\u00e9", "n":[1,2.5,null]}}\r',
        b'{"jsonrpc":"2.0","id":3,"result":{"s":"\\ud800"}}',
    ],
)
@LARGE
def test_a_result_of_the_usual_shape_gives_the_childs_own_result_bytes(line: bytes, large: bool) -> None:
    line = padded(line, large)
    message = parse_answer(line)
    assert isinstance(message, Response) and message.exact is not None
    data = json.loads(line)
    assert (message.id, message.result) == (data["id"], data["result"])
    assert isinstance(message.id, int)
    assert b'{"jsonrpc":"2.0","id":%d,"result":%b}' % (message.id, message.exact) == line.rstrip()


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":7,"result":{"a":1},"result":{"a":2}}',  # a repeated key: json.loads keeps the last
        b'{"jsonrpc":"2.0","id":7,"result":{"a":1},"extra":true}',
        b'{"jsonrpc": "2.0", "id": 7, "result": {"a": 1}}',  # not compact
        b'{"id":7,"jsonrpc":"2.0","result":{"a":1}}',  # another order
        b'{"jsonrpc":"2.0","id":"7","result":{"a":1}}',  # a string id
    ],
)
@LARGE
def test_any_other_answer_is_parsed_whole_without_exact_bytes(line: bytes, large: bool) -> None:
    line = padded(line, large)
    message = parse_answer(line)
    assert isinstance(message, Response)
    assert message.exact is None
    assert message.result == json.loads(line)["result"]


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":07,"result":{}}',
        b'{"jsonrpc":"2.0","id":7,"result":{}',
        b'{"jsonrpc":"2.0","id":7,"result":\xff}',
        b'{"jsonrpc":"2.0","id":7,"result":[1]}',
        b'{"jsonrpc":"2.0","id":7,"result":{"a":NaN}}',
        b'{"jsonrpc":"2.0","id":7,"result":{"a":"\xff"}}',
        b'{"jsonrpc":"2.0","id":7,"result":{"a":1}}}',
    ],
)
@LARGE
def test_a_broken_answer_of_the_usual_shape_is_invalid(line: bytes, large: bool) -> None:
    assert isinstance(parse_answer(padded(line, large)), Invalid)


def test_a_deep_result_of_the_usual_shape_is_invalid_and_keeps_the_id() -> None:
    line = b'{"jsonrpc":"2.0","id":3,"result":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    message = parse_answer(line)
    assert isinstance(message, Invalid)
    assert message.id == 3, "the request it answers can be failed"
    assert "nested too deeply" in message.reason


def test_an_answer_with_a_long_integer_id_is_a_response_under_that_id() -> None:
    message = parse_answer(b'{"jsonrpc":"2.0","id":' + b"9" * 40 + b',"result":{}}')
    assert isinstance(message, Response) and message.id == int("9" * 40)


def test_an_answer_with_an_id_too_long_for_an_integer_is_a_parse_error_not_an_exception() -> None:
    for parser in (parse, parse_answer):
        message = parser(b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"result":{}}')
        assert isinstance(message, Invalid) and message.code == PARSE_ERROR


# ---- writing ------------------------------------------------------------------------------------------------


def test_encode_is_compact_utf8() -> None:
    assert encode({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'.encode()


def test_encode_escapes_a_lone_surrogate_rather_than_failing() -> None:
    assert encode({"t": "a\ud83d"}) == b'{"t":"a\\ud83d"}'


def test_encode_strict_is_the_same_utf8_json_when_every_string_is_text() -> None:
    value = {"a": [1, "é", "\U0001f600"], "b": None}
    assert encode_strict(value) == encode(value)


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"params": {"arguments": {"timezone": "\udfff"}}}, "params.arguments.timezone"),
        ({"params": {"items": ["ok", {"t": "a\ud83d"}]}}, "params.items[1].t"),
        ({"params": {"k\ud800": 1}}, "params.k\\ud800"),
        ({"method": "\ud800"}, "method"),
    ],
)
def test_encode_strict_refuses_a_lone_surrogate_naming_where_it_is(value: Any, path: str) -> None:
    with pytest.raises(LoneSurrogate) as caught:
        encode_strict(value)
    assert caught.value.path == path
    assert surrogate_path({"fine": ["text"]}) == ""


def test_encode_of_a_value_nested_too_deeply_is_an_encode_error() -> None:
    value: Any = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(EncodeError):
        encode(value)


def test_lines_are_one_message_each_ending_in_a_newline() -> None:
    assert request_line(1, "ping", None) == b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    assert request_line("a", "x", {"k": 1}) == b'{"jsonrpc":"2.0","id":"a","method":"x","params":{"k":1}}\n'
    assert notification_line("n", None) == b'{"jsonrpc":"2.0","method":"n"}\n'
    assert result_line(2, b'{"raw": true}') == b'{"jsonrpc":"2.0","id":2,"result":{"raw": true}}\n'
    assert result_line(2, {"a": 1}) == b'{"jsonrpc":"2.0","id":2,"result":{"a":1}}\n'
    assert (
        error_line(None, -32700, "parse error")
        == b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}\n'
    )
    assert json.loads(error_line(3, -1, "m", {"d": 1}))["error"] == {"code": -1, "message": "m", "data": {"d": 1}}


def test_an_error_whose_data_cannot_be_encoded_is_sent_without_it() -> None:
    data: Any = []
    for _ in range(100_000):
        data = [data]
    assert json.loads(error_line(3, -1, "m", data)) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -1, "message": "m"},
    }


def test_quote_cuts_long_values_and_never_fails() -> None:
    assert quote("x") == '"x"'
    assert quote("x" * 500) == '"' + "x" * (QUOTE_LIMIT - 4) + "..."
    assert len(quote(list(range(1000)))) == QUOTE_LIMIT
    assert quote(object()) == "object"
