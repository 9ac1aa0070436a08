"""YAML text of plain data (dicts, lists, strings, numbers, booleans, None): the dry-run
manifest and `config view`.

Owns the output form: block style in insertion order, a list inside a mapping at the key's
column (as PyYAML and kubectl write it), never an anchor or alias, a multi-line string as a
`|` block, and an optional comment at the end of each value's line (`config view
--show-origin`). Written here rather than with PyYAML because importing PyYAML costs a dry
run more than all of this module's work (scripts/bench-dry-run); tests load every output
back with PyYAML to show nothing changes in the round trip.

Quoting is deliberately conservative: a string is written plain only when no YAML 1.1 or
1.2 reader (PyYAML, go-yaml, so kubectl) could take it for anything but that string.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Path = tuple[str, ...]
Comment = Callable[[Path], str | None]
Segment = Callable[[Sequence[Any], int], str]

# Plain: letters, digits and a few marks; no leading mark that starts YAML syntax.
_PLAIN = r"[A-Za-z0-9_/][A-Za-z0-9_./@%+=,:-]*"
# Words YAML 1.1 reads as booleans or null, in any case.
_SPECIAL_WORDS = frozenset({"y", "yes", "n", "no", "true", "false", "on", "off", "null", "~"})
# A string starting with a digit is a number or a date to some reader unless it has a letter
# that no number or timestamp form uses (hex a-f, e exponent, 0x/0o/0b, T and Z of dates).
_NOT_NUMERIC_LETTER = r"[g-np-su-wyG-NP-SU-WY]"
# Characters that may not appear raw in a plain, single-quoted or block scalar: C0/C1
# controls (tab aside), and what YAML 1.1 reads as line breaks (NEL, LS, PS) or a BOM.
_UNPRINTABLE = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]"
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _plain_ok(text: str) -> bool:
    if not re.fullmatch(_PLAIN, text) or text.lower() in _SPECIAL_WORDS:
        return False
    if ": " in text or text.endswith(":"):
        return False
    if re.fullmatch(r"\d+(\.\d+){2,}", text):
        return True  # an IP address or a version: two dots make it no number
    if re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", text):
        return True  # a UUID (a run id) is no number or date, whatever it starts with
    return not text[0].isdigit() or re.search(_NOT_NUMERIC_LETTER, text) is not None


def _double_quoted(text: str) -> str:
    def escape(match: re.Match[str]) -> str:
        char = match[0]
        return _ESCAPES.get(char) or f"\\u{ord(char):04x}"

    return '"' + re.sub(r'[\\"\n\t\r]|' + _UNPRINTABLE, escape, text) + '"'


def scalar(value: Any) -> str:
    """One value (or key) as YAML text on one line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return ".nan"
        if value in (float("inf"), float("-inf")):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        # YAML 1.1 wants a dot in every float: 1e-07 -> 1.0e-07.
        return text if "." in text or "e" not in text else text.replace("e", ".0e", 1)
    if isinstance(value, Mapping) and not value:
        return "{}"
    if isinstance(value, (list, tuple)) and not value:
        return "[]"
    text = str(value)
    if _plain_ok(text):
        return text
    if "\n" in text or re.search(_UNPRINTABLE, text):
        return _double_quoted(text)
    return "'" + text.replace("'", "''") + "'"


def _literal_ok(value: Any) -> bool:
    return (
        isinstance(value, str)
        and "\n" in value
        and bool(value.strip())
        and "\r" not in value
        and re.search(_UNPRINTABLE, value) is None
    )


def _literal(text: str, column: int) -> tuple[str, list[str]]:
    """The `|` header and the indented lines of a block literal at `column`."""
    stripped = text.rstrip("\n")
    trailing = len(text) - len(stripped)
    chomp = "-" if trailing == 0 else "" if trailing == 1 else "+"
    # Content that starts with a space or a blank line needs its indentation said, not guessed.
    indicator = "2" if stripped[:1] in (" ", "\n") else ""
    pad = " " * (column + 2)
    body = [pad + line if line else "" for line in stripped.split("\n")]
    body += [""] * (trailing - 1 if trailing > 1 else 0)
    return f"|{indicator}{chomp}", body


def dump(
    doc: Any,
    *,
    comment: Comment | None = None,
    segment: Segment | None = None,
) -> str:
    """Block YAML of `doc`. `comment(path)` may give a comment for each value's line; list
    items appear in paths as `segment(items, index)` (default: the index)."""
    lines: list[str] = []

    def note(path: Path) -> str:
        text = comment(path) if comment is not None else None
        return f"  # {text}" if text else ""

    def item_segment(items: Sequence[Any], index: int) -> str:
        return segment(items, index) if segment is not None else str(index)

    def value_lines(head: str, value: Any, path: Path, column: int) -> None:
        # `head` is everything before the value on its line ("key:" or "- "), at `column`.
        if isinstance(value, Mapping) and value:
            if head.endswith("- "):
                mapping(value, path, column + 2, head)
            else:
                lines.append(head + note(path))
                mapping(value, path, column + 2, " " * (column + 2))
        elif isinstance(value, (list, tuple)) and value:
            if head.endswith("- "):
                sequence(value, path, column + 2, head)
            else:
                lines.append(head + note(path))
                sequence(value, path, column, " " * column)
        elif _literal_ok(value):
            header, body = _literal(value, column)
            lines.append(f"{head.rstrip()} {header}{note(path)}")
            lines.extend(body)
        else:
            lines.append(f"{head.rstrip()} {scalar(value)}{note(path)}")

    def mapping(value: Mapping[Any, Any], path: Path, column: int, first: str) -> None:
        for index, (key, child) in enumerate(value.items()):
            start = first if index == 0 else " " * column
            value_lines(f"{start}{scalar(key)}:", child, (*path, str(key)), column)

    def sequence(items: Sequence[Any], path: Path, column: int, first: str) -> None:
        for index, item in enumerate(items):
            start = first if index == 0 else " " * column
            value_lines(f"{start}- ", item, (*path, item_segment(items, index)), column)

    if isinstance(doc, Mapping) and doc:
        mapping(doc, (), 0, "")
    elif isinstance(doc, (list, tuple)) and doc:
        sequence(doc, (), 0, "")
    else:
        value_lines("", doc, (), 0)
        lines[-1] = lines[-1].lstrip()
    return "\n".join(lines) + "\n"
