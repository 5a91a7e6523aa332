"""The benchmark's JSON as a Markdown table: each side's figure, its ratio to direct, and the targets of issue 27.

    python -m bench.report [bench/results/latest.json]

Columns: direct, hub and (with `--baseline`) baseline; hub/direct and baseline/direct; the target, and whether
each hub meets it. Targets are ratios to a direct connection in the same run (issue 27, stricter than issue 15's):
per-call median at most 1.5 times direct, p99 at most 2 times, calls/s at 64 in flight at least 1.0 times with a 0 ms
tool and 0.9 times with a 10 ms tool, a 1 MiB result at most 1.3 times, spawn -> first tools/call at most 1.5 times
the same child spawned directly.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Values = dict[str, float | None]  # by side: direct, hub, baseline


@dataclass(frozen=True)
class Target:
    text: str
    met: Callable[[float], bool]  # given a side's ratio to direct


MEDIAN = Target("≤ 1.5×", lambda x: x <= 1.5)
P99 = Target("≤ 2×", lambda x: x <= 2)
IN_FLIGHT_0MS = Target("≥ 1.0×", lambda x: x >= 1.0)
IN_FLIGHT_10MS = Target("≥ 0.9×", lambda x: x >= 0.9)
PAYLOAD = Target("≤ 1.3×", lambda x: x <= 1.3)
FIRST_CALL = Target("≤ 1.5×", lambda x: x <= 1.5)


@dataclass(frozen=True)
class Row:
    figure: str
    values: Values
    unit: str
    target: Target | None = None
    compared: bool = True  # False: direct measures another process than the hubs do, so no ratio


def _by_side(value: Any) -> dict[str, Any]:
    """A figure's values by side; {} for a section written by an older bench in another shape."""
    return value if isinstance(value, dict) else {}


def _get(values: dict[str, Any], side: str, key: str) -> float | None:
    figure = values.get(side)
    return figure.get(key) if isinstance(figure, dict) else None


def call_rows(r: dict[str, Any], sides: list[str]) -> Iterator[Row]:
    seq = r.get("seq_echo")
    if not seq:
        return
    yield Row("tools/call echo, median", {s: _get(seq, s, "median_ms") for s in sides}, " ms", MEDIAN)
    yield Row("tools/call echo, p99", {s: _get(seq, s, "p99_ms") for s in sides}, " ms", P99)
    if "floor" in seq:
        figure = "tools/call echo, median, through a relay with no MCP logic (bench/relay_floor.py) in the hub column"
        yield Row(figure, {"direct": _get(seq, "direct", "median_ms"), "hub": _get(seq, "floor", "median_ms")}, " ms")
    cpu = seq.get("cpu_ms_per_call") or {}
    served = {s: (cpu.get(s) or 0.0) + (cpu.get(f"{s}.child") or 0.0) if s in cpu else None for s in sides}
    yield Row("CPU per call, server side (direct: the child; a hub: hub + child)", served, " ms")
    yield Row("CPU per call, hub process alone", {s: cpu.get(s) for s in sides if s != "direct"}, " ms")


def throughput_rows(r: dict[str, Any], sides: list[str]) -> Iterator[Row]:
    for name, row in (r.get("throughput") or {}).items():
        tool, _, inflight = name.rpartition("_x")
        target = (IN_FLIGHT_10MS if "sleep" in tool else IN_FLIGHT_0MS) if inflight == "64" else None
        yield Row(
            f"calls/s, {tool.replace('_', ' ')}, {inflight} in flight", {s: row.get(s) for s in sides}, "/s", target
        )


def payload_rows(r: dict[str, Any], sides: list[str]) -> Iterator[Row]:
    pay = r.get("payload_1mib")
    if pay:
        size = "1 MiB" if r.get("payload_bytes", 1 << 20) == 1 << 20 else f"{r['payload_bytes']:,} B"
        yield Row(f"{size} result, median", {s: _get(pay, s, "median_ms") for s in sides}, " ms", PAYLOAD)
        if "floor" in pay:  # a relay that copies bytes as they come: the bound of cutting through (decision 022)
            figure = (
                f"{size} result, median, through a relay with no MCP logic (bench/relay_floor.py) in the hub column"
            )
            yield Row(
                figure, {"direct": _get(pay, "direct", "median_ms"), "hub": _get(pay, "floor", "median_ms")}, " ms"
            )


def list_rows(r: dict[str, Any], sides: list[str]) -> Iterator[Row]:
    for n, row in (r.get("list") or {}).items():
        hub = row.get("hub") or {}
        size = f"hub {hub.get('tools')} tools, {hub.get('bytes', 0):,} B ≈ {hub.get('tokens', 0):,} tok"
        yield Row(f"tools/list, {n} children ({size})", {s: _get(row, s, "median_ms") for s in sides}, " ms")
        yield Row(
            f"CPU per tools/list, {n} children, server side (direct: the child; a hub: the hub alone)",
            {s: _get(row, s, "cpu_ms") for s in sides},
            " ms",
        )
        same = row.get("direct_same_size")
        if same:
            values = {s: _get(row, s, "median_ms") for s in sides} | {"direct": same.get("median_ms")}
            yield Row(f"tools/list, {n} children, against a direct child of {same['tools']} tools", values, " ms")
        raw = row.get("raw_client")
        if raw:
            figure = f"tools/list, {n} children, a host without the SDK (bench/raw_client.py: read whole, json.loads)"
            yield Row(figure, {s: _get(raw, s, "median_ms") for s in sides}, " ms")


def _completeness(start: dict[str, Any]) -> str:
    expected = start.get("expected_tools") or {}
    partial = [s for s, counts in start.get("first_list_tools", {}).items() if counts and min(counts) < expected[s]]
    return f" (partial: {', '.join(partial)})" if partial else " (every listing complete)"


def start_rows(r: dict[str, Any], sides: list[str]) -> Iterator[Row]:
    for n, start in _by_side(r.get("start")).items():
        first_list, first_call = start["first_list_ms"], start["first_call_ms"]
        figure = f"spawn → first tools/list answered, {n} children; direct: 1 child{_completeness(start)}"
        yield Row(figure, {s: first_list.get(s) for s in sides}, " ms")
        figure = f"spawn → first tools/call result, {n} children; direct: the same child spawned directly"
        yield Row(figure, {s: first_call.get(s) for s in sides}, " ms", FIRST_CALL)
    par = r.get("parallel_start") or {}
    if "full_listing_ms" in par:
        figure = (
            f"spawn → live listing with every child's tools, {par['children']} children sleeping up to "
            f"{par['slowest_s']:g} s before serving (sum {par['sum_s']:g} s); direct: the slowest alone, listed"
        )
        yield Row(figure, {s: par["full_listing_ms"].get(s) for s in sides}, " ms")


def footprint_rows(r: dict[str, Any], sides: list[str]) -> Iterator[Row]:
    for n, by_side in (r.get("memory") or {}).items():
        m = _by_side(by_side)
        yield Row(f"peak RSS, hub process alone, {n} children", {s: _get(m, s, "self_peak_mb") for s in sides}, " MB")
        counts = "/".join(str(_get(m, s, "processes")) for s in sides if s in m)
        figure = f"peak RSS, whole tree ({counts} processes), {n} children"
        yield Row(figure, {s: _get(m, s, "tree_peak_mb") for s in sides}, " MB")
    m1 = r.get("memory_1")
    if m1:
        figure = "peak RSS after 1 MiB results, 1 child (direct: the child; a hub: the hub alone)"
        yield Row(figure, {s: _get(m1, s, "self_peak_mb") for s in sides}, " MB", compared=False)
    for n, by_side in (r.get("idle_cpu_pct") or {}).items():
        yield Row(f"hub CPU while idle, {n} children", {s: _by_side(by_side).get(s) for s in sides}, " % of a core")


SECTIONS = (call_rows, throughput_rows, payload_rows, list_rows, start_rows, footprint_rows)


def _f(value: float | None, unit: str) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        text = f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:,.0f}"
    else:
        text = f"{value:,}"
    return text + unit


def ratio(value: float | None, direct: float | None) -> float | None:
    return round(value / direct, 2) if value and direct else None


def _cells(row: Row, key: str, hubs: list[str]) -> list[str]:
    direct = row.values.get("direct")
    ratios = [ratio(row.values.get(h), direct) if row.compared else None for h in hubs]
    cells = [row.figure, key, _f(direct, row.unit), *(_f(row.values.get(h), row.unit) for h in hubs)]
    cells += ["—" if x is None else f"{x:.2f}×" for x in ratios]
    cells.append(row.target.text if row.target else "—")
    for x in ratios:
        cells.append("—" if row.target is None or x is None else "met" if row.target.met(x) else "**not met**")
    return cells


def render_table(report: dict[str, Any]) -> str:
    hubs = [s for s in report.get("sides", ["direct", "hub"]) if s != "direct"]
    header = ["figure", "front/child", "direct", *hubs, *(f"{h}/direct" for h in hubs), "target"]
    header += [f"{h} meets it" for h in hubs]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for key, r in report["results"].items():
        for section in SECTIONS:
            for row in section(r, ["direct", *hubs]):
                if any(row.values.get(h) is not None for h in hubs):
                    lines.append("| " + " | ".join(_cells(row, key, hubs)) + " |")
    m = report.get("machine", {})
    commits = ", ".join(f"{label} {info.get('git_commit')}" for label, info in (m.get("hubs") or {}).items())
    lines.append("")
    lines.append(
        f"{m.get('date')}, nproc {m.get('nproc')}, Python {m.get('python')}, mcp {m.get('mcp')}, "
        f"load {_load(m.get('loadavg_start'))} → {_load(m.get('loadavg_end'))}, "
        f"{m.get('duration_s')} s, {'quick' if report.get('params', {}).get('quick') else 'full'} run"
        + (f"; {commits}" if commits else "")
    )
    return "\n".join(lines)


def _load(v: Any) -> str:
    return "/".join(f"{x:.2f}" for x in v) if v else "?"


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "results" / "latest.json")
    print(render_table(json.loads(path.read_text())))
