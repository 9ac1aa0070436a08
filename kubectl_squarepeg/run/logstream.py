"""A log stream as the follower (logs.py) sees it, and what it does when one fails.

Owns the `Stream` protocol (a running `kubectl get --raw` of the log API: kubectl.Child, or
a test's fake) and `StartStream`, which starts one; the failure's reason as kubectl gave it
(`reason`); the sorting of reasons into those another attempt may fix and those it cannot
(`retryable`: a denial or a 404 is final, a container still starting is not);
and `Backoff`, when to reconnect and when to give up. The completeness check (logcheck.py)
starts its request through the follower's `StartStream` too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubectl_squarepeg.cluster import kubectl

# kubectl's complaints that another attempt cannot fix.
_FINAL = ("forbidden", "unauthorized", "must be logged in", "not found")


@dataclass(frozen=True)
class Backoff:
    """When to reconnect, and when to give up."""

    attempts: int = 5  # reconnects in a row without progress
    first_seconds: float = 0.5  # the first wait; each next one doubles
    max_seconds: float = 8.0
    # A stream that stayed up this long counts as progress even if the container was silent,
    # so a proxy that closes idle streams now and then never exhausts the attempts.
    stable_seconds: float = 10.0

    def delay(self, attempt: int) -> float:
        return float(min(self.max_seconds, self.first_seconds * 2 ** (attempt - 1)))


class Stream(Protocol):
    """What the follower needs of a running log stream (a kubectl.Child)."""

    @property
    def stderr(self) -> bytes: ...
    def wait(self, timeout: float | None = None) -> int | None: ...
    def terminate(self) -> None: ...


StartStream = Callable[[Sequence[str], Callable[[bytes], None]], Stream]


def retryable(reason: str) -> bool:
    """Whether another attempt may succeed where kubectl failed with `reason`.

    A container still starting (400 "is waiting to start") is retryable: it will start.
    """
    lowered = reason.lower()
    return not any(word in lowered for word in _FINAL)


def reason(stream: Stream, code: int) -> str:
    """Why `stream` failed with exit code `code`: kubectl's words on its stderr."""
    return kubectl.Result((), code, b"", stream.stderr).error_text
