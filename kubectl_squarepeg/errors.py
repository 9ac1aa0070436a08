"""The error hierarchy: every failure squarepeg reports is one of these.

Domain code raises them; only `cli/app.py` turns them into a line on stderr and an exit code.
Each carries what went wrong (`message`, which names where: a flag, a file:line, a
resource) and how to fix it (`hint`). This module imports nothing.
"""

from __future__ import annotations

# A run stopped by its deadline (activeDeadlineSeconds), as timeout(1) exits (decision 0320).
DEADLINE_EXCEEDED = 124
RUNNER_FAILED = 125
INTERRUPTED = 130
# A writer whose reader went away ends as if by SIGPIPE, as `yes | head -1` does.
READER_GONE = 128 + 13


class SquarepegError(Exception):
    """A failure of squarepeg itself, reported as one line and an exit code."""

    exit_code: int = RUNNER_FAILED

    def __init__(self, message: str, hint: str | None = None, exit_code: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def one_line(self) -> str:
        """The text after the `squarepeg: ` prefix: what, where, and how to fix it."""
        text = " ".join(self.message.split())
        if self.hint:
            text += "; " + " ".join(self.hint.split())
        return text


class UsageError(SquarepegError):
    """A bad flag, flag value or combination of flags."""


class ConfigError(SquarepegError):
    """A config file that cannot be read, parsed, interpolated, validated or applied."""


class ClusterError(SquarepegError):
    """The cluster could not be reached, or refused or lost what squarepeg asked of it."""


class KubectlMissing(ClusterError):
    """No `kubectl` executable on PATH."""


class StartupError(ClusterError):
    """The container failed to start, or did not start within --timeout."""


class ReaderGone(SquarepegError):
    """stdout was closed by its reader (`run ... | head -1`): the run stops, quietly."""


class Interrupted(SquarepegError):
    """The run was interrupted by Ctrl-C or SIGTERM."""

    exit_code = INTERRUPTED
