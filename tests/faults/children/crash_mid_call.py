"""A child that crashes during a call.

Tools: echo, pid; `crash` writes "about to crash" to stderr and exits with code 7 without answering;
`wait {marker}` writes MARKER.started and never returns (a call left in flight when `crash` kills the process).
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import mcp_types as types

from tests.faults.children._base import Ctx, FaultServer, mark, parser, say, serve


async def crash(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
    say("crash_mid_call: about to crash")
    os._exit(7)


async def wait(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
    await mark(f"{args['marker']}.started", "started")
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def main() -> None:
    args = parser(__doc__ or "", "crash_mid_call").parse_args()
    fault = FaultServer(args.name)
    fault.add("crash", "Exits with code 7 in the middle of the call.", {}, crash)
    fault.add("wait", "Never returns.", {"marker": {"type": "string"}}, wait)
    serve(fault, args)


if __name__ == "__main__":
    main()
