"""`${VAR}`, `${VAR:-default}` and `$$` in config string values: pure.

The result is not interpolated again, and a `$` followed by anything else stays as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_DOLLAR = re.compile(r"\$(\$|\{[^}]*\}|\{)")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Unset(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class BadReference(Exception):
    pass


def interpolate(text: str, environ: Mapping[str, str]) -> str:
    """`${VAR}`, `${VAR:-default}` and `$$`; the result is not interpolated again.

    A `$` followed by anything else is kept as it is. Raises `Unset` for an unset VAR
    without a default and `BadReference` for a `${...}` that is not one of these forms.
    """

    def substitute(match: re.Match[str]) -> str:
        body = match[1]
        if body == "$":
            return "$"
        if body == "{":
            raise BadReference("${ without a closing }")
        name, has_default, default = body[1:-1].partition(":-")
        if not _VARIABLE.fullmatch(name):
            raise BadReference(f"${body}")
        value = environ.get(name)
        if has_default:
            return value if value else default
        if value is None:
            raise Unset(name)
        return value

    return _DOLLAR.sub(substitute, text)
