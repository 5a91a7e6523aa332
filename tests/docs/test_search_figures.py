"""The search figures docs/performance.md prints are those of bench/results/search.json, and that file is what
`python -m bench.search_eval` gives today: a change to the ranking, the catalog or the queries that moves a figure
fails here until the results and the page are brought up to date."""

from __future__ import annotations

import json

from bench.search_eval import run, summary
from tests.docs.test_performance import section
from tests.support.paths import REPO

RESULTS = REPO / "bench" / "results" / "search.json"


def test_the_stored_results_are_what_the_eval_gives_now() -> None:
    assert run() == json.loads(RESULTS.read_text())


def test_the_performance_page_quotes_the_stored_results() -> None:
    results = json.loads(RESULTS.read_text())
    text = "\n".join(section(REPO / "docs" / "performance.md", "## Finding tools"))
    assert f"```text\n{summary(results)}\n```" in text
    assert f"over {results['tools']} real tool definitions" in " ".join(text.split())


def test_the_bench_is_as_large_as_promised_and_meets_its_target_on_what_it_was_tuned_on() -> None:
    results = json.loads(RESULTS.read_text())
    catalog = sum(len(json.loads(p.read_text())["tools"]) for p in (REPO / "bench/search/catalog").glob("*.json"))
    assert catalog - 16 >= 150, "the catalog proper (beside the default and ops servers' 16 tools)"
    assert results["tune"]["queries"] + results["held_out"]["queries"] >= 60
    assert results["held_out"]["queries"] >= 20
    assert results["tune"]["recall_at_3"] >= 0.9
