"""A sandboxed child (docs/sandbox.md) under the real bubblewrap, through a real hub: it reads and writes only what
it is granted, reaches no network unless granted, and is never started when its sandbox cannot be."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.conformance.test_conformance import run_suite, running
from tests.faults._helpers import (
    GONE_WAIT,
    SHUTDOWN_WAIT,
    Proc,
    descendants,
    fault_child,
    hub_command,
    kill_leftovers,
    wait_all_gone,
    wait_log_event,
)
from tests.support.children import python_child, write_config
from tests.support.mcp_client import connect_host, hub_params
from tests.support.paths import REPO
from tests.support.processes import serve_http_command
from tests.support.system import free_port
from tests.support.waits import wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

SANDBOX_RESULTS = "bench/results/sandbox.json"
FILESYSTEM = REPO / "tests" / "npm" / "node_modules" / ".bin" / "mcp-server-filesystem"
CHECK_LIMIT = 120


def needs_bwrap() -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("bubblewrap sandboxes are Linux's")
    if shutil.which("bwrap") is None:
        message = "bwrap is missing: apt-get install bubblewrap (as .ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def text_of(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


def denials(log: Path) -> list[tuple[str, str, str, str, str]]:
    """The hub's `sandbox_denied` events: (child, kind, path or address, error, source)."""
    events = [json.loads(line) for line in log.read_text().splitlines() if '"sandbox_denied"' in line]
    return [
        (e["child"], e["kind"], e.get("path") or e.get("address"), e["error"], e["source"])
        for e in events
        if e.get("event") == "sandbox_denied"
    ]


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on the host's loopback (a listening socket accepts into its backlog); yields its port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


async def test_a_strict_child_reaches_no_network_and_writes_only_its_grants(tmp_path: Path, listener: int) -> None:
    needs_bwrap()
    granted, outside = tmp_path / "granted", tmp_path / "outside"
    granted.mkdir()
    outside.mkdir()
    servers = {
        "jail": {**python_child("tests.children.escape"), "sandbox": {"write": [str(granted)]}},
        "open": {**python_child("tests.children.escape"), "sandbox": {"network": True}},
        "bare": {**python_child("tests.children.escape"), "sandbox": "none"},
    }
    config = write_config(tmp_path, servers, {"sandbox": "strict"})
    async with connect_host(hub_params(config, tmp_path / "hub.log"), capabilities=False) as client:
        here = {"host": "127.0.0.1", "port": listener}
        assert text_of(await client.call_tool("jail_connect", here)).startswith("denied: ")
        assert text_of(await client.call_tool("open_connect", here)).startswith("ok: connected")
        assert text_of(await client.call_tool("bare_connect", here)).startswith("ok: connected")

        escaped = outside / "escaped.txt"
        answer = text_of(await client.call_tool("jail_write", {"path": str(escaped)}))
        assert answer.startswith("denied: "), answer
        assert not escaped.exists()
        answer = text_of(await client.call_tool("open_write", {"path": str(escaped)}))  # only network is granted
        assert answer.startswith("denied: ") and not escaped.exists(), answer
        in_cwd = REPO / f"escaped-{tmp_path.name}.txt"  # its cwd, shown read-only
        try:
            answer = text_of(await client.call_tool("jail_write", {"path": str(in_cwd)}))
            assert "[Errno 30] Read-only file system" in answer and not in_cwd.exists(), answer
        finally:
            in_cwd.unlink(missing_ok=True)
        kept = granted / "kept.txt"
        answer = text_of(await client.call_tool("jail_write", {"path": str(kept), "text": "inside"}))
        assert answer.startswith("ok: ") and kept.read_text() == "inside", answer

        (outside / "secret.txt").write_text("s3cret")
        answer = text_of(await client.call_tool("jail_read", {"path": str(outside / "secret.txt")}))
        assert answer.startswith("denied: "), answer
        assert text_of(await client.call_tool("bare_read", {"path": str(outside / "secret.txt")})) == "ok: s3cret"
        # Its /tmp is its own: writable, and not the host's.
        scratch = Path("/tmp") / f"hub-sandbox-{tmp_path.name}.txt"
        answer = text_of(await client.call_tool("jail_write", {"path": str(scratch)}))
        assert answer.startswith("ok: ") and not scratch.exists(), answer

        health = await client.call_tool("hub_health", {})
    log = (tmp_path / "hub.log").read_text()
    for attempt in (
        f"connect 127.0.0.1:{listener}: [Errno",
        f"write {escaped}: [Errno 2]",
        f"write {REPO}/escaped-{tmp_path.name}.txt: [Errno 30] Read-only file system",
    ):
        assert f"escape denied: {attempt}" in log, attempt
    assert f"escape denied: read {outside / 'secret.txt'}: [Errno 2] No such file or directory" in log
    assert "bwrap (write 1)" in text_of(health)
    # Each escape is also the hub's own event, of its kind; the unsandboxed child's and the granted network are not.
    logged = denials(tmp_path / "hub.log")
    (network,) = [d for d in logged if d[1] == "network"]
    assert network[:3] == ("jail", "network", f"127.0.0.1:{listener}") and network[3] in ("ECONNREFUSED", "ENETUNREACH")
    assert sorted(d for d in logged if d[1] != "network") == sorted(
        [
            ("jail", "write", str(escaped), "ENOENT", "stderr"),  # its directory is not there for the child
            ("open", "write", str(escaped), "ENOENT", "stderr"),
            ("jail", "write", str(in_cwd), "EROFS", "stderr"),
            ("jail", "read", str(outside / "secret.txt"), "ENOENT", "stderr"),
        ]
    )


async def test_server_filesystem_given_root_sees_only_its_grant(tmp_path: Path) -> None:
    """@modelcontextprotocol/server-filesystem given `/`: a file under the (fake) home is not there for it; the one
    granted directory can be read and written."""
    needs_bwrap()
    if not FILESYSTEM.exists():
        pytest.skip(f"{FILESYSTEM} is missing: run `npm ci --prefix tests/npm` (as .ci/run does)")
    home, granted = tmp_path / "home", tmp_path / "granted"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    granted.mkdir()
    (granted / "notes.txt").write_text("hello from the grant")
    servers = {"fs": {"command": str(FILESYSTEM), "args": ["/"], "sandbox": {"write": ["~/../granted"]}}}
    config = write_config(tmp_path, servers)
    params = hub_params(config, tmp_path / "hub.log", env={**os.environ, "HOME": str(home)})
    async with connect_host(params, capabilities=False) as client:
        planted = await client.call_tool("fs_read_text_file", {"path": str(home / ".ssh" / "id_ed25519")})
        assert planted.is_error and "PRIVATE KEY" not in text_of(planted), text_of(planted)
        read = await client.call_tool("fs_read_text_file", {"path": str(granted / "notes.txt")})
        assert text_of(read) == "hello from the grant"
        wrote = await client.call_tool("fs_write_file", {"path": str(granted / "new.txt"), "content": "written"})
        assert not wrote.is_error, text_of(wrote)
        assert (granted / "new.txt").read_text() == "written"
        # The home it sees is an empty one of its own (here under its private /tmp): what it writes there is gone.
        await client.call_tool("fs_write_file", {"path": str(home / "dropped.txt"), "content": "x"})
        assert not (home / "dropped.txt").exists()
    # The refused read is the hub's event, from the server's error answer (ENOENT, the key being there on the host).
    key = str(home / ".ssh" / "id_ed25519")
    assert denials(tmp_path / "hub.log") == [("fs", "read", key, "ENOENT", "answer")]


def hub_check(config: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub", "check", "-c", str(config)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=CHECK_LIMIT,
        check=False,
    )


def marker_child(marker: Path, sandbox: Any) -> dict[str, Any]:
    """A child whose first act is to leave a marker on the host (its directory is granted): started or not."""
    code = f"open({str(marker)!r}, 'w').close(); import time; time.sleep(60)"
    return {"command": sys.executable, "args": ["-c", code], "sandbox": sandbox, "connect_timeout": 5}


# A bwrap that cannot make namespaces, as on a kernel with unprivileged user namespaces turned off.
NO_NAMESPACES = """#!/bin/sh
echo "bwrap: No permissions to create new namespace, likely because the kernel does not allow" \
  "non-privileged user namespaces." >&2
exit 1
"""


@pytest.mark.parametrize(
    ("bwrap", "cause", "fix"),
    [
        (None, "bubblewrap is not installed", "apt-get install bubblewrap"),
        (NO_NAMESPACES, "No permissions to create new namespace", "enable unprivileged user namespaces"),
    ],
    ids=["no bwrap", "no user namespaces"],
)
def test_a_sandbox_that_cannot_start_fails_the_child_which_is_never_started(
    tmp_path: Path, bwrap: str | None, cause: str, fix: str
) -> None:
    """`hub check` names the cause and the fix, and the child did not run at all; the same child without a sandbox
    does run (the marker is how the test would know)."""
    needs_bwrap()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if bwrap is not None:
        (bin_dir / "bwrap").write_text(bwrap)
        (bin_dir / "bwrap").chmod(0o755)
    marker = tmp_path / "started"
    config = write_config(tmp_path, {"boxed": marker_child(marker, {"write": [str(tmp_path)]})})
    done = hub_check(config, {**os.environ, "PATH": str(bin_dir)})
    assert done.returncode == 1, done.stdout + done.stderr
    for words in (cause, fix, "sandbox: none"):
        assert words in done.stdout, done.stdout
    assert not marker.exists()
    control = write_config(tmp_path, {"boxed": marker_child(marker, "none")})
    hub_check(control, {**os.environ, "PATH": str(bin_dir)})
    assert marker.exists()


def test_hub_check_shows_each_childs_sandbox(tmp_path: Path) -> None:
    needs_bwrap()
    servers = {
        "strict": python_child("tests.children.escape"),
        "net": {**python_child("tests.children.escape"), "sandbox": {"network": True, "read": [str(tmp_path)]}},
        "bare": {**python_child("tests.children.escape"), "sandbox": "none"},
    }
    done = hub_check(write_config(tmp_path, servers, {"sandbox": "strict"}), dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()}
    assert "SANDBOX" in rows["SERVER"]
    assert "bwrap strict" in rows["strict"]
    assert "bwrap (network, read 1)" in rows["net"]
    assert rows["bare"].split()[-1] == "none"


def test_a_mistyped_sandbox_word_is_refused_naming_the_line_the_words_and_the_likely_one(tmp_path: Path) -> None:
    """`sandbox: strcit`: `hub check` fails before anything starts, with the file and line, the accepted words and
    the one meant."""
    config = tmp_path / "servers.yaml"
    config.write_text("servers:\n  time:\n    command: mcp-server-time\n    sandbox: strcit\n")
    done = hub_check(config, dict(os.environ))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "servers.yaml:4: servers.time.sandbox: sandbox 'strcit' is not a sandbox" in done.stderr
    assert "did you mean 'strict'? write strict, none, or a mapping" in done.stderr


def test_the_default_git_server_under_strict_serves_the_directory_the_hub_runs_in(tmp_path: Path) -> None:
    """servers.yaml's git server (`--repository .`, no `cwd:`) under `hub: sandbox: strict`, with the hub run in a
    repository outside the system paths: the child runs where the hub runs and sees it read-only, as it would a
    `cwd:` (before, bwrap started it in its empty home and it found no repository)."""
    needs_bwrap()
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=CHECK_LIMIT)
    servers = {"git": {"command": "mcp-server-git", "args": ["--repository", "."]}}
    config = write_config(tmp_path, servers, {"sandbox": "strict"})
    done = subprocess.run(
        [sys.executable, "-m", "hub", "check", "-c", str(config)],
        cwd=repo,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=CHECK_LIMIT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bwrap strict" in done.stdout


def docker_works() -> str:
    """Why container tests cannot run here ('' when they can)."""
    if shutil.which("docker") is None:
        return "no docker client"
    done = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30, check=False)
    return "" if done.returncode == 0 else "docker info failed: " + (done.stderr.strip().splitlines() or ["?"])[-1]


async def test_a_container_child_has_no_network_and_is_removed(tmp_path: Path, listener: int) -> None:
    reason = docker_works()
    if reason:
        pytest.skip(reason)
    image = os.environ.get("HUB_SANDBOX_IMAGE", "python:3.12-alpine")
    code = (
        "import json,sys\n"
        "for l in sys.stdin:\n"
        " m=json.loads(l)\n"
        " if 'id' in m: print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':"
        "{'protocolVersion':'2025-11-25','capabilities':{'tools':{}},'serverInfo':{'name':'c','version':'1'}}"
        " if m['method']=='initialize' else {'tools':[]}}),flush=True)\n"
    )
    servers = {"boxed": {"command": "python", "args": ["-c", code], "sandbox": {"container": image}}}
    config = write_config(tmp_path, servers)
    names = ["docker", "ps", "-a", "--format", "{{.Names}}"]
    async with connect_host(hub_params(config, tmp_path / "hub.log"), capabilities=False) as client:
        await client.list_tools()
        running = await anyio.run_process(names)
        assert any(name.startswith("hub-boxed-") for name in running.stdout.decode().split())
    after = await anyio.run_process(names)
    assert not any(name.startswith("hub-boxed-") for name in after.stdout.decode().split())


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
async def test_a_sandboxed_child_and_its_detached_grandchild_end_with_the_hub(tmp_path: Path, how: str) -> None:
    """The process hygiene of today holds inside bwrap: a SIGKILLed hub leaves nothing (--die-with-parent, the
    sandbox's own pid namespace), and a SIGTERMed one stops within its bounds."""
    needs_bwrap()
    pid_file = tmp_path / "spawner.pids"
    spawner = fault_child("spawner", "--pid-file", str(pid_file), "--detach", sandbox={"write": [str(tmp_path)]})
    config = write_config(tmp_path, {"spawner": spawner, "stuck": fault_child("hang", sandbox="strict")})
    log_file = tmp_path / "hub.log"
    process = subprocess.Popen(hub_command(config, log_file), cwd=REPO, stdin=subprocess.PIPE)  # noqa: ASYNC220
    tree: dict[int, Proc] = {}
    try:
        for name in ("spawner", "stuck"):
            await wait_log_event(log_file, "child_ready", child=name)
        await wait_for_file(pid_file)
        tree = descendants(process.pid)
        commands = " / ".join(p.cmdline for p in tree.values())
        assert "bwrap" in commands and "sleep 300" in commands, commands
        process.send_signal(getattr(signal, how))
        await anyio.to_thread.run_sync(lambda: process.wait(timeout=SHUTDOWN_WAIT))
        left = await wait_all_gone(tree.values(), GONE_WAIT)
        assert not left, "; ".join(f"{p.pid}: {p.cmdline}" for p in left)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=SHUTDOWN_WAIT)
        kill_leftovers(tree.values())
        if process.stdin:
            process.stdin.close()


def test_conformance_passes_through_the_hub_with_the_fixture_child_sandboxed(tmp_path: Path) -> None:
    """The official suite against `hub serve --http`, its fixture child under `sandbox: strict`."""
    needs_bwrap()
    child = {
        "command": sys.executable,
        "args": ["-m", "tests.conformance.fixture_server"],
        "cwd": str(REPO),
        "prefix": "",
        "sandbox": "strict",
    }
    config = write_config(tmp_path, {"conformance": child}, hub={"health_tool": False})
    port = free_port()
    with running(serve_http_command(config, port, tmp_path / "hub.log"), port, tmp_path / "hub.err"):
        output = run_suite(f"http://127.0.0.1:{port}/mcp", tmp_path / "out")
    assert " 0 failed" in output.splitlines()[-1]


def test_the_sandbox_bench_reports_a_ratio_in_one_run(tmp_path: Path) -> None:
    """The command docs/sandbox.md gives for its figure, with `--quick` for its rounds and a file of the test's for
    its `--out`: the smoke of the benchmark (the figure wants more rounds)."""
    needs_bwrap()
    (command,) = bench_commands()
    argv = shlex.split(command)
    assert argv[:3] == ["python", "-m", "bench.sandbox"] and argv[argv.index("--out") + 1] == SANDBOX_RESULTS
    out = tmp_path / "sandbox.json"
    argv[argv.index("--out") + 1] = str(out)
    argv[argv.index("--rounds") : argv.index("--rounds") + 2] = ["--quick"]
    done = subprocess.run(
        [sys.executable, *argv[1:]], cwd=REPO, capture_output=True, text=True, timeout=CHECK_LIMIT, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert set(report["first_call_ms"]) == {"none", "strict"} and report["ratio_strict_to_none"] > 0
    assert report["rounds"] == 1 and report["machine"]["hub"]["git_commit"]
    assert json.loads(out.read_text()) == report


def bench_commands() -> list[str]:
    """The `python -m bench.sandbox` lines of docs/sandbox.md's sh blocks."""
    lines = (REPO / "docs" / "sandbox.md").read_text().splitlines()
    return [line for line in lines if line.startswith("python -m bench.sandbox")]


FAKE_DOCKER = """#!/bin/sh
# A stand-in for the docker client: notes its command line, and for `run` runs the command after the image here.
echo "$@" >> "{log}"
[ "$1" = run ] || exit 0
shift
while [ $# -gt 0 ]; do
  case "$1" in
    -i|--rm|--read-only) shift ;;
    -w) cd "$2"; shift 2 ;;
    --name|--tmpfs|--network|--mount|-e) shift 2 ;;
    *) break ;;
  esac
done
shift
exec "$@"
"""


async def test_a_container_child_is_started_by_name_and_removed_when_it_stops(tmp_path: Path) -> None:
    """Without a daemon, the container's life as the hub drives it: `run -i --rm --read-only --network none` with a
    name, the configured env by name only, and `rm -f` of that name once the child is stopped."""
    if os.name != "posix":
        pytest.skip("the stand-in client is a shell script")
    bin_dir, log = tmp_path / "bin", tmp_path / "docker.log"
    bin_dir.mkdir()
    fake = bin_dir / "docker"
    fake.write_text(FAKE_DOCKER.format(log=log))
    fake.chmod(0o755)
    child = {
        "command": sys.executable,
        "args": ["-m", "tests.children.escape"],
        "cwd": str(REPO),
        "env": {"ESCAPE_TOKEN": "t0k3n-value"},
        "sandbox": {"container": "hub-test/escape:1", "read": [str(tmp_path)]},
    }
    config = write_config(tmp_path, {"boxed": child})
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    async with connect_host(hub_params(config, tmp_path / "hub.log", env=env), capabilities=False) as client:
        assert {t.name for t in (await client.list_tools()).tools} >= {"boxed_connect", "boxed_write"}
        health = text_of(await client.call_tool("hub_health", {}))
        assert "container hub-test/escape:1 (read 1)" in health
    run, *rest = log.read_text().splitlines()
    words = run.split()
    assert words[:2] == ["run", "-i"] and "--rm" in words and "--read-only" in words
    assert words[words.index("--network") + 1] == "none"
    assert words[words.index("-e") + 1] == "ESCAPE_TOKEN" and "t0k3n-value" not in run
    assert f"type=bind,source={tmp_path},target={tmp_path},readonly" in words
    name = words[words.index("--name") + 1]
    assert name.startswith("hub-boxed-") and rest == [f"rm -f {name}"]
