"""The sandbox's command lines as pure logic: bubblewrap's options, the container's, the macOS profile, what the
command's install directory is, and the refusals that name cause and fix."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from hub.platform import sandbox
from hub.platform.processes import process_spec
from hub.platform.sandbox import Grants, SandboxUnavailable, bwrap_args, container_argv, describe, macos_profile


def pairs(args: list[str], option: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == option]


def test_strict_bwrap_shares_nothing_and_shows_the_system_read_only() -> None:
    args = bwrap_args(["/usr/bin/true"], None, {"HOME": "/home/ann"}, Grants())
    assert args[:3] == ["--die-with-parent", "--new-session", "--unshare-all"]
    assert "--share-net" not in args
    assert "/usr" in pairs(args, "--ro-bind") and "--bind" not in args
    assert pairs(args, "--tmpfs") == ["/tmp"] and pairs(args, "--dir") == ["/home/ann"]
    assert args[-3:] == ["--remount-ro", "/", "--"]


def test_grants_bind_their_paths_and_network_shares_it(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "r").mkdir()
    grants = Grants(True, (str(tmp_path / "w"),), (str(tmp_path / "r"), str(tmp_path / "w" / "inside")))
    args = bwrap_args(["/usr/bin/true"], str(tmp_path / "r"), {}, grants)
    assert "--share-net" in args
    assert pairs(args, "--bind") == [str(tmp_path / "w")]
    assert str(tmp_path / "r") in pairs(args, "--ro-bind")
    assert str(tmp_path / "w" / "inside") not in pairs(args, "--ro-bind")  # writable already
    assert pairs(args, "--chdir") == [str(tmp_path / "r")]


def test_the_command_install_directory_is_readable_but_never_the_whole_home(tmp_path: Path) -> None:
    venv = tmp_path / "proj" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {tmp_path / 'py' / 'bin'}\n")
    (venv / "bin" / "server").write_text("#!/bin/sh\n")
    modules = tmp_path / "app" / "node_modules"
    (modules / ".bin").mkdir(parents=True)
    (modules / ".bin" / "tool").write_text("#!/usr/bin/env sh\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "mine").write_text("")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    assert sandbox.install_roots([str(venv / "bin" / "server")], env) == [str(venv), str(tmp_path / "py")]
    assert sandbox.install_roots([str(modules / ".bin" / "tool")], env) == [str(modules)]
    assert sandbox.install_roots([str(tmp_path / "bin" / "mine")], env) == [str(tmp_path / "bin")]


def test_a_container_gets_no_network_a_read_only_root_the_mounts_and_a_name_to_remove() -> None:
    grants = Grants(write=("/data",), read=("/docs",), container="node:22")
    wrapped = container_argv("my server", ["npx", "srv"], "/data", grants, ["TOKEN"], "/usr/bin/docker")
    argv = list(wrapped.argv)
    assert argv[:3] == ["/usr/bin/docker", "run", "-i"] and "--rm" in argv and "--read-only" in argv
    assert pairs(argv, "--network") == ["none"]
    assert pairs(argv, "--mount") == [
        "type=bind,source=/docs,target=/docs,readonly",
        "type=bind,source=/data,target=/data",
    ]
    assert pairs(argv, "-e") == ["TOKEN"] and pairs(argv, "-w") == ["/data"]
    assert argv[-3:] == ["node:22", "npx", "srv"]
    name = pairs(argv, "--name")[0]
    assert name.startswith("hub-my-server-") and wrapped.cleanup == ("/usr/bin/docker", "rm", "-f", name)
    opened = container_argv("s", ["x"], None, Grants(network=True, container="i"), [], "podman")
    assert "--network" not in opened.argv


def test_the_macos_profile_denies_by_default_and_allows_the_grants() -> None:
    strict = macos_profile(Grants(), "/private/tmp/hub-x")
    assert strict.startswith("(version 1)\n(deny default)\n") and "network" not in strict
    assert '(allow file-write* (subpath "/private/tmp/hub-x")' in strict
    granted = macos_profile(Grants(True, ('/Users/ann/"notes"',), ("/srv",)), "/t", ["/opt/tool"])
    assert "(allow network*)" in granted
    assert '(subpath "/Users/ann/\\"notes\\"")' in granted.splitlines()[-2]
    assert '(subpath "/srv")' in granted and '(subpath "/opt/tool")' in granted


def test_a_system_without_a_sandbox_refuses_the_child() -> None:
    with pytest.raises(SandboxUnavailable, match="sandbox: none to run it unconfined"):
        sandbox.wrap("s", ["x"], None, {}, Grants(), platform="win32")


def test_a_missing_grant_or_tool_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SandboxUnavailable, match="does not exist: create it"):
        sandbox.wrap("s", ["x"], None, {}, Grants(write=(str(tmp_path / "nope"),)), platform="linux")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="bubblewrap is not installed"):
        sandbox.wrap("s", ["x"], None, {}, Grants(), platform="linux")
    with pytest.raises(SandboxUnavailable, match="docker or podman is not installed"):
        sandbox.wrap("s", ["x"], None, {}, Grants(container="i"), platform="linux")


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("bwrap") is None, reason="needs bwrap")
def test_a_sandboxed_spec_runs_bwrap_with_the_resolved_command() -> None:
    spec = process_spec("true", [], {}, [], None, {"PATH": "/usr/bin:/bin"}, Grants(), "s")
    assert (Path(spec.argv[0]).name == "bwrap" and spec.argv[-1] == "/usr/bin/true") or spec.argv[-1] == "true"
    assert spec.env["TMPDIR"] == "/tmp"


def test_describe_says_what_a_person_needs() -> None:
    assert describe(None) == "none"
    assert describe(Grants(container="node:22")) == "container node:22"
    assert describe(Grants(True, ("/a",), ())).endswith("(network, write 1)")


def test_neither_the_root_nor_the_home_is_shown_for_a_command_or_cwd_there(tmp_path: Path) -> None:
    (tmp_path / "tool").write_text("")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin"}
    assert sandbox.install_roots([str(tmp_path / "tool")], env) == []
    args = bwrap_args([str(tmp_path / "tool")], str(tmp_path), env, Grants())
    assert str(tmp_path) not in pairs(args, "--ro-bind") and pairs(args, "--chdir") == [str(tmp_path)]
    assert "/" not in pairs(args, "--ro-bind") and "/" not in pairs(bwrap_args(["/x"], "/", env, Grants()), "--ro-bind")
