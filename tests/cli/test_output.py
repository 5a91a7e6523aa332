"""The progress line of the one-shot commands (hub.cli.output.StartProgress): on a terminal only."""

from __future__ import annotations

import io
from dataclasses import dataclass

from hub.cli.output import StartProgress


@dataclass
class Named:
    name: str


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_line_names_the_servers_still_starting_and_is_erased_at_the_end() -> None:
    err = Terminal()
    progress = StartProgress(err)
    progress.starting([Named("time"), Named("hung")])
    progress.starting([Named("hung")])
    progress.done()
    first, second = "hub: starting time, hung ...", "hub: starting hung ..."
    assert err.getvalue() == "\r" + first + "\r" + second.ljust(len(first)) + "\r" + " " * len(second) + "\r"


def test_nothing_is_written_when_stderr_is_not_a_terminal() -> None:
    err = io.StringIO()
    progress = StartProgress(err)
    progress.starting([Named("time")])
    progress.done()
    assert err.getvalue() == ""
