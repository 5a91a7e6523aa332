"""`hub check`, `hub list` and `hub cost`: a hub started in this process, reported on as a person reads it.

Tokens are counted by hub.observe.tokens, as the status page counts them. "Listed" is what a host's tools/list
shows; with `exposure: search` a server's tools are found through hub_search_tools instead (docs/cli.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, TextIO

from hub.access.hidden import Explanation
from hub.cli.output import print_json, print_table
from hub.observe.tokens import counter
from hub.relay.catalog import LISTS

if TYPE_CHECKING:
    from hub.app import Hub
    from hub.host.inprocess import InProcessHost


def check_report(hub: Hub, late: Collection[str], wait: float | None = None) -> dict[str, Any]:
    """`hub check --json`'s document (docs/cli.md): the servers named in `late` did not settle in time: within
    their connect_timeout (reported failed, with the reason), or within `wait` (--wait) when that ran out first
    (reported starting: they have not failed)."""
    report = hub.health()
    servers = []
    for s in report["servers"]:
        state, error = s["state"], s["last_error"]
        failure = hub.children[s["name"]].last_failure
        if state != "ready" and error is None and failure is not None:
            error = failure[0] or None  # restarting: the attempt under way has no error yet, the last one had
        if s["name"] in late:
            timeout = hub.children[s["name"]].config.connect_timeout
            if wait is not None and wait < timeout:
                state = "starting"
                error = f"still starting when --wait {wait:g}s ran out (connect_timeout {timeout:g}s)"
            else:
                state, error = "failed", f"did not connect and list within {timeout:g}s"
        figures = {key: s[key] for key in ("tools", "resources", "prompts", "start_ms", "restarts")}
        sandbox, held = s.get("sandbox", "-"), s["quarantined"]
        servers.append(
            {"name": s["name"], "state": state, **figures, "sandbox": sandbox, "error": error, "quarantined": held}
        )
    ready = sum(1 for s in servers if s["state"] == "ready")
    config, collisions = str(hub.loaded.path), report["collisions"]
    return {"config": config, "servers": servers, "ready": ready, "total": len(servers), "collisions": collisions}


def print_check(hub: Hub, as_json: bool, late: Collection[str], out: TextIO, wait: float | None = None) -> int:
    """One row per server, then collisions, quarantines and includes; 0 when every server is ready, else 1."""
    report = check_report(hub, late, wait)
    status = 0 if report["ready"] == report["total"] else 1
    if as_json:
        print_json(report, out)
        return status
    rows = [["SERVER", "STATE", "TOOLS", "RESOURCES", "PROMPTS", "START_MS", "RESTARTS", "SANDBOX", "ERROR"]]
    for s in report["servers"]:
        start_ms = "" if s["start_ms"] is None else f"{s['start_ms']:.0f}"
        counts = [str(s[key]) for key in ("tools", "resources", "prompts")]
        rows.append([s["name"], s["state"], *counts, start_ms, str(s["restarts"]), s["sandbox"], s["error"] or ""])
    print_table(rows, out)
    out.writelines(map(_collision, report["collisions"]))
    for s in report["servers"]:
        if s["quarantined"]:
            held = ", ".join(s["quarantined"])
            out.write(f"quarantined: {s['name']}: {held} (changed since servers.lock: hub pin --diff {s['name']})\n")
    if len(hub.loaded.files) > 1:  # includes: where each server, and each key another file replaced, came from
        for name, (file, overridden) in hub.loaded.origins.items():
            line = f"from: {name}: {_relative(file, hub.loaded.path)}"
            if overridden:
                keys = ", ".join(f"{key} ({_relative(where, hub.loaded.path)})" for key, where in overridden.items())
                line += f"; overridden: {keys}"
            out.write(line + "\n")
    out.write(f"{report['ready']}/{report['total']} servers ready ({hub.loaded.path})\n")
    return status


def _collision(c: dict[str, str]) -> str:
    """A line of `hub check` and `hub list`: which server kept an exposed name that two of them have."""
    return f"collision: {c['kind']} {c['exposed']!r} kept from '{c['kept']}', dropped from '{c['dropped']}'\n"


def _origin(hub: Hub, name: str) -> dict[str, Any]:
    """`source` (the file a server came from) and `overridden` (key -> file), for `hub list --json`."""
    if name not in hub.loaded.origins:
        return {}
    file, overridden = hub.loaded.origins[name]
    return {"source": str(file), "overridden": {key: str(where) for key, where in overridden.items()}}


def _relative(file: Any, config: Any) -> str:
    """A file of the configuration as the user wrote it: relative to servers.yaml's directory when inside it."""
    try:
        return str(file.relative_to(config.parent))
    except ValueError:
        return str(file)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _size(value: Any, count: Callable[[str], int]) -> tuple[int, int]:
    """Size of a listing in bytes (compact UTF-8 JSON) and in tokens (`count`)."""
    text = _compact(value)
    return len(text.encode()), count(text)


def _owners(hub: Hub) -> dict[str, str]:
    """The server of each exposed tool of a child (the hub's own are not in it)."""
    return {name: route.child for name, route in hub.namespace.tool_routes.items()}


def explain_listing(hub: Hub) -> Explanation:
    """What the policy hid from the identity `hub list` runs as (`--as`/`--group`, else the local user), per kind
    and by deciding rule: the decisions the listings were made with (`Namespace.tally`), not a second filter."""
    view = hub.view(hub.local)
    tallies = {}
    for method, (result_key, _, _) in LISTS.items():
        builtin = hub.builtin_tools() if method == "tools/list" else ()
        tallies[result_key] = hub.namespace.tally(method, builtin, view)
    return Explanation(hub.local, view, tallies)


async def print_list(hub: Hub, host: InProcessHost, as_json: bool, out: TextIO, err: TextIO) -> int:
    """The catalog `host` is given (tools, resources, templates, prompts), then each server's share; 0. When the
    listings are empty or the policy hid something, who they were made for and which rule hid what: on `err`
    (text), or as `identity` and `policy` (JSON)."""
    count = counter()[0]
    tools = (await host.request("tools/list", {}))["tools"]
    resources = (await host.request("resources/list", {}))["resources"]
    templates = (await host.request("resources/templates/list", {}))["resourceTemplates"]
    prompts = (await host.request("prompts/list", {}))["prompts"]
    owner = _owners(hub)
    per_child: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        per_child.setdefault(owner.get(tool["name"], "hub"), []).append(tool)
    servers: list[dict[str, Any]] = []
    for name, child in [("hub", None), *hub.children.items()]:
        shown = per_child.get(name, [])
        size, tokens = _size(shown, count)
        state = str(child.state) if child else "ready"
        entry = {"name": name, "state": state, "tools": len(shown), "bytes": size, "approx_tokens": tokens}
        servers.append(entry | _origin(hub, name))
    total_bytes, total_tokens = _size(tools, count)
    explanation = explain_listing(hub)
    if as_json:
        document = {
            "tools": tools,
            "resources": resources,
            "resourceTemplates": templates,
            "prompts": prompts,
            "servers": servers,
            "total": {"tools": len(tools), "bytes": total_bytes, "approx_tokens": total_tokens},
            "collisions": [c.__dict__ for c in hub.namespace.collisions],
            "identity": {"name": hub.local.name, "groups": sorted(hub.local.groups), "auth": hub.local.method},
            "policy": explanation.document(),
        }
        print_json(document, out)
        return 0
    rows = [["TOOL", "SERVER", "DESCRIPTION"]]
    for tool in tools:
        description = (tool.get("description") or "").strip().splitlines()
        first = description[0] if description else ""
        rows.append([tool["name"], owner.get(tool["name"], "hub"), first[:70] + ("..." if len(first) > 70 else "")])
    print_table(rows, out)
    out.writelines(f"resource: {item['uri']}\n" for item in resources)
    out.writelines(f"template: {item['uriTemplate']}\n" for item in templates)
    out.writelines(f"prompt: {item['name']}\n" for item in prompts)
    out.write("\n")
    rows = [["SERVER", "STATE", "TOOLS", "LISTING_BYTES", "~TOKENS"]]
    rows += [[s["name"], s["state"], str(s["tools"]), str(s["bytes"]), str(s["approx_tokens"])] for s in servers]
    rows.append(["total", "", str(len(tools)), str(total_bytes), str(total_tokens)])
    print_table(rows, out)
    out.writelines(_collision(c.__dict__) for c in hub.namespace.collisions)
    if explanation.worth_saying:
        out.flush()  # the table first, then why it is short, when both go to one terminal
        err.write("".join(f"hub: {line}\n" for line in explanation.lines()))
    return 0


async def print_cost(hub: Hub, host: InProcessHost, as_json: bool, out: TextIO) -> int:
    count, method = counter()
    listed = {t["name"] for t in (await host.request("tools/list", {}))["tools"]}
    owner = _owners(hub)
    rows = [
        {
            "tool": t["name"],
            "server": owner.get(t["name"], "hub"),
            "listed": t["name"] in listed,
            "tokens": count(_compact(t)),
        }
        for t in (*hub.builtin_tools(), *hub.namespace.tools)
    ]
    columns = ("tools", "listed_tools", "tokens", "listed_tokens")
    servers: dict[str, dict[str, int]] = {}
    total = dict.fromkeys(("tools", "tokens", "listed_tools", "listed_tokens"), 0)
    for row in rows:
        for tally in (servers.setdefault(row["server"], dict.fromkeys(columns, 0)), total):
            tally["tools"] += 1
            tally["tokens"] += row["tokens"]
            if row["listed"]:
                tally["listed_tools"] += 1
                tally["listed_tokens"] += row["tokens"]
    if as_json:
        print_json({"method": method, "tools": rows, "servers": servers, "total": total}, out)
        return 0
    table = [["TOOL", "SERVER", "LISTED", "~TOKENS"]]
    table += [[r["tool"], r["server"], "yes" if r["listed"] else "search", str(r["tokens"])] for r in rows]
    print_table(table, out)
    out.write("\n")
    table = [["SERVER", "TOOLS", "LISTED", "~TOKENS", "LISTED_TOKENS"]]
    table += [[name, *(str(s[c]) for c in columns)] for name, s in [*servers.items(), ("total", total)]]
    print_table(table, out)
    out.write(f"({method})\n")
    return 0
