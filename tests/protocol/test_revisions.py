"""Protocol revisions (hub.protocol.revisions): negotiating a handshake, reading a 2026-07-28 envelope, and shaping
results and `_meta` for each era."""

from __future__ import annotations

from typing import Any

import pytest

from hub.protocol import revisions
from hub.protocol.jsonrpc import INVALID_PARAMS, UNSUPPORTED_PROTOCOL_VERSION
from hub.protocol.revisions import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO,
    SERVER_INFO_KEY,
    Envelope,
    EnvelopeError,
    child_meta,
    has_envelope,
    read_envelope,
    stamp,
    unstamp,
)

MODERN = revisions.LATEST_MODERN


@pytest.mark.parametrize("version", revisions.HANDSHAKE_VERSIONS)
def test_a_handshake_version_the_hub_speaks_is_kept(version: str) -> None:
    assert revisions.initialize_result(version)["protocolVersion"] == version


@pytest.mark.parametrize("requested", ["1999-01-01", MODERN, None, 20250618, ["2025-06-18"]])
def test_anything_else_is_answered_with_the_latest_handshake_version(requested: Any) -> None:
    assert revisions.initialize_result(requested)["protocolVersion"] == revisions.LATEST_HANDSHAKE == "2025-11-25"


def test_the_initialize_result_names_the_hub_and_its_capabilities() -> None:
    result = revisions.initialize_result("2025-03-26", "read the docs")
    assert result == {
        "protocolVersion": "2025-03-26",
        "capabilities": revisions.SERVER_CAPABILITIES,
        "serverInfo": SERVER_INFO,
        "instructions": "read the docs",
    }
    assert "instructions" not in revisions.initialize_result("2025-03-26")


def test_only_2026_07_28_is_modern() -> None:
    assert revisions.is_modern(MODERN)
    assert not any(revisions.is_modern(v) for v in (*revisions.HANDSHAKE_VERSIONS, None, "2026-07-29"))


# ---- the 2026-07-28 envelope --------------------------------------------------------------------------------


def envelope(**meta: Any) -> dict[str, Any]:
    return {"_meta": {PROTOCOL_VERSION_KEY: MODERN, CLIENT_CAPABILITIES_KEY: {"sampling": {}}, **meta}}


def test_a_complete_envelope_is_read() -> None:
    read = read_envelope(envelope(**{CLIENT_INFO_KEY: {"name": "h"}, LOG_LEVEL_KEY: "warning"}))
    assert read == Envelope(MODERN, {"sampling": {}}, {"name": "h"}, "warning")


def test_an_unknown_log_level_is_no_opt_in() -> None:
    assert read_envelope(envelope(**{LOG_LEVEL_KEY: "verbose"})).log_level is None


def test_has_envelope_means_a_protocol_version_in_meta() -> None:
    assert has_envelope(envelope())
    assert not has_envelope({})
    assert not has_envelope({"_meta": "x"})
    assert not has_envelope({"_meta": {CLIENT_CAPABILITIES_KEY: {}}})


@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        ({}, INVALID_PARAMS, f"params._meta must be an object carrying {PROTOCOL_VERSION_KEY!r}"),
        ({"_meta": [1]}, INVALID_PARAMS, "params._meta must be an object"),
        (
            {"_meta": {}},
            INVALID_PARAMS,
            f"missing the envelope key(s): {PROTOCOL_VERSION_KEY}, {CLIENT_CAPABILITIES_KEY}",
        ),
        (
            {"_meta": {PROTOCOL_VERSION_KEY: MODERN}},
            INVALID_PARAMS,
            f"missing the envelope key(s): {CLIENT_CAPABILITIES_KEY}",
        ),
        (
            envelope(**{PROTOCOL_VERSION_KEY: 2026}),
            INVALID_PARAMS,
            "the protocol-version envelope value must be a string",
        ),
        (
            envelope(**{CLIENT_CAPABILITIES_KEY: []}),
            INVALID_PARAMS,
            "the client-capabilities envelope value must be an object",
        ),
        (
            envelope(**{PROTOCOL_VERSION_KEY: "2025-11-25"}),
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        ),
    ],
    ids=[
        "no-meta",
        "meta-not-object",
        "no-keys",
        "no-capabilities",
        "version-not-string",
        "capabilities-not-object",
        "unsupported",
    ],
)
def test_a_bad_envelope_is_refused_with_its_code(params: dict[str, Any], code: int, message: str) -> None:
    with pytest.raises(EnvelopeError) as caught:
        read_envelope(params)
    assert caught.value.code == code
    assert message in str(caught.value)


def test_an_unsupported_version_says_which_are_supported() -> None:
    with pytest.raises(EnvelopeError) as caught:
        read_envelope(envelope(**{PROTOCOL_VERSION_KEY: "2027-01-01"}))
    assert (caught.value.code, caught.value.data) == (-32022, {"supported": [MODERN], "requested": "2027-01-01"})


def test_the_hubs_envelope_toward_a_child() -> None:
    meta = revisions.envelope_meta("error")
    assert meta == {
        PROTOCOL_VERSION_KEY: MODERN,
        CLIENT_INFO_KEY: revisions.CLIENT_INFO,
        CLIENT_CAPABILITIES_KEY: revisions.CLIENT_CAPABILITIES,
        LOG_LEVEL_KEY: "error",
    }
    assert LOG_LEVEL_KEY not in revisions.envelope_meta(None)


def test_a_child_gets_the_hosts_vendor_meta_without_its_progress_token_or_protocol_keys() -> None:
    host_meta = {
        "progressToken": "host-1",
        "com.example/trace": "t",
        PROTOCOL_VERSION_KEY: MODERN,
        CLIENT_CAPABILITIES_KEY: {},
        LOG_LEVEL_KEY: "info",
        "modelcontextprotocol.io/other": 1,
    }
    assert child_meta(host_meta) == {"com.example/trace": "t", "modelcontextprotocol.io/other": 1}
    assert child_meta(None) == child_meta({}) == {}


# ---- results ------------------------------------------------------------------------------------------------


def test_stamp_adds_the_result_type_and_the_hubs_identity_keeping_vendor_meta() -> None:
    result: dict[str, Any] = {"content": [], "_meta": {SERVER_INFO_KEY: {"name": "child"}, "com.example/x": 1}}
    stamped = stamp(result, "tools/call")
    assert stamped == {
        "content": [],
        "resultType": "complete",
        "_meta": {SERVER_INFO_KEY: SERVER_INFO, "com.example/x": 1},
    }
    assert result["_meta"][SERVER_INFO_KEY] == {"name": "child"}, "the input is not modified"


@pytest.mark.parametrize("method", sorted(revisions.CACHEABLE))
def test_a_complete_result_of_a_cacheable_method_gets_cache_hints(method: str) -> None:
    stamped = stamp({}, method)
    assert (stamped["ttlMs"], stamped["cacheScope"]) == (0, "private")
    assert stamp({"ttlMs": 60_000, "cacheScope": "public"}, method)["ttlMs"] == 60_000, "the child's own are kept"


def test_an_input_required_result_keeps_its_type_and_gets_no_cache_hints() -> None:
    stamped = stamp({"resultType": "input_required", "inputRequests": {}}, "resources/read")
    assert stamped["resultType"] == "input_required"
    assert "ttlMs" not in stamped and "cacheScope" not in stamped


def test_a_meta_that_is_not_an_object_is_replaced_by_the_stamp() -> None:
    assert stamp({"_meta": "x"}, "tools/call")["_meta"] == {SERVER_INFO_KEY: SERVER_INFO}


def test_unstamp_removes_the_era_fields_and_the_childs_identity_only() -> None:
    result = {
        "content": [],
        "resultType": "complete",
        "ttlMs": 5,
        "cacheScope": "public",
        "_meta": {SERVER_INFO_KEY: {"name": "child"}, "com.example/x": 1},
    }
    assert unstamp(result) == {"content": [], "_meta": {"com.example/x": 1}}
    assert unstamp({"content": [], "_meta": {SERVER_INFO_KEY: {}}}) == {"content": []}, "an emptied _meta goes"
    assert unstamp({"content": [], "_meta": {"k": 1}}) == {"content": [], "_meta": {"k": 1}}


def test_a_tools_execution_reaches_a_2026_host_as_it_reaches_a_2025_host() -> None:
    tool = {"name": "t", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}
    for version in (revisions.LATEST_HANDSHAKE, revisions.LATEST_MODERN):
        (shaped,), problems = revisions.sieve_items("tools/list", "tools", version, (tool,))
        assert problems == [] and shaped["execution"] == {"taskSupport": "optional"}, version
    without = {"name": "u", "inputSchema": {"type": "object"}}
    (shaped,), _ = revisions.sieve_items("tools/list", "tools", revisions.LATEST_MODERN, (without,))
    assert "execution" not in shaped
