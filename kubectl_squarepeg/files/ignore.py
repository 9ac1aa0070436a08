""".squarepegignore: the paths of a SRC directory that are not uploaded.

Owns the file's grammar, a subset of gitignore's (docs/decisions/0180): one pattern a line,
`#` comments and blank lines skipped, `!` re-includes, a trailing `/` matches directories
only, a pattern with a `/` before its end is anchored at SRC (a leading `/` too), one without
matches a name at any depth; `*` and `?` stop at `/`, `**` crosses directories, `[...]` is a
class. The last matching line wins; an excluded directory is not entered, so nothing under
it can be re-included (as in git). `.dockerignore` is not read: it describes what a build
context leaves out, which is often exactly what a run mounts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

IGNORE_FILE = ".squarepegignore"


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    negated: bool
    directories_only: bool


def _translate(glob: str) -> str:
    """A gitignore glob (without its anchor and trailing `/`) as a regular expression."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif glob[i] == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


class IgnoreRules:
    """The rules of one ignore file; `ignored(path, is_dir)` with `path` relative to SRC,
    `/`-separated."""

    def __init__(self, lines: Iterable[str]) -> None:
        self._rules: list[_Rule] = []
        for raw in lines:
            line = raw.rstrip("\n").rstrip("\r")
            if line.endswith(" ") and not line.endswith("\\ "):
                line = line.rstrip(" ")
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            line = line[1:] if negated else line.removeprefix("\\")
            directories_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            body = _translate(line.lstrip("/"))
            regex = body if anchored else f"(?:.*/)?{body}"
            pattern = re.compile(regex + r"\Z", re.DOTALL)
            self._rules.append(_Rule(pattern, negated, directories_only))

    def __bool__(self) -> bool:
        return bool(self._rules)

    def ignored(self, path: str, is_dir: bool) -> bool:
        verdict = False
        for rule in self._rules:
            if rule.directories_only and not is_dir:
                continue
            if rule.pattern.match(path):
                verdict = not rule.negated
        return verdict


def read_rules(text: str) -> IgnoreRules:
    return IgnoreRules(text.splitlines())
