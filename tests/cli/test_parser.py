"""The command line as a whole: `hub cost` (not `hub tokens`, which read as `hub token`), a parser that loads
nothing heavy, and hub/cli/ modules that import one another in one direction only."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from hub.cli.parser import build_parser
from tests.support.paths import REPO

CLI = REPO / "hub" / "cli"


def test_the_listing_cost_is_hub_cost_and_hub_tokens_is_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["cost", "--json", "--as", "alice", "--group", "oncall", "--wait", "3"])
    assert (args.command, args.json, args.identity, args.group, args.wait) == ("cost", True, "alice", ["oncall"], 3.0)
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["tokens"])
    assert exited.value.code == 2
    assert "invalid choice: 'tokens'" in capsys.readouterr().err
    assert build_parser().parse_args(["token", "list"]).action == "list"  # bearer tokens keep their command


def test_parsing_loads_no_hub_relay_or_schema() -> None:
    """`hub --help`, a usage error and the commands that start no hub answer without loading the heavy parts."""
    probe = (
        "import sys; import hub.cli.main; hub.cli.main.build_parser().parse_args(['logs']); "
        "print(sorted(m for m in sys.modules if m in ('hub.app', 'hub.config', 'hub.relay', 'pydantic', 'mcp')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == "[]"


def _imports(path: Path) -> set[str]:
    """Every hub.cli module `path` imports, at any level (functions and TYPE_CHECKING included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("hub.cli.") and (CLI / f"{name[8:]}.py").exists()}


def test_the_cli_modules_import_one_another_without_a_cycle() -> None:
    graph = {f"hub.cli.{p.stem}": _imports(p) for p in CLI.glob("*.py") if p.stem != "__init__"}
    done: set[str] = set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join((*path, module))}"
        if module in done:
            return
        for imported in graph[module]:
            visit(imported, (*path, module))
        done.add(module)

    for module in graph:
        visit(module, ())
    assert not any(name in graph for name in _imports(REPO / "hub" / "cli" / "__init__.py"))


@pytest.mark.parametrize(
    "argv",
    [
        ["-c", "x.yaml", "--log-level", "debug", "list"],
        ["list", "-c", "x.yaml", "--log-level", "debug"],
        ["--log-level", "info", "list", "-c", "x.yaml", "--log-level", "debug"],  # after the command wins
    ],
)
def test_the_options_every_command_takes_go_before_or_after_it(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert (args.command, args.config, args.log_level, args.log_format) == ("list", "x.yaml", "debug", None)


def test_global_options_reach_the_commands_that_start_no_hub() -> None:
    logs = build_parser().parse_args(["--log-file", "hub.log", "-c", "x.yaml", "logs"])
    assert (logs.log_file, logs.config) == ("hub.log", "x.yaml")
    connect = build_parser().parse_args(["connect", "http://127.0.0.1:8000/mcp"])
    assert (connect.log_format, connect.log_level, connect.token_env) == (None, None, None)


def test_check_and_call_take_json_and_reload_takes_a_token_source() -> None:
    assert build_parser().parse_args(["check", "--json"]).json
    call = build_parser().parse_args(["call", "time_get_current_time", "--json"])
    assert (call.json, call.arguments) == (True, "{}")
    reload = build_parser().parse_args(["reload", "--url", "http://h:8000", "--keyring", "h"])
    assert (reload.keyring, reload.keyring_user, reload.token_env) == ("h", "token", None)


def test_install_takes_the_token_source_options_of_hub_connect_one_at_a_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    install = build_parser().parse_args(["install", "cursor", "--url", "http://h/mcp", "--keyring", "h"])
    assert (install.keyring, install.keyring_user, install.token_env) == ("h", "token", None)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["install", "cursor", "--url", "http://h/mcp", "--keyring", "h", "--token-env", "T"])
    assert "not allowed with argument" in capsys.readouterr().err
