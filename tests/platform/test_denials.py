"""What a sandbox shows of the host (`Exposure`, built with bubblewrap's command line), the one judgement of a path
against it (`hidden`, `unwritable`), and a sandboxed child's error texts read as denials (hub.platform.denials):
each escape the integration tests try, in the words Python and Node use, and the near misses that are not denials."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.platform.denials import Denial, address, denial
from hub.platform.sandbox import Exposure, Grants, bwrap_exposure, container_argv, hidden, unwritable


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host: a home with a key, a write grant, a directory outside every grant, a read grant."""
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / ".ssh" / "id_ed25519").write_text("key")
    for name in ("granted", "outside", "docs"):
        (tmp_path / name).mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("s3cret")
    (tmp_path / "docs" / "a.md").write_text("a")
    return tmp_path


def strict(host: Path, network: bool = False) -> Exposure:
    grants = Grants(network, (str(host / "granted"),), (str(host / "docs"),))
    return bwrap_exposure(["/usr/bin/true"], None, {"HOME": str(host / "home")}, grants)


def test_bwraps_exposure_is_the_system_the_grants_and_the_install_directory_not_the_home_nor_tmp(host: Path) -> None:
    shown = strict(host)
    assert "/usr" in shown.readable and str(host / "docs") in shown.readable
    assert shown.writable == (str(host / "granted"),) and str(host / "granted") in shown.readable
    assert shown.private == ("/tmp", "/proc", "/dev") and not shown.network
    assert not any(p in shown.readable for p in ("/", "/tmp", str(host), str(host / "home")))


def test_hidden_is_a_host_path_outside_what_the_sandbox_shows(host: Path) -> None:
    shown = strict(host)
    assert hidden(str(host / "home" / ".ssh" / "id_ed25519"), shown)
    assert hidden(str(host / "outside"), shown)
    assert not hidden(str(host / "docs" / "a.md"), shown)  # granted: missing inside means missing
    assert not hidden(str(host / "outside" / "never-there"), shown)  # the host lacks it too
    assert not hidden("/usr/bin/env", shown)
    (host / "docs" / "out").symlink_to(host / "outside")
    assert hidden(str(host / "docs" / "out"), shown)  # a link that leads out


def test_unwritable_is_outside_the_write_grants_and_the_sandboxs_own_places(host: Path) -> None:
    shown = strict(host)
    assert unwritable(str(host / "docs" / "a.md"), shown) and unwritable("/usr/x", shown)
    assert not unwritable(str(host / "granted" / "new.txt"), shown)
    assert not unwritable("/tmp/scratch.txt", shown)  # its private /tmp: a failure there is not the sandbox's


def test_each_escape_the_tests_try_is_a_denial_of_its_kind(host: Path) -> None:
    shown = strict(host)
    secret, escaped = host / "outside" / "secret.txt", host / "outside" / "escaped.txt"
    key, cwd_file = host / "home" / ".ssh" / "id_ed25519", host / "docs" / "escaped.txt"
    cases = {
        # tests.children.escape's stderr lines
        "escape denied: connect 127.0.0.1:4321: [Errno 111] Connection refused": Denial(
            "network", "127.0.0.1:4321", "ECONNREFUSED"
        ),
        f"escape denied: read {secret}: [Errno 2] No such file or directory: '{secret}'": Denial(
            "read", str(secret), "ENOENT"
        ),
        f"escape denied: write {escaped}: [Errno 2] No such file or directory: '{escaped}'": Denial(
            "write", str(escaped), "ENOENT"
        ),
        f"escape denied: write {cwd_file}: [Errno 30] Read-only file system: '{cwd_file}'": Denial(
            "write", str(cwd_file), "EROFS"
        ),
        # server-filesystem's and Node's error answers
        f"Error: Parent directory does not exist: {key.parent}": Denial("read", str(key.parent), "ENOENT"),
        f"Error: ENOENT: no such file or directory, open '{key}'": Denial("read", str(key), "ENOENT"),
        f"Error: EROFS: read-only file system, open '{cwd_file}'": Denial("write", str(cwd_file), "EROFS"),
        f"Error: EACCES: permission denied, mkdir '{host / 'docs' / 'new'}'": Denial(
            "write", str(host / "docs" / "new"), "EACCES"
        ),
        "connect ECONNREFUSED 127.0.0.1:5432": Denial("network", "127.0.0.1:5432", "ECONNREFUSED"),
        "fetch failed: connect ENETUNREACH 140.82.112.3:443": Denial("network", "140.82.112.3:443", "ENETUNREACH"),
        "getaddrinfo EAI_AGAIN registry.npmjs.org": Denial("network", "registry.npmjs.org", "EAI_AGAIN"),
        "OSError: [Errno 101] Network is unreachable": Denial("network", None, "ENETUNREACH"),
    }
    for text, expected in cases.items():
        assert denial(text, shown) == expected, text


def test_what_the_host_would_refuse_too_is_no_denial(host: Path) -> None:
    shown = strict(host)
    granted = host / "granted" / "kept.txt"
    for text in (
        "starting server on stdio",
        f"[Errno 2] No such file or directory: '{host / 'outside' / 'never-there'}'",  # the host lacks it too
        f"[Errno 2] No such file or directory: '{host / 'docs' / 'gone.md'}'",  # inside a grant
        f"[Errno 13] Permission denied: '{granted}'",  # a write grant: the host's permissions
        "[Errno 2] No such file or directory: 'relative.txt'",  # no absolute path to judge
        "[Errno 30] Read-only file system: '/tmp/x'",  # its own /tmp
    ):
        assert denial(text, shown) is None, text
    assert denial("connect ECONNREFUSED 127.0.0.1:5432", strict(host, network=True)) is None


def test_a_file_named_like_a_verb_does_not_make_a_read_a_write(host: Path) -> None:
    (host / "outside" / "write-me.txt").write_text("")
    path = host / "outside" / "write-me.txt"
    assert denial(f"[Errno 2] No such file or directory: '{path}'", strict(host)) == Denial("read", str(path), "ENOENT")


def test_an_address_never_carries_a_urls_password() -> None:
    assert address("request to https://ann:hunter2@api.example.com:8443/v1 failed, ECONNREFUSED") == (
        "api.example.com:8443"
    )
    assert address("connect ECONNREFUSED [::1]:80") == "[::1]:80"
    assert address("Connection refused") is None


def test_a_containers_exposure_is_its_grants_only_the_image_is_not_the_host(host: Path) -> None:
    grants = Grants(write=(str(host / "granted"),), read=(str(host / "docs"),), container="node:22")
    shown = container_argv("c", ["npx", "srv"], None, grants, [], "/usr/bin/docker").exposure
    assert shown == Exposure((str(host / "docs"), str(host / "granted")), (str(host / "granted"),), ("/tmp",), False)
    assert hidden("/usr/bin/env", shown)  # the host's, not the image's
    key = host / "home" / ".ssh" / "id_ed25519"
    assert denial(f"ENOENT: no such file or directory, open '{key}'", shown) == Denial("read", str(key), "ENOENT")
