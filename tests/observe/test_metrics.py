"""The hub's Prometheus metrics (hub.observe.metrics): counts and histograms as scraped, children and sessions read
at each scrape, label values bounded against hostile names, one registry per instance."""

from __future__ import annotations

import prometheus_client
import pytest
from prometheus_client.parser import text_string_to_metric_families

from hub.observe.metrics import DURATION_BUCKETS, LABEL_LIMIT, TOOL_LIMIT, ChildStats, Metrics

Labels = frozenset[tuple[str, str]]


def scrape(metrics: Metrics) -> dict[tuple[str, Labels], float]:
    """Every sample in render()'s output: (sample name, its labels) -> value."""
    body, _ = metrics.render()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(body.decode("utf-8"))
        for sample in family.samples
    }


def value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return scrape(metrics).get((name, frozenset(labels.items())))


def series(metrics: Metrics, name: str) -> list[dict[str, str]]:
    return [dict(labels) for sample, labels in scrape(metrics) if sample == name]


def bare() -> Metrics:
    return Metrics(children=list, sessions=lambda: 0)


# ---- counted as they happen ------------------------------------------------------------------------------


def test_requests_are_counted_by_child_method_and_outcome() -> None:
    metrics = bare()
    metrics.request("time", "tools/call", "ok", 0.03)
    metrics.request("time", "tools/call", "ok", 0.5)
    metrics.request("time", "tools/call", "error", 0.01)
    metrics.request("git", "resources/read", "ok", 0.2)
    assert value(metrics, "hub_requests_total", child="time", method="tools/call", outcome="ok") == 2
    assert value(metrics, "hub_requests_total", child="time", method="tools/call", outcome="error") == 1
    assert value(metrics, "hub_requests_total", child="git", method="resources/read", outcome="ok") == 1
    assert value(metrics, "hub_request_duration_seconds_count", child="time", method="tools/call") == 3
    assert value(metrics, "hub_request_duration_seconds_sum", child="time", method="tools/call") == pytest.approx(0.54)


def test_a_request_the_hub_answers_itself_is_labelled_hub() -> None:
    metrics = bare()
    metrics.request(None, "tools/list", "ok", 0.001)
    assert value(metrics, "hub_requests_total", child="hub", method="tools/list", outcome="ok") == 1


def test_tool_calls_rejections_reloads_and_auth_failures_are_counted() -> None:
    metrics = bare()
    metrics.tool_call("time__get_current_time", "ok")
    metrics.tool_call("time__get_current_time", "ok")
    metrics.tool_call("git__git_status", "tool_error")
    for reason in ("busy", "busy", "denied", "too_large"):
        metrics.rejection(reason)
    metrics.reload("applied")
    metrics.reload("rejected")
    metrics.reload("applied")
    metrics.auth_failure("token_expired")
    metrics.auth_failure("jwks_fetch")
    assert value(metrics, "hub_tool_calls_total", tool="time__get_current_time", outcome="ok") == 2
    assert value(metrics, "hub_tool_calls_total", tool="git__git_status", outcome="tool_error") == 1
    assert value(metrics, "hub_rejections_total", reason="busy") == 2
    assert value(metrics, "hub_rejections_total", reason="denied") == 1
    assert value(metrics, "hub_rejections_total", reason="too_large") == 1
    assert value(metrics, "hub_reloads_total", outcome="applied") == 2
    assert value(metrics, "hub_reloads_total", outcome="rejected") == 1
    assert value(metrics, "hub_auth_failures_total", kind="token_expired") == 1
    assert value(metrics, "hub_auth_failures_total", kind="jwks_fetch") == 1


def test_the_duration_histogram_has_the_mcp_semantic_conventions_buckets() -> None:
    metrics = bare()
    metrics.request("time", "ping", "ok", 0.03)
    buckets = {
        dict(labels)["le"]: count
        for (name, labels), count in scrape(metrics).items()
        if name == "hub_request_duration_seconds_bucket"
    }
    assert list(buckets) == [*(str(float(bound)) for bound in DURATION_BUCKETS), "+Inf"]
    assert DURATION_BUCKETS == (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
    assert buckets["0.02"] == 0, "cumulative: 0.03 s is above 0.02"
    assert buckets["0.05"] == 1
    assert buckets["+Inf"] == 1


def test_render_gives_the_text_format_and_its_content_type() -> None:
    body, content_type = bare().render()
    assert content_type == prometheus_client.CONTENT_TYPE_LATEST
    assert content_type.startswith("text/plain")
    assert b"# TYPE hub_requests_total counter" in body


# ---- read at each scrape ---------------------------------------------------------------------------------


def test_children_and_sessions_are_read_from_the_callables_at_each_render() -> None:
    children = [ChildStats("time", up=True, restarts=0, in_flight=2, queued=0)]
    sessions = [1]
    metrics = Metrics(children=lambda: children, sessions=lambda: sessions[0])
    assert value(metrics, "hub_child_up", child="time") == 1
    assert value(metrics, "hub_child_restarts_total", child="time") == 0
    assert value(metrics, "hub_child_in_flight", child="time") == 2
    assert value(metrics, "hub_child_queued", child="time") == 0
    assert value(metrics, "hub_sessions") == 1

    children[:] = [
        ChildStats("time", up=False, restarts=3, in_flight=0, queued=5),
        ChildStats("git", up=True, restarts=1, in_flight=1, queued=0, quarantined=2),
    ]
    sessions[0] = 4
    assert value(metrics, "hub_child_up", child="time") == 0
    assert value(metrics, "hub_child_restarts_total", child="time") == 3
    assert value(metrics, "hub_child_in_flight", child="time") == 0
    assert value(metrics, "hub_child_queued", child="time") == 5
    assert value(metrics, "hub_child_up", child="git") == 1
    assert value(metrics, "hub_child_restarts_total", child="git") == 1
    assert value(metrics, "hub_child_quarantined", child="git") == 2
    assert value(metrics, "hub_child_quarantined", child="time") == 0
    assert value(metrics, "hub_sessions") == 4

    children.clear()
    assert series(metrics, "hub_child_up") == [], "a child gone from the callable is gone from the scrape"


# ---- bounded labels --------------------------------------------------------------------------------------


def test_an_unknown_method_is_labelled_other() -> None:
    metrics = bare()
    metrics.request("time", "tools/frobnicate", "ok", 0.01)
    metrics.request("time", "x" * 10_000, "ok", 0.01)
    metrics.request("time", "tools/call", "ok", 0.01)
    assert value(metrics, "hub_requests_total", child="time", method="other", outcome="ok") == 2
    assert {labels["method"] for labels in series(metrics, "hub_requests_total")} == {"other", "tools/call"}
    assert {labels["method"] for labels in series(metrics, "hub_request_duration_seconds_count")} == {
        "other",
        "tools/call",
    }


def test_a_long_tool_name_is_cut() -> None:
    metrics = bare()
    metrics.tool_call("t" * 100_000, "ok")
    metrics.tool_call("t" * 50_000, "ok")
    (labels,) = series(metrics, "hub_tool_calls_total")
    assert labels["tool"] == "t" * LABEL_LIMIT
    assert value(metrics, "hub_tool_calls_total", tool="t" * LABEL_LIMIT, outcome="ok") == 2


def test_distinct_tool_names_are_capped_and_the_rest_counted_as_other() -> None:
    metrics = bare()
    for index in range(1_100):
        metrics.tool_call(f"tool_{index}", "ok")
    metrics.tool_call("tool_0", "ok")  # a name seen before the cap keeps its own series
    tools = [labels["tool"] for labels in series(metrics, "hub_tool_calls_total")]
    assert len(tools) <= TOOL_LIMIT + 1 == 1_001
    assert "tool_1099" not in tools
    assert value(metrics, "hub_tool_calls_total", tool="other", outcome="ok") == 1_100 - TOOL_LIMIT
    assert value(metrics, "hub_tool_calls_total", tool="tool_0", outcome="ok") == 2


def test_no_label_names_an_identity() -> None:
    metrics = Metrics(children=lambda: [ChildStats("time", True, 0, 0, 0)], sessions=lambda: 1)
    metrics.request("time", "tools/call", "ok", 0.1)
    metrics.request(None, "initialize", "ok", 0.1)
    metrics.tool_call("time__now", "ok")
    metrics.rejection("unauthenticated")
    metrics.reload("applied")
    metrics.auth_failure("token_unknown")
    names = {name for _, labels in scrape(metrics) for name, _ in labels}
    assert names == {"child", "method", "outcome", "le", "tool", "reason", "kind"}


# ---- one registry per instance ---------------------------------------------------------------------------


def test_two_instances_share_no_registry_and_leave_the_global_one_alone() -> None:
    first, second = bare(), bare()
    assert first.registry is not second.registry
    assert first.registry is not prometheus_client.REGISTRY
    first.rejection("busy")
    first.rejection("busy")
    second.rejection("busy")
    assert value(first, "hub_rejections_total", reason="busy") == 2
    assert value(second, "hub_rejections_total", reason="busy") == 1
    assert b"hub_" not in prometheus_client.generate_latest(prometheus_client.REGISTRY)
