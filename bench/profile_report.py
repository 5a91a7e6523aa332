"""Summarise a py-spy raw profile (collapsed stacks) or a cProfile file of the hub.

    python -m bench.profile_report bench/results/hub-pyspy.txt   # py-spy `--format raw`
    python -m bench.profile_report bench/results/hub.prof        # cProfile (python -m cProfile -o ...)

For py-spy: on-CPU samples of the hub process (idle excluded): the functions with the largest inclusive share
("cumulative %"), the largest self share, and self time grouped by package.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")

# Package of a frame, by its file path; the first match wins.
PACKAGES: list[tuple[str, str]] = [
    ("hub/", "hub (our code)"),
    ("structlog/", "structlog"),
    ("pydantic_core/", "pydantic"),
    ("pydantic/", "pydantic"),
    ("mcp_types/", "mcp_types (models)"),
    ("mcp/", "mcp SDK"),
    ("anyio/", "anyio"),
    ("sniffio/", "anyio"),
    ("asyncio/", "asyncio event loop"),
    ("selectors.py", "asyncio event loop"),
    ("threading.py", "worker threads"),
    ("concurrent/", "worker threads"),
    ("queue.py", "worker threads"),
    ("json/", "json (stdlib)"),
    ("logging/", "logging (stdlib)"),
    ("uvicorn/", "uvicorn/starlette/h11"),
    ("starlette/", "uvicorn/starlette/h11"),
    ("h11/", "uvicorn/starlette/h11"),
    ("httpx", "httpx"),
    ("codecs.py", "io/codecs"),
    ("_pyio.py", "io/codecs"),
    ("opentelemetry/", "opentelemetry"),
]


FOCUS = [
    "stdio_server.<locals>.stdin_reader",
    "stdio_server.<locals>.stdout_writer",
    "run_sync_in_worker_thread",
    "OpenTelemetryMiddleware.__call__",
    "Router.call_tool",
    "Router._logged",
    "_size (hub/router.py)",
    "map_uris",
    "forward_meta",
    "model_copy",
    "Child.request",
    "ClientSession.send_request",
    "JSONRPCDispatcher.send_raw_request",
    "StdioProcess._parse",
    "StdioProcess._write_stdin",
    "StdioProcess._read_stdout",
    "StdioProcess._wait_exit",
    "serialize_server_result",
    "TypeAdapter.validate_json",
    "TypeAdapter.validate_python",
    "model_dump_json",
    "model_validate",
    "BaseModel.__init__",
    "JSONRenderer.__call__",
    "TimeStamper.__call__",
    "CancelScope.__enter__",
    "CancelScope.__exit__",
]


def package(file: str) -> str:
    path = short(file)
    for needle, name in PACKAGES:
        if path.startswith(needle):
            return name
    return "other"


def short(file: str) -> str:
    for marker in ("site-packages/", "lib/python3.11/", "/work/main/"):
        if marker in file:
            return file.split(marker, 1)[1]
    return file


def parse_raw(path: Path) -> list[tuple[list[tuple[str, str]], int]]:
    samples = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = []
        for frame in stack.split(";"):
            m = FRAME.match(frame.strip())
            frames.append((m["func"], m["file"]) if m else (frame.strip(), ""))
        samples.append((frames, int(count)))
    return samples


def report_pyspy(path: Path, top: int = 30) -> str:
    samples = parse_raw(path)
    total = sum(c for _, c in samples)
    inclusive: Counter[str] = Counter()
    self_: Counter[str] = Counter()
    by_pkg: Counter[str] = Counter()
    for frames, count in samples:
        seen = set()
        for func, file in frames:
            key = f"{func} ({short(file)})"
            if key not in seen:
                seen.add(key)
                inclusive[key] += count
        func, file = frames[-1]
        self_[f"{func} ({short(file)})"] += count
        by_pkg[package(file)] += count
    incl_pkg: Counter[str] = Counter()
    focus: Counter[str] = Counter()
    for frames, count in samples:
        for pkg in {package(file) for _, file in frames}:
            incl_pkg[pkg] += count
        if frames and frames[0][0].startswith("Thread._bootstrap"):
            focus["(any frame on a worker thread)"] += count
        names = {f"{func} ({short(file)})" for func, file in frames}
        for needle in FOCUS:
            if any(needle in n for n in names):
                focus[needle] += count
    lines = [f"{path}: {total} on-CPU samples (GIL held)", "", "self time by package:"]
    lines += [f"  {100 * c / total:5.1f}%  {k}" for k, c in by_pkg.most_common()]
    lines += ["", "inclusive by package (a sample counts if any frame of the package is on its stack):"]
    lines += [f"  {100 * c / total:5.1f}%  {k}" for k, c in incl_pkg.most_common()]
    lines += ["", "inclusive share of the functions the proposals are about:"]
    lines += [f"  {100 * focus[k] / total:5.1f}%  {k}" for k in ["(any frame on a worker thread)", *FOCUS]]
    lines += ["", f"top {top} by inclusive (cumulative) share:"]
    lines += [f"  {100 * c / total:5.1f}%  {k}" for k, c in inclusive.most_common(top)]
    lines += ["", f"top {top} by self share:"]
    lines += [f"  {100 * c / total:5.1f}%  {k}" for k, c in self_.most_common(top)]
    return "\n".join(lines)


def report_cprofile(path: Path, top: int = 40) -> str:
    import io
    import pstats

    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.strip_dirs().sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


if __name__ == "__main__":
    target = Path(sys.argv[1])
    print(report_cprofile(target) if target.suffix == ".prof" else report_pyspy(target))
