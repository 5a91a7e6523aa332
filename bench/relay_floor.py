"""The floor: the cheapest relay of newline-delimited JSON-RPC between a host and one child, with no MCP logic.

    python -m bench.relay_floor CHILD_ARGV...

It reads each side when epoll says so and writes the bytes to the other side as they are: no parsing, no ids, no
log. No Python process in the path can cost less, so the bench measures it next to the hub to show how much of
the hub's per-call cost is the extra hop itself (two pipes, two processes on two cores) and how much is the hub.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys


async def relay(argv: list[str]) -> int:
    loop = asyncio.get_running_loop()
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    to_child, from_child = child.stdin.fileno(), child.stdout.fileno()
    ended = loop.create_future()

    def pump(source: int, target: int) -> None:
        try:
            data = os.read(source, 1 << 20)
        except BlockingIOError:
            return
        if not data:
            loop.remove_reader(source)
            if not ended.done():
                ended.set_result(None)
            return
        view = memoryview(data)
        while view:  # the targets stay blocking: a partial write just continues
            view = view[os.write(target, view) :]

    for source, target in ((0, to_child), (from_child, 1)):
        os.set_blocking(source, False)
        loop.add_reader(source, pump, source, target)
    await ended
    child.stdin.close()  # the host went away (or the child did): let the child end as it would
    try:
        return await asyncio.wait_for(asyncio.to_thread(child.wait), 5)
    except TimeoutError:
        child.kill()
        return child.wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(relay(sys.argv[1:])))
