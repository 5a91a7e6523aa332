"""A child with a huge result. Tools: echo, pid; `big {mb}` returns one text block of `mb` MiB of 'x'."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from tests.children._common import text_result
from tests.faults.children._base import Ctx, FaultServer, parser, serve

MIB = 1024 * 1024


async def big(ctx: Ctx, args: dict[str, Any]) -> types.CallToolResult:
    return text_result("x" * int(float(args["mb"]) * MIB))


def main() -> None:
    args = parser(__doc__ or "", "big_result").parse_args()
    fault = FaultServer(args.name)
    fault.add("big", "Returns mb MiB of text.", {"mb": {"type": "number"}}, big)
    serve(fault, args)


if __name__ == "__main__":
    main()
