"""The ops bundle (examples/ops) against a real PostgreSQL server: its README's commands as a new teammate runs
them, a query answered through `postgres_query`, every write refused with the database unchanged, the team's hub
over HTTP, and the Icinga entry once its command is configured.

The database is a throwaway cluster for the module: `initdb` into a temporary directory and `pg_ctl start` on a free
loopback port, with its socket in that directory (as the `postgres` user when the tests run as root, as CI does),
stopped and removed at the end. PostgreSQL comes from Debian's `postgresql` package and DBHub from `npm ci` in
examples/ops; .ci/run installs both. Without them the tests are skipped, except in CI (`CI` set), where they fail.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from tests.integration.test_docs import commands
from tests.integration.test_team import as_person, create_token
from tests.support.mcp_client import Host, connect_hub, hub_params, wait_for_tools
from tests.support.paths import REPO
from tests.support.processes import serve_hub_http
from tests.support.system import free_port
from tests.support.waits import WAIT

BUNDLE = REPO / "examples" / "ops"
README = BUNDLE / "README.md"
DBHUB = BUNDLE / "node_modules" / "@bytebase" / "dbhub" / "dist" / "index.js"
# The URI the README's servers.env step writes; the test puts the throwaway server's in its place.
README_URI = "postgresql://ops_ro:choose-a-password@db.internal:5432/ops?sslmode=require"
README_DIRECTORY = "/srv/ops"
OWNER_PASSWORD = "owner-pw-7f3a"
# Every PostgreSQL command (initdb, pg_ctl, psql) is bounded by this; pg_ctl's own waits are shorter.
PG_LIMIT = 60
# psql reads the statements on stdin, stops at the first error, and prints bare rows.
PSQL_SCRIPT = ["-XAtq", "-v", "ON_ERROR_STOP=1", "-f", "-"]
SEED = """
CREATE TABLE alerts (id serial PRIMARY KEY, host text NOT NULL, service text NOT NULL, state text NOT NULL);
INSERT INTO alerts (host, service, state) VALUES ('db1', 'disk', 'CRITICAL'), ('web1', 'http', 'WARNING'),
    ('web2', 'http', 'OK');
"""
ROWS = [
    {"host": "db1", "service": "disk", "state": "CRITICAL"},
    {"host": "web1", "service": "http", "state": "WARNING"},
    {"host": "web2", "service": "http", "state": "OK"},
]
QUERY = "select host, service, state from alerts order by id"


def unavailable(message: str) -> NoReturn:
    """Skip for want of a prerequisite, except in CI, where .ci/run installs it: there it is a failure."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def postgres_binaries() -> Path | None:
    """The directory of PostgreSQL's server programs: pg_ctl's on PATH, else the newest of Debian's (which keeps them
    off PATH, in /usr/lib/postgresql/VERSION/bin)."""
    on_path = shutil.which("pg_ctl")
    if on_path is not None:
        return Path(on_path).resolve().parent
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")]
    found.sort(key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    return found[-1] if found else None


def fenced(page: Path) -> list[tuple[str, list[str]]]:
    """(language, lines) of each fenced block of a page, in order."""
    found: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    language = ""
    for line in page.read_text().splitlines():
        if current is None and line.startswith("```"):
            language, current = line[3:].strip(), []
        elif current is not None and line.startswith("```"):
            found.append((language, current))
            current = None
        elif current is not None:
            current.append(line)
    return found


def readme_block(language: str, containing: str) -> list[str]:
    (block,) = [lines for lang, lines in fenced(README) if lang == language and containing in "\n".join(lines)]
    return block


@dataclass(frozen=True)
class Postgres:
    """A running throwaway PostgreSQL server: the superuser over its socket, the others over TCP with passwords."""

    binaries: Path
    socket_dir: Path
    port: int

    def psql(self, sql: str, database: str = "ops", user: str = "postgres") -> str:
        """Run `sql` (one or more statements) through the socket; the rows, unaligned, one per line."""
        done = subprocess.run(
            [str(self.binaries / "psql"), *self.connection(user, database), *PSQL_SCRIPT],
            input=sql,
            capture_output=True,
            text=True,
            timeout=PG_LIMIT,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def connection(self, user: str, database: str) -> list[str]:
        return ["-h", str(self.socket_dir), "-p", str(self.port), "-U", user, "-d", database]

    def uri(self, user: str, password: str) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/ops?sslmode=disable"

    def state(self) -> str:
        """What a write would change: the rows, the sequence, large objects, tables and roles."""
        return self.psql(
            "SELECT jsonb_agg(a ORDER BY a.id) FROM alerts a;"
            "SELECT last_value, is_called FROM alerts_id_seq;"
            "SELECT count(*) FROM pg_largeobject_metadata;"
            "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public';"
            "SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles WHERE rolname NOT LIKE 'pg_%';"
        )


def as_cluster_owner() -> list[str]:
    """The prefix that runs initdb and pg_ctl: nothing, or `runuser -u postgres --` as root (initdb refuses root)."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        runuser = None
    if runuser is None:
        unavailable("as root, the cluster must belong to another user: the postgres user of Debian's package")
    return [runuser, "-u", "postgres", "--"]


def run_checked(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=PG_LIMIT, check=False)
    assert done.returncode == 0, f"{shlex.join(argv)}: {done.stdout}{done.stderr}"


def stop_cluster(prefix: list[str], binaries: Path, data: Path) -> None:
    """Stop the server (bounded), then make sure: SIGKILL to the postmaster if its pid file is still there."""
    if not (data / "postmaster.pid").exists():
        return
    stop = [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "-t", "20", "stop"]
    subprocess.run(stop, capture_output=True, timeout=PG_LIMIT, check=False)
    pid_file = data / "postmaster.pid"
    if pid_file.exists():
        with contextlib.suppress(ValueError, IndexError, ProcessLookupError):
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)


@pytest.fixture(scope="module")
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL server of our own for the module, with the `ops` database: `alerts` owned by the role `ops`
    (which could write), and the README's read-only role `ops_ro`."""
    binaries = postgres_binaries()
    if binaries is None or not (binaries / "initdb").exists():
        unavailable("PostgreSQL's server programs are missing: install Debian's postgresql package (as .ci/run does)")
    prefix = as_cluster_owner()
    home = Path(tempfile.mkdtemp(prefix="hub-ops-pg-"))  # not under pytest's tmp_path: root-only, postgres can't enter
    data = home / "data"
    try:
        if prefix:
            owner = pwd.getpwnam("postgres")
            os.chown(home, owner.pw_uid, owner.pw_gid)
        initdb = ["-D", str(data), "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync"]
        run_checked([*prefix, str(binaries / "initdb"), *initdb, "--no-locale", "-E", "UTF8"])
        port = free_port()
        settings = f"-c listen_addresses=127.0.0.1 -p {port} -k {home} -c fsync=off -c full_page_writes=off"
        start = ["-D", str(data), "-l", str(home / "server.log"), "-w", "-t", "30", "-o", settings, "start"]
        run_checked([*prefix, str(binaries / "pg_ctl"), *start])
        server = Postgres(binaries, home, port)
        server.psql(f"CREATE ROLE ops LOGIN PASSWORD '{OWNER_PASSWORD}'; CREATE DATABASE ops OWNER ops;", "postgres")
        server.psql(SEED, user="ops")
        server.psql("\n".join(readme_block("sql", "CREATE ROLE ops_ro")))
        yield server
    finally:
        stop_cluster(prefix, binaries, data)
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def dbhub() -> Path:
    """DBHub as .ci/run installs it, and the Node.js it runs on."""
    if shutil.which("node") is None:
        unavailable("Node.js is missing: DBHub, the bundle's PostgreSQL server, runs on it")
    if not DBHUB.exists():
        unavailable(
            f"{DBHUB} is missing: run `npm ci --prefix examples/ops --omit=optional --ignore-scripts` (as .ci/run does)"
        )
    return DBHUB


def bundle_copy(directory: Path, env_file: dict[str, str] | None = None) -> Path:
    """The bundle as a teammate has it, in `directory`: its files, and DBHub installed beside them. With
    `env_file`, a servers.env holding those values and `OPS_BUNDLE` (the hub then runs from anywhere)."""
    for name in ("servers.yaml", "dbhub.toml"):
        shutil.copy(BUNDLE / name, directory / name)
    (directory / "node_modules").symlink_to(BUNDLE / "node_modules", target_is_directory=True)
    if env_file is not None:
        values = {"OPS_BUNDLE": str(directory), **env_file}
        (directory / "servers.env").write_text("".join(f"{k}={v}\n" for k, v in values.items()))
        (directory / "servers.env").chmod(0o600)
    return directory / "servers.yaml"


def hub_environment() -> dict[str, str]:
    """This process's environment without what would stand in for the bundle's own settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPS_", "ICINGA_")) and k != "HUB_CONFIG"}


def normalized(command: str, line: str) -> str:
    """A line of output with what changes between runs (nonces, tokens, start-up times, spacing) made constant."""
    line = re.sub(r"untrusted-data-[0-9a-f]{16}", "untrusted-data-NONCE", line)
    line = re.sub(r"\bhub_[A-Za-z0-9_-]{40,}", "hub_TOKEN", line)
    fields = line.split()
    if command == "hub check" and len(fields) >= 7 and fields[1] == "ready":
        fields[5] = "START_MS"
    return " ".join(fields)


def unwrapped(result: types.CallToolResult) -> Any:
    """The JSON DBHub answered, from inside the boundary of `output: wrap`."""
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    lines = block.text.splitlines()
    assert lines[0].startswith("<untrusted-data-") and lines[-1].startswith("</untrusted-data-"), block.text
    return json.loads("\n".join(lines[2:-1]))


def text(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))


def test_the_readme_runs_as_shown(postgres: Postgres, dbhub: Path, tmp_path: Path) -> None:
    """A new teammate's path through examples/ops/README.md, in a copy of the bundle: every `$ hub ...` prints what
    the page shows (what changes between runs aside), the servers.env step is run as written (with this server's
    URI), and the database is as it was."""
    bundle_copy(tmp_path)
    before = postgres.state()
    assert README_URI in README.read_text()
    ran = []
    for language, lines in fenced(README):
        if language == "sh" and "servers.env" in "\n".join(lines):
            script = "\n".join(lines).replace(README_URI, postgres.uri("ops_ro", "choose-a-password"))
            subprocess.run(["bash", "-euc", script], cwd=tmp_path, timeout=WAIT, check=True)
            assert (tmp_path / "servers.env").stat().st_mode & 0o777 == 0o600
            ran.append("servers.env")
        if language != "text":
            continue
        for command, shown in commands(lines):
            argv = shlex.split(command)
            assert argv[0] == "hub", command
            done = subprocess.run(
                [sys.executable, "-m", "hub", *argv[1:]],
                cwd=tmp_path,
                env=hub_environment(),
                capture_output=True,
                text=True,
                timeout=WAIT * 2,
                check=False,
            )
            printed = [normalized(command, line) for line in (done.stdout + done.stderr).splitlines() if line.strip()]
            expected = [normalized(command, line.replace(README_DIRECTORY, str(tmp_path))) for line in shown]
            assert printed == expected, (command, done.stdout + done.stderr)
            ran.append(command)
    assert ran[:3] == ["hub check", "servers.env", "hub check"], ran
    assert {"hub pin", "hub list --group oncall"} <= set(ran) and len(ran) >= 8, ran
    assert (tmp_path / "servers.lock").exists()
    assert postgres.state() == before


WRITES = {
    "INSERT INTO alerts (host, service, state) VALUES ('db2', 'cpu', 'OK')": "READONLY_VIOLATION",
    "UPDATE alerts SET state = 'OK'": "READONLY_VIOLATION",
    "DROP TABLE alerts": "READONLY_VIOLATION",
    "TRUNCATE alerts": "READONLY_VIOLATION",
    "CREATE TABLE notes (body text)": "READONLY_VIOLATION",
    "select 1; delete from alerts": "READONLY_VIOLATION",
    "with gone as (delete from alerts returning *) select * from gone": "READONLY_VIOLATION",
    "select * into copied from alerts": "READONLY_VIOLATION",
    # Writes DBHub's check lets through: the read-only transaction (PGOPTIONS) stops them in PostgreSQL.
    "select setval('alerts_id_seq', 100)": "read-only transaction",
    "select nextval('alerts_id_seq')": "read-only transaction",
    # What gets past both, refused by the hub's constraint on `sql` before it leaves: the way out of the read-only
    # default, large objects (written even in a read-only transaction), and escapes that could spell either.
    "select set_config('default_transaction_read_only', 'off', false)": "must match the pattern",
    "select lo_create(0)": "must match the pattern",
    "select U&\"\\0073et_config\"('default_transaction_read_only', 'off', false)": "must match the pattern",
}


@pytest.mark.anyio
async def test_every_write_is_refused_even_when_the_role_could_write(
    postgres: Postgres, dbhub: Path, tmp_path: Path
) -> None:
    """With the database owner's URI (a role that could write, unlike the README's), an on-call host over stdio
    gets its query answered, and every kind of write is refused by DBHub, PostgreSQL's read-only transaction or
    the hub; the database is unchanged, and the URI's password is in no log line."""
    config = bundle_copy(tmp_path, {"OPS_DATABASE_URI": postgres.uri("ops", OWNER_PASSWORD)})
    log_file = tmp_path / "hub.log"
    before = postgres.state()
    host = Host()
    params = hub_params(config, log_file, "--group", "oncall", env=hub_environment())
    async with connect_hub(params, host) as client:
        tools = await wait_for_tools(client, host, {"postgres_query", "postgres_search_objects"})
        assert {t.name for t in tools} == {"hub_health", "postgres_query", "postgres_search_objects"}
        query = {t.name: t for t in tools}["postgres_query"]
        assert query.annotations is not None and query.annotations.read_only_hint is True

        answered = await client.call_tool("postgres_query", {"sql": QUERY})
        assert not answered.is_error, text(answered)
        assert unwrapped(answered)["data"]["rows"] == ROWS
        found = await client.call_tool("postgres_search_objects", {"object_type": "table"})
        assert [r["name"] for r in unwrapped(found)["data"]["results"]] == ["alerts"]

        for sql, reason in WRITES.items():
            refused = await client.call_tool("postgres_query", {"sql": sql})
            assert refused.is_error and reason in text(refused), (sql, text(refused))
        # The set_config() call never reached the server: the read-only default still holds on its connections.
        again = await client.call_tool("postgres_query", {"sql": "select setval('alerts_id_seq', 100)"})
        assert again.is_error and "read-only transaction" in text(again)
    assert postgres.state() == before
    assert json.loads(before.splitlines()[0]) == [{"id": i, **row} for i, row in enumerate(ROWS, start=1)]
    assert OWNER_PASSWORD not in log_file.read_text()


@pytest.mark.anyio
async def test_the_team_hub_gives_oncall_the_database_and_others_nothing(
    postgres: Postgres, dbhub: Path, tmp_path: Path
) -> None:
    """`hub serve --http` on the bundle with tokens made by `hub token create`: an on-call person lists and queries
    the database; a person in no group sees no tool and cannot call one."""
    config = bundle_copy(tmp_path, {"OPS_DATABASE_URI": postgres.uri("ops_ro", "choose-a-password")})
    alice = create_token(config, "alice", "oncall")
    eve = create_token(config, "eve")
    async with serve_hub_http(config, tmp_path / "hub.log") as url:
        host = Host()
        async with as_person(url, alice, host) as client:
            tools = await wait_for_tools(client, host, {"postgres_query"})
            assert {t.name for t in tools} == {"hub_health", "postgres_query", "postgres_search_objects"}
            answered = await client.call_tool("postgres_query", {"sql": QUERY})
            assert unwrapped(answered)["data"]["rows"] == ROWS
        async with as_person(url, eve) as client:
            assert (await client.list_tools()).tools == []
            with pytest.raises(MCPError, match="Unknown tool: 'postgres_query'"):
                await client.call_tool("postgres_query", {"sql": QUERY})


@pytest.mark.anyio
async def test_the_icinga_entry_once_configured_lists_reads_and_holds_actions(
    postgres: Postgres, dbhub: Path, tmp_path: Path
) -> None:
    """With its command set in servers.env (a stand-in with unannotated `get_host` and `restart_host`), the icinga
    entry gives the on-call group the reading tools only, and the DBAs the actions too, each one run only after
    its user's yes."""
    stand_in = tmp_path / "icinga-mcp"
    stand_in.write_text(
        f"#!/bin/sh\ncd {shlex.quote(str(REPO))} && exec {shlex.quote(sys.executable)} -m tests.children.opsdb\n"
    )
    stand_in.chmod(0o755)
    config = bundle_copy(
        tmp_path,
        {
            "OPS_DATABASE_URI": postgres.uri("ops_ro", "choose-a-password"),
            "OPS_ICINGA_COMMAND": str(stand_in),
            "OPS_ICINGA_ENABLED": "true",
        },
    )
    reads = {"icinga_get_host", "icinga_list_hosts"}
    actions = {"icinga_restart_host", "icinga_query", "icinga_drop_table"}
    oncall = hub_params(config, tmp_path / "oncall.log", "--group", "oncall", env=hub_environment())
    host = Host()
    async with connect_hub(oncall, host) as client:
        names = {t.name for t in await wait_for_tools(client, host, reads | {"postgres_query"})}
        assert reads <= names and not actions & names
        with pytest.raises(MCPError, match="Unknown tool: 'icinga_restart_host'"):
            await client.call_tool("icinga_restart_host", {"name": "db1"})
        assert "ran get_host" in text(await client.call_tool("icinga_get_host", {"name": "db1"}))

    dba = hub_params(config, tmp_path / "dba.log", "--group", "dba", env=hub_environment())
    host = Host(elicit_answer={"confirm": True})
    async with connect_hub(dba, host) as client:
        names = {t.name for t in await wait_for_tools(client, host, reads | actions)}
        assert reads | actions <= names
        done = await client.call_tool("icinga_restart_host", {"name": "db1"})
        assert not done.is_error and "ran restart_host" in text(done), text(done)
        assert len(host.elicited) == 1 and "restart_host" in host.elicited[0].message
    host = Host(elicit_answer={"confirm": False})
    async with connect_hub(dba, host) as client:
        await wait_for_tools(client, host, actions)
        declined = await client.call_tool("icinga_restart_host", {"name": "db1"})
        assert declined.is_error and "ran restart_host" not in text(declined)
