"""How well `hub_search_tools` finds the right tool: recall@1 and recall@3 of bench/search/queries.yaml.

The index is the one the hub builds (hub.relay.search.ToolIndex) over about 200 real tool definitions: the default
servers of servers.yaml (with its deny list), the ops bundle's PostgreSQL server (examples/ops/servers.yaml, with its
rename and appended description) and bench/search/catalog/*.json (each file names the published package its tools
came from). Every tool is exposed under the server's name as prefix, by the hub's own rule
(hub.relay.naming.expose_tool_name: `SERVER_TOOL`, or `TOOL` when it starts with `SERVER_` already).

A query is found at k when one of the tools it wants is among the first k results. Pure logic, deterministic, no
network: `python -m bench.search_eval` runs in about a second, prints the figures and writes
bench/results/search.json (`--out` elsewhere, `--misses` to print what each missed query found instead).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from hub.config.settings import DEFAULT_NAME_BUDGET
from hub.relay.naming import expose_tool_name
from hub.relay.search import ToolIndex

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "bench" / "search"
RESULTS = ROOT / "bench" / "results" / "search.json"
DEPTHS = (1, 3)


def _configured(server: str, group: str) -> dict[str, Any]:
    """The server's entry in the config its group stands for (servers.yaml, examples/ops/servers.yaml), else {}."""
    config = {"default": ROOT / "servers.yaml", "ops": ROOT / "examples" / "ops" / "servers.yaml"}.get(group)
    if config is None:
        return {}
    entry = yaml.safe_load(config.read_text())["servers"].get(server)
    return entry if isinstance(entry, dict) else {}


def _suffix(tool: dict[str, Any], entry: dict[str, Any]) -> str:
    """The tool's name before the prefix: an override's `name`, else its own."""
    return str(entry.get("overrides", {}).get(tool["name"], {}).get("name", tool["name"]))


def _shaped(tool: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any] | None:
    """The tool as the config shows it: None when denied; renamed, its description extended, by an override."""
    deny = entry.get("tools", {}).get("deny", [])
    if any(fnmatch.fnmatchcase(tool["name"], pattern) for pattern in deny):
        return None
    override = entry.get("overrides", {}).get(tool["name"], {})
    shaped = {**tool, "name": _suffix(tool, entry)}
    append = override.get("description", {})
    if isinstance(append, dict) and "append" in append:
        shaped["description"] = f"{shaped.get('description', '')} {append['append']}".strip()
    return shaped


def catalog() -> list[dict[str, Any]]:
    """Every tool of the bench, as the hub exposes it by default, in file order."""
    tools = []
    for path in sorted((HERE / "catalog").glob("*.json")):
        data = json.loads(path.read_text())
        entry = _configured(data["server"], data["group"])
        siblings = {_suffix(tool, entry) for tool in data["tools"]}  # as hub.relay.exposure.tool_suffixes
        for tool in data["tools"]:
            shaped = _shaped(tool, entry)
            if shaped is not None:
                name = expose_tool_name(data["server"], shaped["name"], DEFAULT_NAME_BUDGET, siblings)
                tools.append({**shaped, "name": name})
    return tools


def evaluate(index: ToolIndex, queries: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall at each depth, and the queries missed at 1 with what came first instead."""
    found = {k: 0 for k in DEPTHS}
    misses = []
    for query in queries:
        names = [t["name"] for t in index.search(query["q"], max(DEPTHS), lambda _: True)]
        for k in DEPTHS:
            found[k] += any(name in query["want"] for name in names[:k])
        if not names or names[0] not in query["want"]:
            misses.append({"q": query["q"], "want": query["want"], "got": names})
    n = len(queries)
    return {"queries": n, **{f"recall_at_{k}": round(found[k] / n, 3) for k in DEPTHS}, "misses_at_1": misses}


def run() -> dict[str, Any]:
    tools = catalog()
    names = {t["name"] for t in tools}
    sets = yaml.safe_load((HERE / "queries.yaml").read_text())
    for query in sets["tune"] + sets["held_out"]:
        unknown = [w for w in query["want"] if w not in names]
        if unknown:
            raise SystemExit(f"bench/search/queries.yaml: {query['q']!r} wants unknown tools {unknown}")
    index = ToolIndex(tools)
    servers = {t["name"].split("_", 1)[0] for t in tools}
    return {
        "tools": len(tools),
        "servers": len(servers),
        "tune": evaluate(index, sets["tune"]),
        "held_out": evaluate(index, sets["held_out"]),
    }


def summary(results: dict[str, Any]) -> str:
    """One line per part, as docs/performance.md quotes them."""
    lines = [f"{results['tools']} tools from {results['servers']} servers"]
    for part in ("tune", "held_out"):
        r = results[part]
        lines.append(
            f"{part}: {r['queries']} queries, recall@1 {r['recall_at_1']:.2f}, recall@3 {r['recall_at_3']:.2f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search_eval", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--misses",
        action="store_true",
        help="print each tuning query missed at 1 and what came first (never held-out ones)",
    )
    args = parser.parse_args(argv)
    results = run()
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(summary(results))
    if args.misses:
        for miss in results["tune"]["misses_at_1"]:
            print(f"{miss['q']!r} wants {miss['want']}, got {miss['got']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
