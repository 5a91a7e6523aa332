"""The differential suite's markers, and its matrix printed at the end of the run (tests/README.md)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests.differential.harness import ASPECTS

HERE = __name__.rsplit(".", 1)[0]
# (server, front, era) -> aspect -> outcome; filled as reports come in, printed by pytest_terminal_summary.
_MATRIX: dict[tuple[str, str, str], dict[str, str]] = defaultdict(dict)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.module is not None and item.module.__name__.startswith(HERE + ".test_"):  # type: ignore[attr-defined]
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.differential)
            callspec = getattr(item, "callspec", None)
            spec = getattr(item.module, "SPEC", None)  # type: ignore[attr-defined]
            if callspec is not None and spec is not None:
                cell = (spec.name, callspec.params["front"], callspec.params["era"], callspec.params["aspect"])
                item.user_properties.append(("differential", cell))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    cell = dict(report.user_properties).get("differential")
    if cell is None:
        return
    server, front, era, aspect = cell
    row = _MATRIX[server, front, era]
    if report.failed and "XPASS" in str(report.longrepr):
        row[aspect] = "XPASS"  # a known gap is fixed: remove its xfail
    elif report.failed:
        row[aspect] = "differs" if report.when == "call" else "error"
    elif hasattr(report, "wasxfail"):
        row[aspect] = "xfail"
    elif report.skipped:
        row.setdefault(aspect, "skip")
    elif report.when == "call":
        row.setdefault(aspect, "equal")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _MATRIX:
        return
    aspects = [a for a in ASPECTS if any(a in row for row in _MATRIX.values())]
    head = ["server", "front", "era", *aspects]
    rows = [[*key, *(row.get(a, "-") for a in aspects)] for key, row in sorted(_MATRIX.items())]
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    terminalreporter.section("differential matrix: direct vs through the hub")
    for line in [head, *rows]:
        terminalreporter.write_line("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    terminalreporter.write_line("equal: same answers modulo the documented renames; differs: a regression;")
    terminalreporter.write_line(
        "xfail: a documented difference (the server's `gaps`: an era the server does not speak, bridged by the hub);"
    )
    terminalreporter.write_line("it fails as long as it differs, and turns XPASS (a failure) once it no longer does.")
