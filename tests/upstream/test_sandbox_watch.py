"""A sandboxed child's watch (hub.upstream.denials): its error answers and stderr lines become `sandbox_denied`
events naming the kind and the path, never the text; results that are not errors are not read."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from hub.platform.sandbox import Exposure
from hub.protocol.jsonrpc import Response
from hub.upstream.denials import DENIALS_PER_SECOND, SandboxWatch


def test_error_answers_and_stderr_lines_are_read_and_logged_without_their_text(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    missing = f"ENOENT: no such file or directory, open '{secret}' (token=abc123)"
    watch = SandboxWatch("fs", Exposure(("/usr",)))
    with capture_logs() as logs:
        watch.answer(Response(1, {"content": [{"type": "text", "text": missing}], "isError": True}, None))
        watch.answer(Response(2, None, {"code": -32603, "message": missing}))
        watch.answer(Response(3, {"content": [{"type": "text", "text": missing}]}, None))  # not an error: not read
        watch.stderr(f"[Errno 30] Read-only file system: '{secret}'")
        watch.stderr("listening on stdio")
    assert [(e["event"], e["kind"], e["path"], e["error"], e["source"]) for e in logs] == [
        ("sandbox_denied", "read", str(secret), "ENOENT", "answer"),
        ("sandbox_denied", "read", str(secret), "ENOENT", "answer"),
        ("sandbox_denied", "write", str(secret), "EROFS", "stderr"),
    ]
    assert all(e["child"] == "fs" and "abc123" not in str(e) for e in logs)


def test_a_child_that_keeps_failing_cannot_flood_the_log() -> None:
    watch = SandboxWatch("net", Exposure(("/usr",)))
    with capture_logs() as logs:
        for _ in range(DENIALS_PER_SECOND * 3):
            watch.stderr("connect ECONNREFUSED 10.0.0.1:80")
    assert 0 < len(logs) <= DENIALS_PER_SECOND * 2  # at most a second's worth per second (the loop may cross one)
    assert logs[0]["address"] == "10.0.0.1:80" and logs[0]["kind"] == "network"
