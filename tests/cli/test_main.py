"""`hub`'s entry point: a closed stdout is recognised, bare or inside a task group's ExceptionGroup."""

from __future__ import annotations

from hub.cli.main import _broken_pipe


def test_a_broken_pipe_is_recognised_alone_or_in_groups() -> None:
    assert _broken_pipe(BrokenPipeError())
    assert _broken_pipe(ExceptionGroup("tg", [BrokenPipeError(), ExceptionGroup("inner", [BrokenPipeError()])]))
    assert not _broken_pipe(ExceptionGroup("tg", [BrokenPipeError(), ValueError()]))
    assert not _broken_pipe(OSError())
    assert not _broken_pipe(KeyboardInterrupt())
