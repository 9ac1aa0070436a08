"""The two table-driven tests every value parser's test module shares.

A module lists its parsers' accepted forms (`GOOD`: parser, text, the value it gives) and
refused forms (`BAD`: parser, text, a piece of the hint), and makes both tests with
`test_accepted_forms, test_refused_forms_say_the_accepted_form = table_tests(GOOD, BAD)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from kubectl_squarepeg.plan.values import ValueProblem

Parser = Callable[[str], Any]


def table_tests(
    good: Sequence[tuple[Parser, str, Any]], bad: Sequence[tuple[Parser, str, str]]
) -> tuple[Callable[..., None], Callable[..., None]]:
    """The tests of `good` (each text parses to its value) and `bad` (each text raises a
    `ValueProblem` whose text holds the hint)."""

    @pytest.mark.parametrize(("parse", "text", "expected"), good)
    def test_accepted_forms(parse: Parser, text: str, expected: Any) -> None:
        assert parse(text) == expected

    @pytest.mark.parametrize(("parse", "text", "hint"), bad)
    def test_refused_forms_say_the_accepted_form(parse: Parser, text: str, hint: str) -> None:
        with pytest.raises(ValueProblem) as caught:
            parse(text)
        assert hint in str(caught.value)

    return test_accepted_forms, test_refused_forms_say_the_accepted_form
