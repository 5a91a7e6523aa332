"""The hub without what only Linux has: `fcntl`, `/proc` and `os.pidfd_open` taken away, and the portable paths.

A `sitecustomize` put first on the PYTHONPATH of a subprocess takes them away before anything else runs:

- `import fcntl` fails in the hub's code (`hub/`). Its dependencies and the standard library keep it: on this
  system they are Linux code (the SDK imports fcntl `if sys.platform != "win32"`), and on another they would
  take their own path, which a hook cannot make them take here;
- opening or listing anything under `/proc` fails in the hub's code (psutil, which the portable path uses, reads
  /proc on Linux and asks the system elsewhere);
- `os.pidfd_open` and `os.killpg` are gone for everyone (no pidfds outside Linux, no process groups on Windows).

Every refused attempt is written to a file, with the file that made it. With HUB_PORTABLE=1 (as on Windows) every
module of `hub/` imports, and `hub --version`, `hub check` and a `hub serve` round trip work, without one attempt
from the hub's code. Windows' command lookup (`which_windows`, PATHEXT) is checked here too, as it can be anywhere.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from hub.platform.processes import resolve_command, which_windows
from tests.support.children import python_child, write_config
from tests.support.mcp_client import Host, connect_hub, hub_params, wait_for_tools
from tests.support.paths import REPO
from tests.support.waits import WAIT

pytestmark = pytest.mark.integration

SITECUSTOMIZE = '''
"""Takes away what only Linux has from the code under $HUB_REFUSED_IN (tests/integration/test_portable.py), and
os.pidfd_open and os.killpg from everyone; notes each refused attempt in $HUB_BLOCKED_LOG."""
import builtins
import io
import os
import sys

_LOG = os.environ["HUB_BLOCKED_LOG"]
_REFUSED_IN = os.environ["HUB_REFUSED_IN"] + os.sep
_real_import = builtins.__import__
_real_open = builtins.open
_real_os_open, _real_listdir, _real_scandir = os.open, os.listdir, os.scandir


def _refused(what, where):
    if not where.startswith(_REFUSED_IN):
        return False
    with _real_open(_LOG, "a") as log:
        log.write(f"{what}\\t{where}\\n")
    return True


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if name == "fcntl" and level == 0 and _refused("import fcntl", (globals or {}).get("__file__") or "?"):
        raise ModuleNotFoundError("No module named 'fcntl'", name="fcntl")
    return _real_import(name, globals, locals, fromlist, level)


def _guard(what, path):
    if isinstance(path, int):
        return
    try:
        text = os.fsdecode(path)
    except TypeError:
        return
    if text == "/proc" or text.startswith("/proc/"):
        caller = sys._getframe(2).f_globals.get("__file__") or "?"
        if _refused(f"{what} {text}", caller):
            raise FileNotFoundError(2, "No such file or directory (taken away by the test)", text)


def _open(file, *args, **kwargs):
    _guard("open", file)
    return _real_open(file, *args, **kwargs)


def _os_open(path, *args, **kwargs):
    _guard("os.open", path)
    return _real_os_open(path, *args, **kwargs)


def _listdir(path="."):
    _guard("os.listdir", path)
    return _real_listdir(path)


def _scandir(path="."):
    _guard("os.scandir", path)
    return _real_scandir(path)


builtins.__import__ = _import
builtins.open = io.open = _open
os.open, os.listdir, os.scandir = _os_open, _listdir, _scandir
for _name in ("pidfd_open", "killpg"):
    if hasattr(os, _name):
        delattr(os, _name)
'''

# Run in that state: every module of hub/ imports, and the Linux-only facilities are really gone.
IMPORT_EVERYTHING = """
import importlib, os, pkgutil
import hub
from hub.platform import portable
names = sorted(m.name for m in pkgutil.walk_packages(hub.__path__, "hub.") if m.name != "hub.__main__")
for name in names:
    importlib.import_module(name)
assert not hasattr(os, "pidfd_open") and not hasattr(os, "killpg")
assert portable(), "HUB_PORTABLE=1 did not choose the portable path"
print(len(names))
"""
# The hub's Linux module, called directly: its fcntl import and its /proc listing must be refused (and noted).
LINUX_ONLY = """
from hub.platform import linux
linux.widen_pipe(1)
linux.processes()
"""


@pytest.fixture
def without_linux(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment of a Python process without fcntl, /proc and pidfd_open, on the portable paths."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    blocked = tmp_path / "blocked.log"
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
        "HUB_PORTABLE": "1",
        "HUB_BLOCKED_LOG": str(blocked),
        "HUB_REFUSED_IN": str(REPO / "hub"),
    }
    return env, blocked


def attempts_by_the_hub(blocked: Path) -> list[str]:
    lines = blocked.read_text().splitlines() if blocked.exists() else []
    return [line for line in lines if line.split("\t")[-1].startswith(str(REPO / "hub"))]


async def run(env: dict[str, str], *args: str) -> tuple[int, str]:
    with anyio.fail_after(WAIT):
        done = await anyio.run_process([sys.executable, *args], cwd=REPO, env=env, check=False)
    return done.returncode, done.stdout.decode() + done.stderr.decode()


@pytest.mark.anyio
async def test_every_module_imports_and_the_cli_serves_without_linux_only_facilities(
    tmp_path: Path, without_linux: tuple[dict[str, str], Path]
) -> None:
    env, blocked = without_linux
    code, out = await run(env, "-c", IMPORT_EVERYTHING)
    assert code == 0, out
    assert int(out.split()[-1]) >= 30, out  # every module of hub/, not a few
    assert not attempts_by_the_hub(blocked), blocked.read_text()

    # The hooks catch the hub's own code: the checks below can fail.
    code, out = await run(env, "-c", LINUX_ONLY)
    assert code != 0 and "FileNotFoundError" in out, out
    caught = attempts_by_the_hub(blocked)
    assert [line.split(" ")[0] for line in caught] == ["import", "os.listdir"], caught
    blocked.unlink()

    code, out = await run(env, "-m", "hub", "--version")
    assert code == 0 and out.startswith("hub "), out

    config = write_config(tmp_path, {"kitchen": python_child("tests.children.kitchen")})
    code, out = await run(env, "-m", "hub", "check", "--config", str(config))
    assert code == 0, out
    assert "1/1 servers ready" in out

    host = Host()
    params = hub_params(config, tmp_path / "hub.log", env=env)
    async with connect_hub(params, host) as client:  # initialize, as a host does
        await wait_for_tools(client, host, {"kitchen_echo"})
        result = await client.call_tool("kitchen_echo", {"text": "portable"})
        assert not result.is_error and result.content[0].text == "portable"  # type: ignore[union-attr]
    log = [json.loads(line) for line in (tmp_path / "hub.log").read_text().splitlines() if line.startswith("{")]
    assert any(e.get("event") == "hub_stopped" for e in log), "the hub did not stop cleanly"
    assert not attempts_by_the_hub(blocked), blocked.read_text()


def test_windows_finds_a_command_by_its_pathext_extensions(tmp_path: Path) -> None:
    node, scripts = tmp_path / "nodejs", tmp_path / "Scripts"
    for directory in (node, scripts):
        directory.mkdir()
    (node / "npx").write_text("#!/bin/sh\n")  # npm's shell script for Git Bash, next to its npx.cmd
    (node / "npx.cmd").write_text("@echo off\n")
    (scripts / "uvx.exe").write_bytes(b"MZ")
    path = f"{node};{scripts}"
    pathext = ".COM;.exe;.bat;.cmd"
    assert which_windows("npx", path, pathext) == str(node / "npx.cmd")
    assert which_windows("uvx", path, pathext) == str(scripts / "uvx.exe")
    assert which_windows("npx.cmd", path, pathext) == str(node / "npx.cmd")
    assert which_windows(str(node / "npx"), "", pathext) == str(node / "npx.cmd")  # a path: there only
    assert which_windows("git", path, pathext) is None
    environ = {"PATH": path, "PATHEXT": pathext}
    assert resolve_command("npx", environ, windows=True) == str(node / "npx.cmd")
    # Not found: left as given, so that starting it fails with the hub's "command not found" error.
    assert resolve_command("no-such-server", environ, windows=True) == "no-such-server"
