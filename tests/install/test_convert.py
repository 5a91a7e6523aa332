"""Secrets inside longer values (URLs, connection strings, header arguments) and host prompts, as `hub import`
converts them: each becomes a `${VAR}`, its value kept for the env file, never left in the child."""

from __future__ import annotations

from hub.install.convert import convert, hide_secrets
from hub.install.secrets import SecretStore

HOME = {"userHome": "/home/me", "workspaceFolder": "/w"}


def hidden(raw: dict[str, object], inputs: dict[str, str] | None = None) -> tuple[dict[str, object], SecretStore]:
    converted = convert(raw, HOME)
    store = SecretStore({})
    hide_secrets("srv", converted, store, inputs)
    return converted.child, store


def test_a_urls_password_becomes_a_reference_wherever_the_url_is() -> None:
    child, store = hidden({"command": "npx", "args": ["-y", "pg", "postgresql://admin:s3cretpw@db:5432/app"]})
    assert child["args"] == ["-y", "pg", "postgresql://admin:${SRV_PASSWORD}@db:5432/app"]
    child, store = hidden({"command": "x", "env": {"DATABASE_URI": "mysql://root:pa55@db/app"}})
    assert child["env"] == {"DATABASE_URI": "mysql://root:${SRV_PASSWORD}@db/app"}
    assert store.added == {"SRV_PASSWORD": "pa55"}
    child, store = hidden({"url": "https://bob:pw12345@example.com/mcp?api_key=k1"})
    assert child["url"] == "https://bob:${SRV_PASSWORD}@example.com/mcp?api_key=${SRV_API_KEY}"
    child, store = hidden({"command": "git-mcp", "args": ["https://ghp_abcdefghijklmnopqrstuvwxyz0123@github.com/o/r"]})
    assert child["args"] == ["https://${SRV_TOKEN}@github.com/o/r"]
    plain, store = hidden({"command": "x", "args": ["https://user@example.com/x", "https://example.com/a:b@c"]})
    assert plain["args"] == ["https://user@example.com/x", "https://example.com/a:b@c"] and not store.added


def test_connection_strings_keep_all_but_their_password() -> None:
    child, store = hidden(
        {
            "command": "mssql-mcp",
            "args": ["Server=db;User Id=sa;Password=Str0ng!pw;Encrypt=true"],
            "env": {"PG": "host=db user=app password=libpq-pw dbname=x"},
        }
    )
    assert child["env"] == {"PG": "host=db user=app password=${SRV_PASSWORD} dbname=x"}
    assert child["args"] == ["Server=db;User Id=sa;Password=${SRV_PASSWORD_2};Encrypt=true"]
    assert set(store.added.values()) == {"Str0ng!pw", "libpq-pw"}


def test_header_arguments_lose_their_values() -> None:
    child, store = hidden({
        "command": "npx",
        "args": ["mcp-remote", "https://x/mcp", "--header", "Authorization: Bearer abc", "-H", "X-Api:abc123",
                 "--header=X-Team-Key:t0k", "--header", "Accept: text/plain", "--header", "Authorization:${AUTH}"],
    })  # fmt: skip
    assert child["args"] == [
        "mcp-remote", "https://x/mcp", "--header", "Authorization: Bearer ${SRV_TOKEN}", "-H", "X-Api:${SRV_X_API}",
        "--header=X-Team-Key:${SRV_X_TEAM_KEY}", "--header", "Accept: text/plain", "--header", "Authorization:${AUTH}",
    ]  # fmt: skip
    assert store.added == {"SRV_TOKEN": "abc", "SRV_X_API": "abc123", "SRV_X_TEAM_KEY": "t0k"}


def test_a_host_prompt_becomes_a_placeholder_never_a_value() -> None:
    converted = convert({"command": "x", "env": {"API_KEY": "${input:apiKey}"}, "args": ["${input:apiKey}"]}, HOME)
    store = SecretStore({})
    hide_secrets("v", converted, store, {"apiKey": "Your API key"})
    assert converted.child == {"command": "x", "args": ["${V_API_KEY}"], "env": {"API_KEY": "${V_API_KEY}"}}
    assert store.added == {} and store.placeholders == {"V_API_KEY": "Your API key"}
    assert converted.notes == ["fill in V_API_KEY in the env file (Your API key)"]
    unknown = convert({"command": "x", "env": {"T": "${input:tok}"}}, HOME)
    hide_secrets("u", unknown, store)
    assert unknown.child["env"] == {"T": "${U_TOK}"} and "${input:tok}" in store.placeholders["U_TOK"]


def test_a_reference_behind_a_scheme_stays_a_reference() -> None:
    converted = convert(
        {"url": "https://api.githubcopilot.com/mcp/", "headers": {"Authorization": "Bearer ${input:github-token}"}},
        HOME,
    )
    store = SecretStore({})
    hide_secrets("github", converted, store, {"github-token": "GitHub PAT"})
    assert converted.child["headers"] == {"Authorization": "Bearer ${GITHUB_TOKEN}"}
    assert store.added == {} and store.placeholders == {"GITHUB_TOKEN": "GitHub PAT"}
    env_ref, store = hidden({"command": "x", "args": ["--header", "Authorization: Bearer ${env:GH}"]})
    assert env_ref["args"] == ["--header", "Authorization: Bearer ${GH}"] and store.added == {}
