"""A child with calls that take too long.

Tools: echo, pid;
- `hang {marker}`: writes MARKER.started, never returns; writes MARKER = "cancelled" when cancelled;
- `slow_progress {steps, interval, marker?}`: a progress notification every `interval` s, then "done {steps}";
  writes MARKER = "cancelled" if cancelled;
- `sleep {seconds}`: returns "slept" after `seconds`;
- `gate {path, marker}`: writes MARKER.started, returns "released" once PATH exists.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types

from tests.children._common import text_result
from tests.faults.children._base import Ctx, FaultServer, mark, parser, serve

NUMBER = {"type": "number"}
STRING = {"type": "string"}


async def hang(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
    marker = str(args["marker"])
    await mark(f"{marker}.started", "started")
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        await mark(marker, "cancelled")
        raise
    raise AssertionError("unreachable")


async def slow_progress(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
    steps, interval, marker = int(args["steps"]), float(args["interval"]), args.get("marker")
    try:
        for i in range(1, steps + 1):
            await anyio.sleep(interval)
            await ctx.session.report_progress(i, steps, f"step {i}")
    except anyio.get_cancelled_exc_class():
        if marker:
            await mark(str(marker), "cancelled")
        raise
    return text_result(f"done {steps}")


async def sleep(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
    await anyio.sleep(float(args["seconds"]))
    return text_result("slept")


async def gate(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
    path = anyio.Path(str(args["path"]))
    await mark(f"{args['marker']}.started", "started")
    while not await path.exists():  # noqa: ASYNC110 - the test creates the file; no event crosses processes
        await anyio.sleep(0.05)
    return text_result("released")


def main() -> None:
    args = parser(__doc__ or "", "hang").parse_args()
    fault = FaultServer(args.name)
    fault.add("hang", "Never returns; records its cancellation.", {"marker": STRING}, hang)
    fault.add(
        "slow_progress",
        "Reports progress every interval.",
        {"steps": {"type": "integer"}, "interval": NUMBER, "marker": STRING},
        slow_progress,
    )
    fault.add("sleep", "Returns after `seconds`.", {"seconds": NUMBER}, sleep)
    fault.add("gate", "Returns once `path` exists.", {"path": STRING, "marker": STRING}, gate)
    serve(fault, args)


if __name__ == "__main__":
    main()
