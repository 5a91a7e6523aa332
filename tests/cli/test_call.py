"""How `hub call` puts an error on one line (hub.cli.call.one_line)."""

from __future__ import annotations

from hub.cli.call import one_line

PYDANTIC = """Error executing tool get_current_time: 2 validation errors for get_current_timeArguments
timezone
  Field required [type=missing, input_value={}, input_type=dict]
    For further information visit https://errors.pydantic.dev/2.14/v/missing
extra
  Extra inputs are not permitted [type=extra_forbidden, input_value=1, input_type=int]
    For further information visit https://errors.pydantic.dev/2.14/v/extra_forbidden
"""


def test_a_pydantic_dump_becomes_field_and_message() -> None:
    assert one_line(PYDANTIC) == (
        "Error executing tool get_current_time: 2 validation errors for get_current_timeArguments; "
        "timezone: Field required; extra: Extra inputs are not permitted"
    )


def test_other_messages_keep_their_lines_joined() -> None:
    assert one_line("first\n\n  second  \n") == "first; second"
    assert one_line("one line") == "one line"
