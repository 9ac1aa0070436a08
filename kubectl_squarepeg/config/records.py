"""The records configuration is made of: where a value came from (Origin), one
`kubernetes.patches` operation (Patch), one file's validated keys (Layer), and a config file
found with its trust (FoundFile). Data only, shared by validate.py, merge.py and files.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubectl_squarepeg.config.reader import file_line
from kubectl_squarepeg.config.trust import Verdict

OriginPath = tuple[str, ...]


@dataclass(frozen=True)
class Origin:
    """Where a value came from: a file and line, or the built-in defaults (`path` None)."""

    path: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.path is None:
            return "default"
        return f"{self.path}:{self.line}" if self.line else self.path


DEFAULT = Origin()


@dataclass(frozen=True)
class Patch:
    """One `kubernetes.patches` operation (claims.PatchOp), with where it was written."""

    op: Mapping[str, Any]
    source: str
    line: int
    index: int  # its position in its own file's list

    @property
    def origin(self) -> str:
        return file_line(self.source, self.line)


@dataclass
class Layer:
    """One file's keys, validated: parsed values, their display form, and their lines."""

    source: str
    parsed: dict[str, Any] = field(default_factory=dict)  # None: reset to the default
    display: dict[str, Any] = field(default_factory=dict)
    lines: dict[OriginPath, int] = field(default_factory=dict)
    kubernetes: dict[str, Any] = field(default_factory=dict)  # metadata/spec/patches or None


@dataclass(frozen=True)
class FoundFile:
    """A config file that exists, its layer, and (project files only) its trust."""

    path: str
    why: str
    verdict: Verdict | None = None  # None: a layer that needs no trust

    @property
    def used(self) -> bool:
        return self.verdict in (None, Verdict.TRUSTED)

    def describe(self) -> str:
        """`PATH (user)`, `PATH (project, trusted)`, `PATH (project, not trusted: not used)`."""
        if self.verdict is None:
            return f"{self.path} ({self.why})"
        if self.used:
            return f"{self.path} ({self.why}, {self.verdict.value})"
        return f"{self.path} ({self.why}, {self.verdict.value}: not used)"
