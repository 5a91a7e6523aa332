"""servers.yaml parsing (hub.config): the schema, `${VAR}` expansion, and error messages a person can act on."""

from __future__ import annotations

from pathlib import Path

import pytest

from hub.config import ConfigError, HubConfig, load_config, parse_config
from hub.config.expansion import expand_env, unset_references
from hub.config.loader import shown
from hub.config.schema import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_CONCURRENCY,
    DEFAULT_MAX_QUEUE,
    DEFAULT_REQUEST_TIMEOUT,
)

FILE = Path("servers.yaml")


def parse(text: str, environ: dict[str, str] | None = None) -> HubConfig:
    return parse_config(text, FILE, environ or {})


def error_of(text: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(text, environ)
    return str(caught.value)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "servers.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ---- a valid file --------------------------------------------------------------------------------------

VALID = """\
hub:
  log_arguments: true
  health_tool: false
servers:
  time:
    command: mcp-server-time
    args: ["--local-timezone", "UTC"]
    env: {TZ: UTC}
    inherit_env: [HTTP_PROXY]
    cwd: /tmp
    timeout: 5
    connect_timeout: 7.5
    max_restarts: 0
    protocol: auto
    log_arguments: false
  docs:
    url: https://example.com/mcp
    headers: {Authorization: Bearer abc}
    prefix: ""
    enabled: false
    tools:
      allow: ["search_*"]
      deny: ["search_private"]
"""


def test_a_valid_file_is_parsed_into_every_field(tmp_path: Path) -> None:
    loaded = load_config(write(tmp_path, VALID))
    config = loaded.config
    assert config.hub.log_arguments is True
    assert config.hub.health_tool is False
    assert list(config.servers) == ["time", "docs"]  # config order is kept: it decides collisions
    time = config.servers["time"]
    assert time.command == "mcp-server-time"
    assert time.args == ("--local-timezone", "UTC")
    assert time.env == {"TZ": "UTC"}
    assert time.inherit_env == ("HTTP_PROXY",)
    assert time.cwd == "/tmp"
    assert time.timeout == 5.0
    assert time.connect_timeout == 7.5
    assert time.max_restarts == 0
    assert time.protocol == "auto"
    assert time.log_arguments is False
    assert time.kind == "stdio"
    docs = config.servers["docs"]
    assert docs.url == "https://example.com/mcp"
    assert docs.headers == {"Authorization": "Bearer abc"}
    assert docs.enabled is False
    assert docs.tools.allow == ("search_*",)
    assert docs.tools.deny == ("search_private",)
    assert docs.kind == "streamable-http"


def test_load_config_resolves_the_path_and_gives_each_server_its_prefix(tmp_path: Path) -> None:
    loaded = load_config(write(tmp_path, VALID))
    assert loaded.path == (tmp_path / "servers.yaml").resolve()
    assert loaded.path.is_absolute()
    assert loaded.prefix_of("time") == "time"  # no prefix: the server's key
    assert loaded.prefix_of("docs") == ""  # prefix: "" means no prefix at all


def test_omitted_keys_take_their_documented_defaults() -> None:
    config = parse("servers:\n  time:\n    command: mcp-server-time\n")
    assert config.hub.log_arguments is False
    assert config.hub.health_tool is True
    assert config.hub.startup_listing_wait == 5.0
    server = config.servers["time"]
    assert server.args == ()
    assert server.env == {}
    assert server.inherit_env == ()
    assert server.cwd is None
    assert server.prefix is None
    assert server.enabled is True
    assert server.tools.allow == ("*",)
    assert server.tools.deny == ()
    assert server.protocol == "legacy"
    assert server.timeout == DEFAULT_REQUEST_TIMEOUT == 120.0
    assert server.connect_timeout == DEFAULT_CONNECT_TIMEOUT == 60.0
    assert server.max_restarts == 5
    assert server.log_arguments is None
    assert server.max_concurrency == DEFAULT_MAX_CONCURRENCY == 1024
    assert server.max_queue == DEFAULT_MAX_QUEUE == 1024
    assert server.sessions == "shared"


def test_max_concurrency_and_max_queue_can_be_lowered_and_are_bounded() -> None:
    server = parse("servers:\n  a:\n    command: x\n    max_concurrency: 2\n    max_queue: 0\n").servers["a"]
    assert (server.max_concurrency, server.max_queue) == (2, 0)
    assert "servers.a.max_concurrency: Input should be greater than or equal to 1" in error_of(
        "servers:\n  a:\n    command: x\n    max_concurrency: 0\n"
    )
    assert "servers.a.max_queue: Input should be greater than or equal to 0" in error_of(
        "servers:\n  a:\n    command: x\n    max_queue: -1\n"
    )


@pytest.mark.parametrize("text", ["", "\n\n", "# servers go here\n# later\n", "---\n"])
def test_an_empty_or_comments_only_file_is_an_error_that_says_how_to_write_none(text: str) -> None:
    # An editor that truncates the file before writing it leaves exactly this for a moment: a reload of it must
    # not stop every child.
    message = error_of(text)
    assert message == "servers.yaml is empty; list the servers under 'servers:', or write 'servers: {}' for none"


def test_a_file_without_a_servers_key_is_an_error() -> None:
    message = error_of("hub:\n  health_tool: false\n")
    assert message.startswith("servers.yaml has no 'servers:' key;")
    assert "write 'servers: {}' for none" in message


def test_an_explicit_empty_servers_mapping_is_a_hub_with_no_servers() -> None:
    config = parse("servers: {}\n")
    assert config.servers == {}
    assert config.hub.health_tool is True


def test_a_null_servers_value_is_refused_with_its_line() -> None:
    message = error_of("hub: {}\nservers:\n")
    assert "servers.yaml:2: servers: Input should be a valid dictionary" in message


def test_enabled_false_is_kept_in_the_config() -> None:
    config = parse("servers:\n  a:\n    command: x\n    enabled: false\n  b:\n    command: y\n")
    assert config.servers["a"].enabled is False
    assert config.servers["b"].enabled is True


@pytest.mark.parametrize(
    ("url", "transport", "kind"),
    [
        ("http://localhost:8000/sse", None, "sse"),
        ("http://localhost:8000/sse/", None, "sse"),
        ("https://example.com/mcp", None, "streamable-http"),
        ("https://example.com/sse-like/mcp", None, "streamable-http"),
        ("https://example.com/mcp", "sse", "sse"),
        ("http://localhost:8000/sse", "streamable-http", "streamable-http"),
    ],
)
def test_the_kind_of_a_url_child_follows_the_sse_suffix_unless_transport_is_given(
    url: str, transport: str | None, kind: str
) -> None:
    line = f"    transport: {transport}\n" if transport else ""
    config = parse(f"servers:\n  remote:\n    url: {url}\n{line}")
    assert config.servers["remote"].kind == kind


def test_transport_stdio_is_accepted_with_a_command() -> None:
    config = parse("servers:\n  a:\n    command: x\n    transport: stdio\n")
    assert config.servers["a"].kind == "stdio"


# ---- ${VAR} expansion ----------------------------------------------------------------------------------


def test_variables_are_expanded_from_the_given_environment() -> None:
    config = parse(
        "servers:\n  a:\n    command: ${CMD}\n    args: ['--key=${KEY}', '${A}${B}']\n    env: {TOKEN: '${KEY}'}\n",
        {"CMD": "/usr/bin/tool", "KEY": "s3cret", "A": "x", "B": "y"},
    )
    server = config.servers["a"]
    assert server.command == "/usr/bin/tool"
    assert server.args == ("--key=s3cret", "xy")
    assert server.env == {"TOKEN": "s3cret"}


def test_a_default_is_used_when_the_variable_is_unset_or_empty() -> None:
    text = "servers:\n  a:\n    command: x\n    args: ['${TZ_:-UTC}', '${EMPTY:-fallback}', '${SET:-unused}']\n"
    config = parse(text, {"EMPTY": "", "SET": "value"})
    assert config.servers["a"].args == ("UTC", "fallback", "value")


def test_a_variable_set_to_empty_without_default_expands_to_empty() -> None:
    config = parse("servers:\n  a:\n    command: x\n    args: ['<${EMPTY}>']\n", {"EMPTY": ""})
    assert config.servers["a"].args == ("<>",)


def test_a_default_may_be_empty() -> None:
    config = parse("servers:\n  a:\n    command: x\n    args: ['<${NOPE:-}>']\n")
    assert config.servers["a"].args == ("<>",)


def test_double_dollar_is_a_literal_dollar_and_is_not_expanded_further() -> None:
    config = parse("servers:\n  a:\n    command: x\n    args: ['cost $$5', '$${HOME}', '$PLAIN']\n", {"HOME": "/root"})
    assert config.servers["a"].args == ("cost $5", "${HOME}", "$PLAIN")


def test_expanded_values_are_validated_with_their_field_types() -> None:
    text = "servers:\n  a:\n    command: x\n    timeout: ${T:-2.5}\n    enabled: ${ON:-false}\n"
    server = parse(text).servers["a"]
    assert server.timeout == 2.5
    assert server.enabled is False


def test_keys_are_not_expanded() -> None:
    config = parse("servers:\n  a:\n    command: x\n    env: {'${NAME}': v}\n", {"NAME": "expanded"})
    assert config.servers["a"].env == {"${NAME}": "v"}


def test_expand_env_raises_keyerror_naming_the_missing_variable() -> None:
    with pytest.raises(KeyError) as caught:
        expand_env("a ${PRESENT} ${ABSENT}", {"PRESENT": "1"})
    assert caught.value.args[0] == "ABSENT"


def test_unset_references_are_what_expand_env_fills_with_a_default_or_fails_on() -> None:
    text = "${A} ${B:-.} $${C} ${D:-x} ${E} ${A} ${F:-}"
    environ = {"D": "", "E": "set", "F": "set"}
    assert unset_references(text, environ) == [("A", None), ("B", "."), ("D", "x")]
    with pytest.raises(KeyError, match="A"):
        expand_env(text, environ)
    assert expand_env(text, environ | {"A": "a"}) == "a . ${C} x set a set"


def test_load_config_reads_the_process_environment_when_none_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HUB_TEST_REPO", "/srv/repo")
    loaded = load_config(write(tmp_path, "servers:\n  git:\n    command: g\n    args: ['${HUB_TEST_REPO}']\n"))
    assert loaded.config.servers["git"].args == ("/srv/repo",)


def test_a_missing_variable_names_file_line_key_path_variable_and_fix() -> None:
    message = error_of("servers:\n  a:\n    command: x\n    args: ['--key', '${API_KEY}']\n")
    assert message.startswith("servers.yaml:4: servers.a.args.1:")
    assert "environment variable API_KEY is not set" in message
    assert "export it before starting the hub" in message
    assert "${API_KEY:-value}" in message


def test_a_missing_variable_in_env_points_at_the_env_entry() -> None:
    message = error_of("servers:\n  a:\n    command: x\n    env:\n      OTHER: y\n      TOKEN: ${TOKEN}\n")
    assert message.startswith("servers.yaml:6: servers.a.env.TOKEN:")
    assert "TOKEN is not set" in message


def test_a_missing_variable_through_load_config_names_the_real_file(tmp_path: Path) -> None:
    path = write(tmp_path, "servers:\n  a:\n    command: ${HUB_TEST_SURELY_UNSET_VAR}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    assert str(caught.value).startswith(f"{path}:3: servers.a.command:")


# ---- unknown, duplicate and conflicting keys -----------------------------------------------------------


def test_an_unknown_server_key_names_file_line_path_and_the_close_match() -> None:
    message = error_of("servers:\n  time:\n    comand: mcp-server-time\n")
    assert "servers.yaml:3: servers.time.comand: unknown key 'comand'" in message
    assert "did you mean 'command'?" in message
    assert "allowed keys: command, args, env" in message


def test_an_unknown_hub_key_suggests_the_hub_setting() -> None:
    message = error_of("hub:\n  log_argument: true\nservers: {}\n")
    assert "servers.yaml:2: hub.log_argument: unknown key 'log_argument'" in message
    assert "did you mean 'log_arguments'?" in message
    assert "allowed keys: http, per_identity, log_arguments, health_tool" in message


def test_an_unknown_tools_key_suggests_allow() -> None:
    message = error_of("servers:\n  t:\n    command: x\n    tools:\n      alow: ['*']\n")
    assert "servers.yaml:5: servers.t.tools.alow: unknown key 'alow'" in message
    assert "did you mean 'allow'?" in message
    assert "allowed keys: allow, deny" in message


def test_an_unknown_key_without_a_close_match_lists_the_allowed_keys_only() -> None:
    message = error_of("servers:\n  t:\n    command: x\n    zzzzzz: 1\n")
    assert "unknown key 'zzzzzz'" in message
    assert "did you mean" not in message
    assert "allowed keys: command" in message


def test_an_unknown_top_level_key_is_reported() -> None:
    message = error_of("servers: {}\nserver:\n  a:\n    command: x\n")
    assert "servers.yaml:2: server: unknown key 'server'" in message
    assert "did you mean 'servers'?" in message
    assert "allowed keys: include, hub, auth, secrets, state, policies, default_policy, servers" in message


def test_a_misspelt_servers_key_alone_is_a_file_without_servers() -> None:
    message = error_of("server:\n  a:\n    command: x\n")
    assert message.startswith("servers.yaml has no 'servers:' key;")


def test_every_problem_in_a_file_is_reported_at_once() -> None:
    message = error_of("servers:\n  a:\n    comand: x\n  b:\n    command: y\n    timout: 3\n")
    assert message.startswith("servers.yaml is not a valid hub configuration:\n")
    assert "servers.a.comand" in message
    assert "servers.b.timout" in message
    assert "did you mean 'timeout'?" in message


def test_a_duplicate_key_names_both_lines() -> None:
    message = error_of("servers:\n  a:\n    command: x\n    command: y\n")
    assert message.startswith("servers.yaml:")
    assert "line 4: duplicate key 'command' (first at line 3)" in message
    assert "keep only one" in message


def test_a_duplicate_server_is_refused_rather_than_silently_replaced() -> None:
    message = error_of("servers:\n  a:\n    command: x\n  a:\n    command: y\n")
    assert "line 4: duplicate key 'a' (first at line 2)" in message


@pytest.mark.parametrize(
    "body",
    ["    command: x\n    url: http://localhost/mcp\n", "    args: [x]\n"],
    ids=["both", "neither"],
)
def test_a_server_needs_exactly_one_of_command_and_url(body: str) -> None:
    message = error_of(f"servers:\n  a:\n{body}")
    assert "servers.yaml:2: servers.a:" in message
    assert "give exactly one of 'command' (a stdio child) or 'url' (an HTTP or SSE child)" in message


def test_stdio_only_keys_on_a_url_child_are_named() -> None:
    message = error_of("servers:\n  a:\n    url: http://localhost/mcp\n    args: [x]\n    cwd: /tmp\n")
    assert "servers.yaml:2: servers.a:" in message
    assert "args, cwd only apply to stdio children (with 'command'), not 'url'" in message


def test_env_and_inherit_env_are_stdio_only_too() -> None:
    message = error_of("servers:\n  a:\n    url: http://localhost/mcp\n    env: {A: b}\n    inherit_env: [X]\n")
    assert "env, inherit_env only apply to stdio children" in message


def test_headers_on_a_stdio_child_are_refused() -> None:
    message = error_of("servers:\n  a:\n    command: x\n    headers: {A: b}\n")
    assert "headers only apply to URL children" in message


def test_a_url_must_be_http_or_https() -> None:
    message = error_of("servers:\n  a:\n    url: ftp://user:hunter2@example.com/mcp\n")
    assert "servers.yaml:2: servers.a: url must start with http:// or https://" in message
    assert "hunter2" not in message, "a URL may carry credentials: it is not quoted"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("    command: x\n    transport: sse\n", "transport 'sse' needs 'url', not 'command'"),
        ("    url: http://h/mcp\n    transport: stdio\n", "transport 'stdio' needs 'command', not 'url'"),
    ],
)
def test_a_transport_that_does_not_fit_the_kind_is_refused(body: str, expected: str) -> None:
    assert expected in error_of(f"servers:\n  a:\n{body}")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("timeout: 0", "servers.yaml:4: servers.a.timeout: Input should be greater than 0"),
        ("connect_timeout: -1", "servers.yaml:4: servers.a.connect_timeout: Input should be greater than 0"),
        ("max_restarts: -1", "servers.yaml:4: servers.a.max_restarts: Input should be greater than or equal to 0"),
        ("protocol: '2025-06-18'", "servers.yaml:4: servers.a.protocol: Input should be 'legacy', 'auto' or"),
        ("enabled: maybe", "servers.yaml:4: servers.a.enabled: Input should be a valid boolean"),
    ],
)
def test_bad_values_name_the_line_and_the_key_path(line: str, expected: str) -> None:
    assert expected in error_of(f"servers:\n  a:\n    command: x\n    {line}\n")


# ---- prefixes and server names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "quoted"),
    [
        ("My_Prefix", "'My_Prefix'"),
        ("a+b", "'a+b'"),
        ("1abc", "'1abc'"),
        ("-a", "'-a'"),
        ("Time", "'Time'"),
        ("a" * 33, "(a string, not shown)"),  # 20+ token characters: shaped like a credential
    ],
)
def test_an_invalid_prefix_is_refused_with_the_rule_and_the_reason(prefix: str, quoted: str) -> None:
    message = error_of(f"servers:\n  a:\n    command: x\n    prefix: '{prefix}'\n")
    assert f"servers.yaml:4: servers.a.prefix: prefix {quoted} is not valid" in message
    assert "1-32 lowercase letters, digits or '-', starting with a letter" in message
    assert "(no '_' or '+': they separate the prefix from names and URIs)" in message
    assert "or '' for no prefix" in message


@pytest.mark.parametrize("prefix", ["a", "time", "my-server2", "a" * 32, ""])
def test_a_valid_prefix_is_accepted(prefix: str) -> None:
    config = parse(f"servers:\n  a:\n    command: x\n    prefix: '{prefix}'\n")
    assert config.servers["a"].prefix == prefix


def test_a_server_name_that_cannot_be_a_prefix_says_how_to_fix_it() -> None:
    message = error_of("servers:\n  time:\n    command: x\n  My_Server:\n    command: y\n")
    assert "servers.yaml:" in message
    assert "server name 'My_Server' cannot be used as a prefix" in message
    assert "rename it or set 'prefix:' for it" in message


def test_a_server_name_that_cannot_be_a_prefix_points_at_that_server() -> None:
    # Every problem names its own line and key path; a file with many servers must not send the reader to
    # the `servers:` line.
    message = error_of("servers:\n  time:\n    command: x\n  My_Server:\n    command: y\n")
    assert "servers.yaml:4: servers.My_Server:" in message


@pytest.mark.parametrize(
    "body", ["    prefix:\n", "    prefix: null\n", "    prefix: ~\n"], ids=["empty", "null", "tilde"]
)
def test_a_null_prefix_falls_back_to_the_server_name_so_that_name_is_still_checked(body: str) -> None:
    # `prefix:` with no value is YAML null, which means "use the server's key": that key must then be a prefix.
    message = error_of(f"servers:\n  My_Server:\n    command: y\n{body}")
    assert "server name 'My_Server' cannot be used as a prefix" in message


def test_a_server_name_that_cannot_be_a_prefix_is_fine_with_an_explicit_prefix() -> None:
    config = parse(
        "servers:\n  My_Server:\n    command: y\n    prefix: mine\n  Other:\n    command: z\n    prefix: ''\n"
    )
    assert config.servers["My_Server"].prefix == "mine"
    assert config.servers["Other"].prefix == ""


def test_two_servers_with_the_same_explicit_prefix_are_refused_naming_both() -> None:
    message = error_of("servers:\n  a:\n    command: x\n    prefix: p\n  b:\n    command: y\n    prefix: p\n")
    assert "servers.b" in message
    assert "'p'" in message and "'a'" in message
    assert "give one of them another 'prefix:'" in message


def test_a_prefix_equal_to_another_servers_name_is_a_duplicate_prefix() -> None:
    message = error_of("servers:\n  time:\n    command: x\n  t2:\n    command: y\n    prefix: time\n")
    assert "servers.t2" in message
    assert "'time'" in message
    assert "give one of them another 'prefix:'" in message


def test_several_servers_without_prefix_do_not_collide() -> None:
    config = parse("servers:\n  a:\n    command: x\n    prefix: ''\n  b:\n    command: y\n    prefix: ''\n")
    assert [s.prefix for s in config.servers.values()] == ["", ""]


# ---- error messages never quote secrets ----------------------------------------------------------------

SECRET = "s3cr3t-0123456789abcdef"


def test_a_header_of_the_wrong_type_is_reported_without_its_value() -> None:
    message = error_of(
        f'servers:\n  a:\n    url: https://h/mcp\n    headers:\n      Authorization: ["Bearer {SECRET}"]\n'
    )
    assert "servers.yaml:5: servers.a.headers.Authorization: Input should be a valid string" in message
    assert "(got a list, not shown)" in message
    assert SECRET not in message and "Bearer" not in message


def test_an_env_value_of_the_wrong_type_is_reported_without_its_value() -> None:
    message = error_of("servers:\n  a:\n    command: x\n    env:\n      PIN: 4242424242\n")
    assert "servers.yaml:5: servers.a.env.PIN: Input should be a valid string (got a number, not shown)" in message
    assert "4242424242" not in message


def test_headers_that_are_not_a_mapping_are_reported_without_their_value() -> None:
    message = error_of(f"servers:\n  a:\n    url: https://h/mcp\n    headers: 'X-Key {SECRET}'\n")
    assert "servers.a.headers: Input should be a valid dictionary (got a string, not shown)" in message
    assert SECRET not in message


@pytest.mark.parametrize(
    "value",
    ["ghp_abcdefghijklmnopqrstuvwxyz0123", "token=abc", "Bearer xyz", "password1", "my-api_key"],
    ids=["opaque", "token", "bearer", "password", "api-key"],
)
def test_a_value_shaped_like_a_credential_is_not_quoted_under_any_key(value: str) -> None:
    message = error_of(f"servers:\n  a:\n    command: x\n    args: '{value}'\n")
    assert "servers.yaml:4: servers.a.args: Input should be a valid tuple (got a string, not shown)" in message
    assert value not in message


def test_a_harmless_value_is_quoted_so_that_the_mistake_is_visible() -> None:
    message = error_of("servers:\n  a:\n    command: x\n    args: --verbose\n")
    assert "servers.a.args: Input should be a valid tuple (got '--verbose')" in message


def test_an_invalid_prefix_shaped_like_a_credential_is_not_quoted() -> None:
    token = "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    message = error_of(f"servers:\n  a:\n    command: x\n    prefix: {token}\n")
    assert "servers.yaml:4: servers.a.prefix: prefix (a string, not shown) is not valid" in message
    assert token not in message


def test_a_missing_variable_in_headers_names_the_variable_only() -> None:
    message = error_of("servers:\n  a:\n    url: https://h/mcp\n    headers:\n      Authorization: Bearer ${TOKEN}\n")
    assert message.startswith("servers.yaml:5: servers.a.headers.Authorization:")
    assert "environment variable TOKEN is not set" in message
    assert "Bearer" not in message


@pytest.mark.parametrize(
    ("loc", "value", "expected"),
    [
        (("servers", "a", "timeout"), "soon", "'soon'"),
        (("servers", "a", "cwd"), 12, "12"),
        (("servers", "a", "enabled"), None, "None"),
        (("servers", "a", "env", "HOME"), "/root", "a string, not shown"),
        (("servers", "a", "headers", "X-Trace"), "1", "a string, not shown"),
        (("servers", "a", "args", 0), "Basic dXNlcjpwYXNz", "a string, not shown"),
        (("servers", "a", "args", 0), "x" * 20, "a string, not shown"),  # opaque: 20+ token characters
        (("servers", "a", "args", 0), "a b " * 25, "a string, not shown"),  # longer than 80 characters
        (("servers", "a", "my_token"), "plain", "a string, not shown"),  # the key says what it is
        (("servers", "a", "args"), ["x"], "a list, not shown"),
        (("servers", "a", "tools"), {"allow": 1}, "a mapping, not shown"),
        (("servers", "a", "timeout"), 2.5, "2.5"),
    ],
)
def test_shown_quotes_only_what_cannot_be_a_secret(loc: tuple[str | int, ...], value: object, expected: str) -> None:
    assert shown(loc, value) == expected


# ---- files that are not configurations at all ----------------------------------------------------------


def test_invalid_yaml_reports_the_file_and_line() -> None:
    message = error_of("servers:\n  a:\n    command: x\n    args: [x\n")
    assert message.startswith("servers.yaml:5: not valid YAML:")


def test_invalid_yaml_in_the_middle_of_a_file_reports_that_line() -> None:
    message = error_of("servers:\n  a:\n    command: x\n  b: : :\n  c:\n    command: z\n")
    assert message.startswith("servers.yaml:4: not valid YAML: mapping values are not allowed here")


def test_yaml_merge_keys_are_valid_yaml_and_own_keys_override_merged_ones() -> None:
    # `<<: *anchor` is standard YAML (PyYAML's safe loader supports it); a shared server body is a common use.
    text = (
        "servers:\n"
        "  time: &base\n"
        "    command: mcp-server-time\n"
        "    max_restarts: 2\n"
        "  time2:\n"
        "    <<: *base\n"
        "    prefix: t2\n"
        "    max_restarts: 4\n"
    )
    servers = parse(text).servers
    assert servers["time2"].command == "mcp-server-time"
    assert servers["time2"].prefix == "t2"
    assert servers["time2"].max_restarts == 4
    assert servers["time"].max_restarts == 2


def test_a_top_level_that_is_not_a_mapping_is_refused() -> None:
    message = error_of("- a\n- b\n")
    assert message == "servers.yaml: the top level must be a mapping with a 'servers:' key"


def test_a_server_without_a_body_is_refused_with_its_line() -> None:
    message = error_of("servers:\n  a:\n")
    assert "servers.yaml:2: servers.a:" in message


def test_a_missing_file_says_how_to_fix_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as caught:
        load_config(missing)
    message = str(caught.value)
    assert message.startswith(f"{missing}: no such file;")
    assert "pass --config PATH or create it" in message


def test_a_directory_instead_of_a_file_is_reported_as_unreadable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path}: cannot read it:")


def test_the_default_servers_yaml_of_the_repository_is_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    loaded = load_config(root / "servers.yaml", environ={})
    servers = loaded.config.servers
    assert list(servers) == ["time", "git"]
    assert servers["time"].args == ("--local-timezone", "UTC")
    assert servers["git"].args == ("--repository", ".")
    assert "git_commit" in servers["git"].tools.deny
