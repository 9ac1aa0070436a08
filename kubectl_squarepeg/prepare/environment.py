"""The process's surroundings a command reads, injected instead of read inside its body.

Owns `Environment`: whether stdin is a terminal, the environment variables, the working
directory and the local user's name. `Environment.of_process()` reads them once, at the
command's start; a test gives its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Environment:
    """What a command may know of the process it runs in."""

    stdin_is_tty: bool
    environ: Mapping[str, str]
    cwd: Path | None  # None: it was deleted; whoever needs it says so, as before
    username: str

    @classmethod
    def of_process(cls) -> Environment:
        return cls(
            stdin_is_tty=_isatty(sys.stdin),
            environ=os.environ,
            cwd=_cwd(),
            username=username(os.environ),
        )


def _cwd() -> Path | None:
    try:
        return Path.cwd()
    except OSError:
        return None


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (OSError, ValueError):  # closed
        return False


def username(environ: Mapping[str, str]) -> str:
    """The local user, for the created-by label: getpass, then $USER, then "unknown"."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return str(environ.get("USER") or "unknown")
