"""The status page's HTML (hub.host.status_page): every value escaped wherever it appears, the live part free of
style and script, arguments shown only for calls that carried them."""

from __future__ import annotations

import json
from typing import Any

from hub.host.status_page import render_live, render_login, render_refused, render_status

HOSTILE = '<script>alert("x")</script>&'
ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;"


def snapshot(**changes: Any) -> dict[str, Any]:
    server = {
        "name": HOSTILE,
        "prefix": "p",
        "state": "restarting",
        "restarts": 2,
        "last_error": None,
        "last_failure": {"error": HOSTILE, "at": "2026-12-01T10:00:00.000Z"},
        "tools": 3,
        "hidden_tools": 1,
        "tokens": 120,
        "uptime_s": None,
    }
    activity = {
        "child": HOSTILE,
        "calls": 4,
        "errors": 1,
        "error_rate": 0.25,
        "per_minute": 4.0,
        "p50_ms": 3.0,
        "p95_ms": 1500.0,
        "minutes": [0] * 58 + [1, 3],
    }
    call = {
        "at": "2026-12-01T10:00:01.000Z",
        "identity": HOSTILE,
        "child": HOSTILE,
        "method": "tools/call",
        "name": HOSTILE,
        "outcome": HOSTILE,
        "duration_ms": 2.5,
        "error": HOSTILE,
    }
    data = {
        "at": "2026-12-01T10:00:02.000Z",
        "version": HOSTILE,
        "uptime_s": 3700,
        "ready": False,
        "draining": False,
        "token_method": HOSTILE,
        "servers": [server],
        "activity": [activity],
        "calls": [call, {**call, "arguments": json.dumps({"k": HOSTILE})}],
    }
    return {**data, **changes}


def test_every_value_is_escaped() -> None:
    page = render_status(snapshot(), "n0nce", signed_in=True)
    assert "<script>alert" not in page and 'alert("x")' not in page
    assert page.count(ESCAPED) >= 10
    assert page.count("<script") == 1 and '<script nonce="n0nce">' in page, "the page's own script, nothing else"
    assert '<style nonce="n0nce">' in page
    assert "&quot;k&quot;: &quot;&lt;script&gt;alert(\\&quot;x\\&quot;)" in page, "arguments as JSON, escaped"


def test_the_page_shows_state_restarts_last_failure_quantiles_and_the_minutes() -> None:
    page = render_status(snapshot(), "n", signed_in=False)
    assert 'data-state="restarting"' in page and '<td class="num restarts">2</td>' in page
    assert "(10:00:00 UTC)" in page, "when the last run ended"
    assert "(+1 hidden)" in page and ">120<" in page
    assert "3.0 ms" in page and "1.50 s" in page and "1 (25%)" in page
    assert "▃█</span>" in page
    assert "not ready" in page and "up 1h 01m" in page
    assert "Sign out" not in page


def test_arguments_get_a_column_only_when_some_call_has_them() -> None:
    data = snapshot()
    assert ">arguments</th>" in render_live(data, signed_in=False)
    data["calls"] = data["calls"][:1]
    assert ">arguments</th>" not in render_live(data, signed_in=False)


def test_the_live_part_is_the_status_element_alone() -> None:
    live = render_live(snapshot(), signed_in=True)
    assert live.startswith('<main id="status">') and live.endswith("</main>")
    assert "<script" not in live and "<style" not in live and "Sign out" in live


def test_the_sign_in_and_refusal_pages_escape_their_message_and_have_no_script() -> None:
    for page in (render_login("n", 12, HOSTILE), render_refused("n", HOSTILE)):
        assert ESCAPED in page and "<script" not in page
    assert 'type="password"' in render_login("n", 12) and "12 hours" in render_login("n", 12)
