"""The figures the docs print are those of the benchmark's latest results, as `python -m bench.report` renders them.

- bench/README.md, "Latest figures": the table is exactly `python -m bench.report bench/results/latest.json`.
- docs/performance.md, "What the hub costs": each cell is the hub's ratio to direct (and the baseline's, in
  parentheses) of the report's row of that figure and front, and the run named above the table is the results' run.
- docs/deploy.md, "When one process is enough": the figures of bench/results/capacity.json (`python -m
  bench.capacity`), rounded as the page rounds them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from bench.report import render_table
from tests.support.paths import REPO

RESULTS = REPO / "bench" / "results" / "latest.json"
FRONTS = {"stdio, SDK child": "stdio/sdk", "stdio, raw child": "stdio/raw", "HTTP, SDK child": "http/sdk"}


def report_rows() -> dict[tuple[str, str], list[str]]:
    """(figure, front/child) -> the report's cells."""
    rows = {}
    for line in render_table(json.loads(RESULTS.read_text())).splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 2:
            rows[(cells[0], cells[1])] = cells
    return rows


def section(page: Path, title: str) -> list[str]:
    lines = page.read_text().splitlines()
    start = lines.index(title)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1 : end]


def test_the_bench_readme_table_is_the_latest_report() -> None:
    text = "\n".join(section(REPO / "bench" / "README.md", "## Latest figures"))
    assert render_table(json.loads(RESULTS.read_text())) in text


def test_the_performance_page_quotes_the_latest_report() -> None:
    rows = report_rows()
    lines = section(REPO / "docs" / "performance.md", "## What the hub costs")
    machine = json.loads(RESULTS.read_text())["machine"]
    intro = " ".join(line for line in lines if not line.startswith("|"))
    assert machine["date"] in intro
    assert f"hub `{machine['hubs']['hub']['git_commit']}`" in intro
    table = [
        [c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("| ") and "---" not in line
    ]
    header, body = table[0], table[1:]
    assert len(body) >= 7
    for cells in body:
        figure = re.sub(r" \([^)]*\)$", "", cells[0])
        for column, cell in zip(header[1:], cells[1:], strict=True):
            report = rows.get((figure, FRONTS[column]))
            if report is None:  # a start-up figure's report name goes on after the count ("; direct: ...")
                report = next(v for (f, k), v in rows.items() if k == FRONTS[column] and f.startswith(figure + ";"))
            hub_ratio, baseline_ratio = report[5], report[6]
            assert cell == f"{hub_ratio} ({baseline_ratio})", (figure, column)


def test_the_capacity_figures_of_the_deploy_page_are_the_latest_run() -> None:
    results = json.loads((REPO / "bench" / "results" / "capacity.json").read_text())["results"]
    text = " ".join(" ".join(section(REPO / "docs" / "deploy.md", "## When one process is enough")).split())
    best, worst = results["best_within_p99_limit"], results["levels"][-1]
    memory = results["rss_mb_with_sessions"] - results["rss_mb_before_sessions"]
    assert f"{results['sessions']:,} handshake-era sessions" in text
    assert f"about {max(1, round(memory))} MB of memory between them" in text
    calls = f"{round(best['calls_per_s'], -2):,.0f}"
    assert (
        f"about {calls} calls/s with {best['inflight']} calls in flight, with a call's p99 at "
        f"{round(best['p99_ms'])} ms (median {round(best['median_ms'])} ms)"
    ) in text
    (half,) = [row for row in results["levels"] if row["inflight"] == best["inflight"] // 2]
    assert f"Up to {half['inflight']} in flight, p99 stays near {round(half['p99_ms'])} ms or below" in text
    assert f"at {worst['inflight']} in flight calls/s no longer rises" in text
    assert f"(p99 {round(worst['p99_ms'])} ms)" in text
