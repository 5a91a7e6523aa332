"""The log's redaction (hub.redaction): configured values and credential shapes, in every field."""

from __future__ import annotations

from hub.config.schema import ServerConfig
from hub.redaction import REDACTED, Redactor, configured_secrets


def test_configured_values_and_credential_shapes_are_redacted_in_nested_fields() -> None:
    redactor = Redactor()
    redactor.add(["s3cr3t-value", "abc"])  # too short to be taken
    fields = {
        "event": "call",
        "error_message": "login failed for s3cr3t-value",
        "arguments": {"url": "postgres://ops:hunter2pass@db:5432/x", "h": ["Authorization: Bearer eyJabc.def.ghi"]},
        "key": "-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----",
        "aws": "id AKIAABCDEFGHIJKLMNOP here",
        "note": "abc is fine",
        "count": 3,
    }
    redacted = redactor.fields(dict(fields))
    assert redacted["error_message"] == f"login failed for {REDACTED}"
    assert redacted["arguments"] == {"url": f"postgres://ops:{REDACTED}@db:5432/x", "h": [f"Authorization: {REDACTED}"]}
    assert redacted["key"] == REDACTED and redacted["aws"] == f"id {REDACTED} here"
    assert redacted["note"] == "abc is fine" and redacted["count"] == 3 and redacted["event"] == "call"


def test_the_configuration_names_its_secrets() -> None:
    servers = [
        ServerConfig(command="x", env={"PGPASSWORD": "pw-123456", "PAGER": "less", "API_KEY": "${secret:api}"}),
        ServerConfig(url="https://x/mcp", headers={"X-Api": "header-value-1"}),
    ]
    assert sorted(configured_secrets(servers)) == ["header-value-1", "pw-123456"]
