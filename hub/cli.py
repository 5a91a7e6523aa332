"""Command line: `hub serve`, `hub check`, `hub list`, `hub call`.

`serve` speaks MCP to the host on stdio (or Streamable HTTP with --http). The other commands start the hub
in-process, wait (bounded) for the children, and talk to it through the SDK's client exactly as a host would.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from hub import __version__
from hub.warm_start import EarlyFront, WarmStart

if TYPE_CHECKING:
    from mcp import Client

    from hub.config import LoadedConfig
    from hub.hub import Hub
    from hub.logs import CallLog
    from hub.spawn import EarlySpawns, Launch

DEFAULT_CONFIG = "servers.yaml"
EXIT_CONFIG = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hub", description="One MCP entry for your host, many MCP servers behind it.")
    parser.add_argument("--version", action="version", version=f"hub {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-c",
        "--config",
        default=os.environ.get("HUB_CONFIG", DEFAULT_CONFIG),
        help="path of servers.yaml (default: $HUB_CONFIG or ./servers.yaml)",
    )
    common.add_argument(
        "--log-format",
        choices=["json", "console"],
        default=None,
        help="json (default for serve) or console (default for the other commands)",
    )
    common.add_argument("--log-level", default=None, help="debug, info, warning, error")
    common.add_argument("--log-file", default=None, help="append logs to this file instead of stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", parents=[common], help="serve MCP to a host (stdio by default)")
    serve.add_argument("--http", metavar="[HOST:]PORT", help="serve Streamable HTTP at /mcp instead of stdio")
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="extra Host/Origin allowed over HTTP (DNS-rebinding protection); repeatable",
    )
    serve.add_argument(
        "--no-warm-start",
        action="store_true",
        help="do not answer a stdio host's first initialize and tools/list from the last run's cache",
    )

    commands.add_parser("check", parents=[common], help="start every server and report its state")
    listing = commands.add_parser("list", parents=[common], help="print the merged catalog as the host sees it")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    call = commands.add_parser("call", parents=[common], help="call one tool and print the result")
    call.add_argument("name", help="exposed tool name, e.g. time_get_current_time")
    call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    reload = commands.add_parser("reload", help="make a running hub re-read its servers.yaml")
    target = reload.add_mutually_exclusive_group(required=True)
    target.add_argument("--pid", type=int, help="process id of a hub (sends it SIGHUP)")
    target.add_argument("--url", help="base URL of a hub serving HTTP, e.g. http://127.0.0.1:8000 (POST /reload)")
    for sub in (commands.choices["check"], listing, call):
        sub.add_argument(
            "--wait",
            type=float,
            default=None,
            metavar="SECONDS",
            help="how long to wait for servers to start (default: the longest connect_timeout)",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    started = time.monotonic()  # a host's first listing is timed from here (Hub.startup_wait_left)
    args = _parser().parse_args(argv)
    if args.command == "reload":
        return _reload(args.pid, args.url)
    serving = args.command == "serve"
    warm: WarmStart | None = None
    early: EarlyFront | None = None
    if serving and not args.http and not args.no_warm_start:
        # Before anything heavy is imported: the host's first requests may be answered while the SDK loads.
        warm = WarmStart.for_config(args.config)
        # From the cache (a warm start), or on a first start from the children (hub/first_start.py).
        early = EarlyFront.start(warm.kept) if warm.path is not None else None
    # Imported here, not at the top, so that the warm start's thread runs while the SDK loads (over a second).
    import anyio

    launches: dict[str, Launch] = {}
    if early is not None and early.cached:
        # This file loaded before: its stdio children start now, before the config's model is even imported.
        from hub.early_launch import read_launches

        launches = read_launches(args.config)
    try:
        return anyio.run(_run, args, launches, warm, early, started)
    except KeyboardInterrupt:
        return 130


def _reload(pid: int | None, url: str | None) -> int:
    if pid is not None:
        try:
            os.kill(pid, signal.SIGHUP)
        except ProcessLookupError:
            print(f"hub: no process {pid}", file=sys.stderr)
            return 1
        sys.stdout.write(f"sent SIGHUP to {pid}; the hub logs config_reloaded or config_rejected\n")
        return 0
    assert url is not None
    import urllib.error  # here, not at the top: it costs a fifth of a second of every start
    import urllib.request

    request = urllib.request.Request(url.rstrip("/") + "/reload", method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            sys.stdout.write(response.read().decode() + "\n")  # a one-shot command: stdout is the user's
            return 0
    except urllib.error.HTTPError as exc:
        print(f"hub: {exc.code}: {exc.read().decode()}", file=sys.stderr)
    except OSError as exc:
        print(f"hub: cannot reach {url}: {exc}", file=sys.stderr)
    return 1


async def _run(
    args: argparse.Namespace,
    launches: dict[str, Launch],
    warm: WarmStart | None,
    early: EarlyFront | None,
    started: float,
) -> int:
    """Start the stdio children, then import the SDK while they boot (see hub/spawn.py), then run the command."""
    from hub.spawn import EarlySpawns

    def stop_now(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # ends the import, and the `finally` ends the children started below

    # Until the hub's own handlers are set, a TERM or HUP must not leave the early children without their hub.
    previous = {sig: signal.signal(sig, stop_now) for sig in (signal.SIGTERM, signal.SIGHUP)}
    spawns = EarlySpawns()
    try:
        await spawns.start_launches(launches)
        launched_ms = (time.monotonic() - started) * 1000
        from hub.config import ConfigError, load_config
        from hub.logs import configure_logging

        serving = args.command == "serve"
        call_log = configure_logging(
            args.log_format or ("json" if serving else "console"),
            args.log_level or ("info" if serving else "warning"),
            args.log_file,
        )
        try:
            loaded = load_config(args.config)
        except ConfigError as exc:
            print(f"hub: {exc}", file=sys.stderr)
            return EXIT_CONFIG
        if launches:
            ended = await spawns.reconcile(loaded)
            _log_early_launch(launches, ended, launched_ms)
        first_start = early is not None and not early.cached
        if _start_children_first(args, loaded, early, first_start):
            await spawns.start(loaded)
            if early is not None and first_start:
                from hub.first_start import Probe

                early.attach(Probe.start(loaded, spawns.waiting()))
        from mcp.shared.exceptions import MCPDeprecationWarning

        from hub.front import serve_http, serve_stdio

        for sig, handler in previous.items():
            signal.signal(sig, handler)

        # The hub forwards handshake-era features (logging, roots, subscribe) on purpose; the SDK warns on each use.
        warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
        if args.command != "serve":
            return await _one_shot(loaded, args, call_log, spawns)
        if args.http:
            await serve_http(loaded, args.http, args.allow_host, call_log, spawns, started)
        else:
            await serve_stdio(loaded, call_log, warm, early, spawns, started)
        return 0
    finally:
        await spawns.aclose()


def _log_early_launch(launches: dict[str, Launch], ended: list[str], launched_ms: float) -> None:
    import structlog

    structlog.get_logger("hub").info(
        "children_started_early",
        servers=[name for name in launches if name not in ended],
        since_start_ms=round(launched_ms, 1),
        ended=ended,  # started from the file, then not as the loaded config starts them
    )


def _start_children_first(
    args: argparse.Namespace, loaded: LoadedConfig, early: EarlyFront | None, first_start: bool
) -> bool:
    """Whether starting the children before the SDK import makes the host wait less, not more.

    The one-shot commands wait for every child anyway, and a warm-started host has its first answers from the
    cache. Otherwise children starting on the same cores slow the import down, and with it every answer the SDK
    gives: all end at about their total CPU over the cores (5 SDK children on 2 cores: 1.6 s -> 4-6 s; 20: 2 s ->
    12-15 s). On a first start the early front answers `initialize` at once and the first tools/list as soon as
    the children have listed their tools (hub/first_start.py), which needs them started first: so while they are
    at most two per core and one more (5 on 2 cores). Without the early front (`--no-warm-start`), only a core for
    each child while the host's first listing waits for them anyway (`startup_listing_wait`), and one more for
    the hub's import without that wait.
    """
    if args.command != "serve" or (early is not None and not first_start):
        return True
    children = sum(1 for server in loaded.config.servers.values() if server.enabled and server.kind == "stdio")
    if first_start:
        return children <= 2 * _usable_cpus() + 1
    spare = 0 if loaded.config.hub.startup_listing_wait > 0 else 1  # a core for the hub's import, or not
    return children + spare <= _usable_cpus()


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


async def _one_shot(loaded: LoadedConfig, args: argparse.Namespace, call_log: CallLog, spawns: EarlySpawns) -> int:
    from mcp import Client

    from hub.hub import Hub
    from hub.server import build_server

    hub = Hub(loaded, call_log, spawns)
    async with hub.running():
        await hub.wait_settled(args.wait if args.wait is not None else hub.settle_limit())
        hub.end_start_wait()  # --wait said how long to wait: the listing below does not wait again
        if args.command == "check":
            return _print_check(hub, sys.stdout)
        server = build_server(hub)
        async with Client(server, mode="legacy") as client:
            if args.command == "list":
                return await _print_list(hub, client, args.json, sys.stdout)
            return await _print_call(client, args.name, args.arguments, sys.stdout)


def _table(rows: list[list[str]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")


def _print_check(hub: Hub, out: TextIO) -> int:
    report = hub.health()
    rows = [["SERVER", "STATE", "TOOLS", "RESOURCES", "PROMPTS", "START_MS", "RESTARTS", "ERROR"]]
    for s in report["servers"]:
        rows.append(
            [
                s["name"],
                s["state"],
                str(s["tools"]),
                str(s["resources"]),
                str(s["prompts"]),
                "" if s["start_ms"] is None else f"{s['start_ms']:.0f}",
                str(s["restarts"]),
                s["last_error"] or "",
            ]
        )
    _table(rows, out)
    for c in report["collisions"]:
        out.write(f"collision: {c['kind']} {c['exposed']!r} kept from '{c['kept']}', dropped from '{c['dropped']}'\n")
    failed = [s["name"] for s in report["servers"] if s["state"] != "ready"]
    out.write(f"{len(report['servers']) - len(failed)}/{len(report['servers'])} servers ready ({hub.loaded.path})\n")
    return 1 if failed else 0


def _tokens(value: Any) -> tuple[int, int]:
    """Size of a listing in bytes and in approximate LLM tokens (about 4 bytes per token for JSON)."""
    size = len(json.dumps(value, separators=(",", ":")))
    return size, (size + 3) // 4


async def _print_list(hub: Hub, client: Client, as_json: bool, out: TextIO) -> int:
    tools = (await client.session.list_tools()).model_dump(by_alias=True, exclude_none=True, mode="json")["tools"]
    resources = (await client.session.list_resources()).model_dump(by_alias=True, exclude_none=True, mode="json")
    templates = (await client.session.list_resource_templates()).model_dump(
        by_alias=True, exclude_none=True, mode="json"
    )
    prompts = (await client.session.list_prompts()).model_dump(by_alias=True, exclude_none=True, mode="json")
    owner = {name: route.child for name, route in hub.namespace.tool_routes.items()}
    per_child: dict[str, list[dict[str, Any]]] = {}
    for tool in tools:
        per_child.setdefault(owner.get(tool["name"], "hub"), []).append(tool)
    servers: list[dict[str, Any]] = []
    for name, child in [("hub", None), *hub.children.items()]:
        size, tokens = _tokens(per_child.get(name, []))
        servers.append(
            {
                "name": name,
                "state": str(child.state) if child else "ready",
                "tools": len(per_child.get(name, [])),
                "bytes": size,
                "approx_tokens": tokens,
            }
        )
    total_bytes, total_tokens = _tokens(tools)
    if as_json:
        json.dump(
            {
                "tools": tools,
                "resources": resources["resources"],
                "resourceTemplates": templates["resourceTemplates"],
                "prompts": prompts["prompts"],
                "servers": servers,
                "total": {"tools": len(tools), "bytes": total_bytes, "approx_tokens": total_tokens},
                "collisions": [c.__dict__ for c in hub.namespace.collisions],
            },
            out,
            indent=2,
        )
        out.write("\n")
        return 0
    rows = [["TOOL", "SERVER", "DESCRIPTION"]]
    for tool in tools:
        description = (tool.get("description") or "").strip().splitlines()
        first = description[0] if description else ""
        rows.append([tool["name"], owner.get(tool["name"], "hub"), first[:70] + ("..." if len(first) > 70 else "")])
    _table(rows, out)
    for kind, items, key in (
        ("resource", resources["resources"], "uri"),
        ("template", templates["resourceTemplates"], "uriTemplate"),
        ("prompt", prompts["prompts"], "name"),
    ):
        for item in items:
            out.write(f"{kind}: {item[key]}\n")
    out.write("\n")
    rows = [["SERVER", "STATE", "TOOLS", "LISTING_BYTES", "~TOKENS"]]
    rows += [[s["name"], s["state"], str(s["tools"]), str(s["bytes"]), str(s["approx_tokens"])] for s in servers]
    rows.append(["total", "", str(len(tools)), str(total_bytes), str(total_tokens)])
    _table(rows, out)
    for c in hub.namespace.collisions:
        out.write(f"collision: {c.kind} {c.exposed!r} kept from '{c.kept}', dropped from '{c.dropped}'\n")
    return 0


async def _print_call(client: Client, name: str, arguments: str, out: TextIO) -> int:
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        print(f"hub: arguments must be a JSON object: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if not isinstance(parsed, dict):
        print('hub: arguments must be a JSON object, e.g. \'{"timezone": "UTC"}\'', file=sys.stderr)
        return EXIT_CONFIG

    try:
        result = await client.session.send_request(
            types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=parsed)),
            types.CallToolResult,
        )
    except MCPError as exc:
        print(f"hub: {exc.error.message} (code {exc.error.code})", file=sys.stderr)
        return 1
    dumped = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    for block in dumped.get("content", []):
        if block.get("type") == "text":
            out.write(block["text"].rstrip("\n") + "\n")
        else:
            out.write(json.dumps(block) + "\n")
    if "structuredContent" in dumped:
        out.write("structuredContent: " + json.dumps(dumped["structuredContent"]) + "\n")
    return 1 if dumped.get("isError") else 0
