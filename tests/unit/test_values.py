"""The common forms of plan/values.py: KEY=VALUE, env files, switches, the mode, the command."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_squarepeg.plan import values
from kubectl_squarepeg.plan.values import ValueProblem
from tests.unit.parser_tables import Parser, table_tests

GOOD: list[tuple[Parser, str, Any]] = [
    (values.parse_mode, "job", "job"),
    (values.parse_mode, "Pod", "pod"),
    (values.parse_bool, "yes", True),
    (values.parse_bool, "False", False),
    (values.parse_entrypoint, "", ""),
    (values.parse_workdir, "/app", "/app"),
    (values.parse_nonempty, "x", "x"),
    (values.parse_key_value, "A=b=c", ("A", "b=c")),
    (values.parse_key_value, "A=", ("A", "")),
]
BAD: list[tuple[Parser, str, str]] = [
    (values.parse_entrypoint, "  ", 'or "" to reset the entrypoint'),
    (values.parse_mode, "deamon", "use pod or job"),
    (values.parse_bool, "maybe", "use true or false"),
    (values.parse_workdir, "app", "must be an absolute path"),
    (values.parse_nonempty, " ", "give a non-empty value"),
    (values.parse_key_value, "A", "use KEY=VALUE"),
    (values.parse_key_value, "=b", "the key before '=' is empty"),
]
test_accepted_forms, test_refused_forms_say_the_accepted_form = table_tests(GOOD, BAD)


def test_env_item_bare_key_takes_the_local_value_or_is_skipped() -> None:
    environ = {"HOME": "/home/a", "EMPTY": ""}
    assert values.parse_env_item("A=1", environ) == ("A", "1")
    assert values.parse_env_item("A==x", environ) == ("A", "=x")
    assert values.parse_env_item("HOME", environ) == ("HOME", "/home/a")
    assert values.parse_env_item("EMPTY", environ) == ("EMPTY", "")
    assert values.parse_env_item("UNSET", environ) is None
    with pytest.raises(ValueProblem, match="is not a variable name"):
        values.parse_env_item("=x", environ)


def test_env_file_is_docker_format() -> None:
    text = '\ufeff# a comment\n\nA=1\n   B=two words  \nC="quoted"\nBARE\nD=\nE=x=y\n'
    assert values.parse_env_file_text(text) == [
        ("A", "1"),
        ("B", "two words  "),
        ("C", '"quoted"'),
        "BARE",
        ("D", ""),
        ("E", "x=y"),
    ]


@pytest.mark.parametrize(("text", "line"), [("A=1\n=2\n", 2), ("A B=1\n", 1)])
def test_env_file_errors_name_the_line(text: str, line: int) -> None:
    with pytest.raises(ValueProblem, match=f"line {line} has no valid variable name"):
        values.parse_env_file_text(text)
