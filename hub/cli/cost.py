"""`hub cost`: what the tool listing costs the model's context, per tool, per server and in all.

The count is `hub.observe.tokens`'s: tiktoken's `cl100k_base` if installed and cached, else bytes / 4 of the
tool's JSON; good for comparing servers and exposure modes.

"Listed" is what a host's tools/list shows; with `exposure: search` a server's tools are found through
hub_search_tools instead, and cost nothing until found.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from hub.observe.tokens import counter

if TYPE_CHECKING:
    from hub.app import Hub
    from hub.host.inprocess import InProcessHost


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


async def run_cost(hub: Hub, host: InProcessHost, as_json: bool, out: TextIO) -> int:
    from hub.cli.output import print_table

    count, method = counter()
    listed = {t["name"] for t in (await host.request("tools/list", {}))["tools"]}
    namespace = hub.catalog.namespace
    owner = {name: route.child for name, route in namespace.tool_routes.items()}
    rows = [
        {
            "tool": t["name"],
            "server": owner.get(t["name"], "hub"),
            "listed": t["name"] in listed,
            "tokens": count(_compact(t)),
        }
        for t in (*hub.builtin_tools(), *namespace.tools)
    ]
    servers: dict[str, dict[str, int]] = {}
    for row in rows:
        entry = servers.setdefault(row["server"], {"tools": 0, "listed_tools": 0, "tokens": 0, "listed_tokens": 0})
        entry["tools"] += 1
        entry["tokens"] += row["tokens"]
        if row["listed"]:
            entry["listed_tools"] += 1
            entry["listed_tokens"] += row["tokens"]
    total = {
        "tools": len(rows),
        "tokens": sum(r["tokens"] for r in rows),
        "listed_tools": sum(1 for r in rows if r["listed"]),
        "listed_tokens": sum(r["tokens"] for r in rows if r["listed"]),
    }
    if as_json:
        json.dump({"method": method, "tools": rows, "servers": servers, "total": total}, out, indent=2)
        out.write("\n")
        return 0
    table = [["TOOL", "SERVER", "LISTED", "~TOKENS"]]
    table += [[r["tool"], r["server"], "yes" if r["listed"] else "search", str(r["tokens"])] for r in rows]
    print_table(table, out)
    out.write("\n")
    table = [["SERVER", "TOOLS", "LISTED", "~TOKENS", "LISTED_TOKENS"]]
    for name, s in servers.items():
        table.append([name, str(s["tools"]), str(s["listed_tools"]), str(s["tokens"]), str(s["listed_tokens"])])
    table.append(
        ["total", str(total["tools"]), str(total["listed_tools"]), str(total["tokens"]), str(total["listed_tokens"])]
    )
    print_table(table, out)
    out.write(f"({method})\n")
    return 0
