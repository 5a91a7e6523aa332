"""Starting a stdio child's process, and starting them all before the hub has imported the MCP SDK.

Importing the SDK takes over a second of CPU. A child's own start-up (an interpreter, a node runtime, a binary)
needs none of it, so the hub can start every stdio child first and import the SDK while the children boot on the
other cores; each child's first connection then adopts its process (`EarlySpawns.take`) if its config starts it
the same way (an equal `Launch`). When the children start first is decided in hub/cli.py
(`_start_children_first`): not when children on too few cores would delay the host's first answer. On a warm
start they start before even the config is loaded (hub/early_launch.py). Until the SDK is there, a child is sent
nothing, or on a first start the probe's handshake (hub/first_start.py); the pipes hold what it writes meanwhile.

Environment of a stdio child: only `BASE_ENV` names from the hub's environment, plus the names listed in
`inherit_env`, plus `env`. Nothing else leaks from the hub (its secrets stay its own). This module imports no
part of the SDK.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import Process

if TYPE_CHECKING:
    from hub.config import LoadedConfig, ServerConfig
    from hub.first_start import Handshake

BASE_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
# Grace period for a child to exit by itself after its stdin closes (the spec's first shutdown step).
EXIT_GRACE = 2.0
# Time between SIGTERM and SIGKILL of the child's process group.
KILL_GRACE = 2.0


@dataclass(frozen=True)
class Launch:
    """How a stdio child is started. Two equal launches start the same process, so an early one can be adopted."""

    argv: tuple[str, ...]
    cwd: str | None
    env: Mapping[str, str]


def launch_of(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    inherit_env: Sequence[str],
    cwd: str | None,
    environ: Mapping[str, str] | None = None,
) -> Launch:
    """The launch of a stdio child with these settings, in the hub's environment (`environ`)."""
    source = os.environ if environ is None else environ
    child_env = {name: source[name] for name in (*BASE_ENV, *inherit_env) if name in source} | dict(env)
    return Launch((resolve_command(command, child_env), *args), cwd, child_env)


def launch_for(config: ServerConfig, environ: Mapping[str, str] | None = None) -> Launch:
    assert config.command is not None
    return launch_of(config.command, config.args, config.env, config.inherit_env, config.cwd, environ)


@dataclass
class Spawned:
    """A child's process and the read end of its stdout, a pipe of the hub's own (non-blocking)."""

    process: Process
    stdout_fd: int
    # Set when a first start's probe sent it the handshake (hub/first_start.py): its connection adopts it.
    handshake: Handshake | None = None


def resolve_command(command: str, environ: Mapping[str, str]) -> str:
    """`command` as given when it is a path or on the child's PATH; else the one installed next to the hub.

    A desktop host starts `/path/to/.venv/bin/hub` with a PATH of its own, without that venv on it, so servers
    installed into the hub's venv (the default servers.yaml's `mcp-server-time`) would not be found.
    """
    if os.sep in command or shutil.which(command, path=environ.get("PATH", os.defpath)):
        return command
    beside = Path(sys.executable).parent / command  # the venv's bin, not the interpreter it links to
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else command


async def spawn(launch: Launch) -> Spawned:
    """Start a child in its own process group (so that its descendants can be ended with it)."""
    out_read, out_write = os.pipe()
    try:
        process = await anyio.open_process(
            launch.argv,
            env=dict(launch.env),
            cwd=launch.cwd,
            stdin=subprocess.PIPE,
            stdout=out_write,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except BaseException:
        os.close(out_read)
        raise
    finally:
        os.close(out_write)
    os.set_blocking(out_read, False)
    return Spawned(process, out_read)


class EarlySpawns:
    """The stdio children started before the SDK import, each waiting for its first connection to take it."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[Launch, Spawned]] = {}

    async def start(self, loaded: LoadedConfig) -> None:
        """Start every enabled stdio child not started yet; one that cannot start is left to its connection."""
        for name, server in loaded.config.servers.items():
            if server.enabled and server.kind == "stdio" and name not in self._waiting:
                await self._start(name, launch_for(server))

    async def start_launches(self, launches: Mapping[str, Launch]) -> None:
        """Start these children before the config is loaded (a warm start: hub/early_launch.py)."""
        for name, launch in launches.items():
            await self._start(name, launch)

    async def _start(self, name: str, launch: Launch) -> None:
        with suppress(OSError):  # command or cwd not found: the child's own start says so, with the fix
            self._waiting[name] = (launch, await spawn(launch))

    async def reconcile(self, loaded: LoadedConfig) -> list[str]:
        """End the children started early that `loaded` would not start as they were; their names.

        Only launches read before the config was loaded can differ: the file changed in between, or the reader
        of hub/early_launch.py and the config's model disagree (a test holds them equal).
        """
        servers = loaded.config.servers
        stale = [
            name
            for name, (launch, _) in self._waiting.items()
            if name not in servers or not servers[name].enabled or not _starts(servers[name], launch)
        ]
        ended = [self._waiting.pop(name)[1] for name in stale]
        async with anyio.create_task_group() as tg:
            for spawned in ended:
                tg.start_soon(end_unadopted, spawned)
        return stale

    def waiting(self) -> dict[str, Spawned]:
        """The processes started early and not taken yet, by server name."""
        return {name: spawned for name, (_, spawned) in self._waiting.items()}

    def take(self, name: str, config: ServerConfig) -> Spawned | None:
        """The process started early for `name`, if `config` starts it the same way."""
        waiting = self._waiting.get(name)
        if waiting is None or not _starts(config, waiting[0]):
            return None  # another config now: ended by `aclose`
        del self._waiting[name]
        return waiting[1]

    async def aclose(self) -> None:
        """End the processes no connection took (the hub stopped before starting them): TERM, bounded, KILL."""
        waiting, self._waiting = list(self._waiting.values()), {}
        async with anyio.create_task_group() as tg:
            for _, spawned in waiting:
                tg.start_soon(end_unadopted, spawned)


def _starts(config: ServerConfig, launch: Launch) -> bool:
    """Whether `config` starts its child exactly as `launch` did, so that a process started so can be adopted."""
    return config.kind == "stdio" and launch_for(config) == launch


async def end_unadopted(spawned: Spawned) -> None:
    """End a process started early that no connection took, as `stop` ends any child."""
    with anyio.CancelScope(shield=True):
        await stop(spawned.process)
    os.close(spawned.stdout_fd)


async def stop(process: Process) -> None:
    """Close stdin, wait, then SIGTERM and SIGKILL the whole process group; every wait bounded."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    for sig, grace in ((None, EXIT_GRACE), (signal.SIGTERM, KILL_GRACE), (signal.SIGKILL, KILL_GRACE)):
        if sig is not None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
        with anyio.move_on_after(grace):
            while process.returncode is None:  # noqa: ASYNC110 - no event exists for this
                await anyio.sleep(0.02)
        if process.returncode is not None:
            break
    # Descendants that outlived the leader still share its group.
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()
