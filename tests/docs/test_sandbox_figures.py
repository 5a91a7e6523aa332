"""docs/sandbox.md, "What the sandbox costs", quotes bench/results/sandbox.json (what `python -m bench.sandbox
--rounds 20 --out bench/results/sandbox.json` wrote): its date, commit, machine, rounds, medians and ratio."""

from __future__ import annotations

import json

from tests.docs.test_performance import section
from tests.support.paths import REPO

RESULTS = REPO / "bench" / "results" / "sandbox.json"


def test_the_sandbox_page_quotes_the_latest_sandbox_bench() -> None:
    report = json.loads(RESULTS.read_text())
    text = " ".join(" ".join(section(REPO / "docs" / "sandbox.md", "## What the sandbox costs")).split())
    machine = report["machine"]
    assert f"python -m bench.sandbox --rounds {report['rounds']} --out bench/results/sandbox.json" in text
    assert f"Latest run: {machine['date']}, hub `{machine['hub']['git_commit']}`, {machine['nproc']} cores" in text
    assert f"load {machine['loadavg_start'][0]:.2f} at the start, {machine['loadavg_end'][0]:.2f} at the end" in text
    assert f"Python {machine['python']}, {report['rounds']} rounds a side" in text
    medians = report["first_call_ms"]
    assert f"a median of {medians['none']} ms without a sandbox and {medians['strict']} ms with" in text
    assert f"**strict / none {report['ratio_strict_to_none']:.2f}**" in text
    rounds = [value / 1000 for values in report["all_ms"].values() for value in values]
    assert f"one round took from {min(rounds):.1f} s to {max(rounds):.1f} s on either side" in text
