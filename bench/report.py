"""The benchmark's JSON as a Markdown table, with the targets of issue 5 next to each figure.

python -m bench.report [bench/results/latest.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

Row = tuple[str, str, str, str, str, str, str]


def _f(value: Any, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        text = f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 1000 else f"{value:,.0f}"
    else:
        text = str(value)
    return text + unit


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def _met(ok: bool | None) -> str:
    return "—" if ok is None else ("met" if ok else "**not met**")


def rows_for(key: str, r: dict[str, Any]) -> list[Row]:
    out: list[Row] = []
    seq = r.get("seq_echo")
    http = key.startswith("http")
    note = " (stdio target)" if http else ""
    if seq:
        d, h = seq["direct"], seq["hub"]
        out.append(
            (
                "tools/call echo, median",
                key,
                _f(d["median_ms"], " ms"),
                _f(h["median_ms"], " ms"),
                _x(seq["ratio_median"]),
                "≤ 1.5×" + note,
                _met(seq["ratio_median"] <= 1.5),
            )
        )
        out.append(
            (
                "tools/call echo, p99",
                key,
                _f(d["p99_ms"], " ms"),
                _f(h["p99_ms"], " ms"),
                _x(seq["ratio_p99"]),
                "≤ 2×" + note,
                _met(seq["ratio_p99"] <= 2),
            )
        )
        if "floor" in seq:
            f = seq["floor"]
            out.append(
                (
                    "tools/call echo, median, through a relay with no MCP logic (bench/relay_floor.py)",
                    key,
                    _f(d["median_ms"], " ms"),
                    _f(f["median_ms"], " ms"),
                    _x(seq["ratio_floor_median"]),
                    "(the floor of any hop)",
                    "—",
                )
            )
        cpu = seq["cpu_ms_per_call"]
        served = (cpu.get("hub") or 0) + (cpu.get("hub.child") or 0)
        out.append(
            (
                "CPU per call, server side (direct: child; hub: hub + child)",
                key,
                _f(cpu.get("direct"), " ms"),
                _f(served, " ms"),
                _x(_ratio(served, cpu.get("direct"))),
                "—",
                "—",
            )
        )
        out.append(
            (
                "CPU per call, hub process alone",
                key,
                "—",
                _f(cpu.get("hub"), " ms"),
                "—",
                "(other Python hubs: 6–9 ms)",
                "—",
            )
        )
    for name, row in (r.get("throughput") or {}).items():
        tool, _, inflight = name.rpartition("_x")
        target = inflight == "64"
        out.append(
            (
                f"calls/s, {tool.replace('_', ' ')}, {inflight} in flight",
                key,
                _f(row["direct"], "/s"),
                _f(row["hub"], "/s"),
                _x(row["ratio"]),
                "≥ 0.8×" if target else "—",
                _met(row["ratio"] >= 0.8) if target and row["ratio"] else "—",
            )
        )
    pay = r.get("payload_1mib")
    if pay:
        size = "1 MiB" if r.get("payload_bytes", 1 << 20) == 1 << 20 else f"{r['payload_bytes']:,} B"
        out.append(
            (
                f"{size} result, median",
                key,
                _f(pay["direct"]["median_ms"], " ms"),
                _f(pay["hub"]["median_ms"], " ms"),
                _x(pay["ratio_median"]),
                "≤ 2×",
                _met(pay["ratio_median"] <= 2),
            )
        )
    lists = r.get("list") or {}
    for n, row in lists.items():
        d, h, same = row["direct"], row["hub"], row.get("direct_same_size")
        out.append(
            (
                f"tools/list, {n} children (hub {h['tools']} tools, {h['bytes']:,} B ≈ {h['tokens']:,} tok)",
                key,
                _f(d["median_ms"], " ms"),
                _f(h["median_ms"], " ms"),
                _x(row["ratio"]),
                "≤ 1.5×",
                _met(row["ratio"] <= 1.5),
            )
        )
        if "cpu_ms" in h:
            out.append(
                (
                    f"CPU per tools/list, {n} children, server side (direct: child; hub: hub alone)",
                    key,
                    _f(d["cpu_ms"], " ms"),
                    _f(h["cpu_ms"], " ms"),
                    _x(_ratio(h["cpu_ms"], d["cpu_ms"])),
                    "—",
                    "—",
                )
            )
        if same:
            out.append(
                (
                    f"tools/list, {n} children vs a direct child of {same['tools']} tools",
                    key,
                    _f(same["median_ms"], " ms"),
                    _f(h["median_ms"], " ms"),
                    _x(row["ratio_same_size"]),
                    "—",
                    "—",
                )
            )
    for n, row in lists.items():
        raw = row.get("raw_client")
        if raw:
            out.append(
                (
                    f"tools/list, {n} children, a host without the SDK (bench/raw_client.py: read whole, json.loads)",
                    key,
                    _f(raw["direct"]["median_ms"], " ms"),
                    _f(raw["hub"]["median_ms"], " ms"),
                    _x(raw["ratio"]),
                    "≤ 1.5×",
                    _met(raw["ratio"] <= 1.5) if raw["ratio"] else "—",
                )
            )
    raws = {n: row["raw_client"] for n, row in lists.items() if row.get("raw_client")}
    if len(raws) > 1:
        first, last = min(raws, key=int), max(raws, key=int)
        label = f"tools/list growth, hub {last} vs {first} children, a host without the SDK"
        out.append(_growth(label, key, raws[first]["hub"]["median_ms"], raws[last]["hub"]["median_ms"], True))
    if len(lists) > 1:
        first, last = min(lists, key=int), max(lists, key=int)
        if "cpu_ms" in lists[first]["hub"]:
            label = f"hub CPU per tools/list growth, {last} vs {first} children (answered from the cache)"
            out.append(_growth(label, key, lists[first]["hub"]["cpu_ms"], lists[last]["hub"]["cpu_ms"], False))
        label = f"tools/list growth, hub {last} vs {first} children"
        out.append(_growth(label, key, lists[first]["hub"]["median_ms"], lists[last]["hub"]["median_ms"], True))
    for n, c in (r.get("cold") or {}).items():
        first_ok = c["hub_first_ms"] <= 1000 if n == "5" else None
        counts = c.get("first_tools")
        state = "" if counts is None else " (complete)" if min(counts) >= c["expected_tools"] else " (partial)"
        out.append(
            (
                f"cold start, first ever (no cache) → first tools/list, {n} children{state}",
                key,
                _f(c["direct_first_ms"], " ms"),
                _f(c["hub_first_ms"], " ms"),
                _x(c["ratio_first"]),
                "≤ 1 s (5 children)" if n == "5" else "—",
                _met(first_ok),
            )
        )
        if "hub_warm_first_ms" in c:
            complete = all(count >= c["expected_tools"] for count in c["warm_first_tools"])
            out.append(
                (
                    f"cold start, warm (last run's cache) → first tools/list, {n} children"
                    + (" (complete)" if complete else " (partial)"),
                    key,
                    _f(c["direct_first_ms"], " ms"),
                    _f(c["hub_warm_first_ms"], " ms"),
                    _x(c["ratio_warm_first"]),
                    "≤ 1 s (5 children)" if n == "5" else "—",
                    _met(c["hub_warm_first_ms"] <= 1000 and complete) if n == "5" else "—",
                )
            )
        if "hub_warm_call_ms" in c:
            out.append(
                (
                    f"cold start, warm → first tools/call answered (it waits for its server), {n} children",
                    key,
                    _f(c["direct_first_ms"], " ms"),
                    _f(c["hub_warm_call_ms"], " ms"),
                    _x(c["ratio_warm_call"]),
                    "—",
                    "—",
                )
            )
        out.append(
            (
                f"cold start → full listing, {n} children",
                key,
                _f(c["direct_first_ms"], " ms"),
                _f(c["hub_full_ms"], " ms"),
                _x(c["ratio_full"]),
                "≈ slowest child, not the sum" if n != "1" else "—",
                _met(c["ratio_full"] <= 2.0) if n != "1" and c["ratio_full"] else "—",
            )
        )
    par = r.get("parallel_start")
    if par:
        spread = (
            f"{par['children']} children sleeping up to {par['slowest_s']:g} s before serving (sum {par['sum_s']:g} s);"
            " direct: the slowest alone"
        )
        for label, hub_ms, x in (
            (f"start → full live listing, first start, {spread}", par["hub_first_full_ms"], par["ratio_first"]),
            (f"start → every child answered a call, warm start, {spread}", par["hub_warm_all_ms"], par["ratio_warm"]),
        ):
            out.append(
                (
                    label,
                    key,
                    _f(par["direct_slowest_ms"], " ms"),
                    _f(hub_ms, " ms"),
                    _x(x),
                    "≈ slowest child, not the sum",
                    _met(x <= 2.0) if x else "—",
                )
            )
    mem = r.get("memory") or {}
    for n, m in mem.items():
        target = n == "20"
        out.append(
            (
                f"peak RSS, hub process alone, {n} children",
                key,
                "—",
                _f(m["self_peak_mb"], " MB"),
                "—",
                "≤ 80 MB (20 children)" if target else "—",
                _met(m["self_peak_mb"] <= 80) if target else "—",
            )
        )
        out.append(
            (
                f"peak RSS, whole tree ({m['processes']} processes), {n} children",
                key,
                "—",
                _f(m["tree_peak_mb"], " MB"),
                "—",
                "—",
                "—",
            )
        )
    m1 = r.get("memory_1")
    if m1:
        out.append(
            (
                "peak RSS after 1 MiB results, 1 child (direct = the child)",
                key,
                _f(m1["direct"]["self_peak_mb"], " MB"),
                _f(m1["hub"]["self_peak_mb"], " MB"),
                "—",
                "—",
                "—",
            )
        )
    for n, v in (r.get("idle_cpu_pct") or {}).items():
        out.append((f"hub CPU while idle, {n} children", key, "—", _f(v, " % of a core"), "—", "—", "—"))
    return out


def _growth(label: str, key: str, first_ms: float, last_ms: float, constant: bool) -> Row:
    """A row comparing the hub at the most children with the fewest; `constant`: the target says it should be."""
    growth = _ratio(last_ms, first_ms)
    target, verdict = ("constant (cache)", _met(growth <= 1.5) if growth else "—") if constant else ("—", "—")
    return (label, key, _f(first_ms, " ms"), _f(last_ms, " ms"), _x(growth), target, verdict)


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def render_table(report: dict[str, Any]) -> str:
    header: Row = ("figure", "front/child", "direct", "hub", "hub/direct", "target", "")
    rows = [header, ("---",) * 7]  # type: ignore[list-item]
    for key, r in report["results"].items():
        rows.extend(rows_for(key, r))
    lines = ["| " + " | ".join(row) + " |" for row in rows]
    m = report.get("machine", {})
    lines.append("")
    lines.append(
        f"{m.get('date')}, nproc {m.get('nproc')}, Python {m.get('python')}, mcp {m.get('mcp')}, "
        f"load {_load(m.get('loadavg_start'))} → {_load(m.get('loadavg_end'))}, "
        f"{m.get('duration_s')} s, {'quick' if report.get('params', {}).get('quick') else 'full'} run"
    )
    return "\n".join(lines)


def _load(v: Any) -> str:
    return "/".join(f"{x:.2f}" for x in v) if v else "?"


if __name__ == "__main__":
    path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "results" / "latest.json")
    print(render_table(json.loads(path.read_text())))
