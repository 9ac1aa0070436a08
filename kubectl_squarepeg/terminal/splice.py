"""Where the attach's output takes over from the log's in `run -it`: pure, no I/O.

An attach sees only what the container writes after it connected (kubernetes#27264), and
printing the whole log before attaching prints what came in between twice (kubectl#1848).
So the log stream, complete from the first byte, is shown live until it is known where the
attach's bytes begin in it: the longest overlap between the end of what the log showed
(after the attach was launched, when nothing it says can have been written yet) and the
start of what the attach said. From then on the attach alone is the output, less that
overlap. While the log is ahead (it has shown all the attach said), it stays the output;
while it may be behind (nothing matches), the attach's bytes wait, at most
JOIN_WAIT_SECONDS, for it to catch up; if it never joins, the log, complete, was the output.

The log's line ends are not the terminal's. The container's terminal turned each `\\n` into
`\\r\\n` (ONLCR), but containerd logs lines and drops the `\\r` (`kubectl logs` of a tty
container gives `terminal\\n` on the real node), while the user's terminal is raw for the
whole session and adds no `\\r` itself: shown as it is, the log staircases, and its last line
no longer matches the attach's (`after\\n` then `after\\r\\n`, seen in 2 runs of 5). So the
log's bare `\\n` becomes `\\r\\n` (lineends.py) before it is shown and before it is
compared: docs/decisions/0143-it-output-before-the-attach.md.

What no splice can show: a last line the container had not ended when the attach
connected (a shell's first prompt). Container runtimes log whole lines only, so it is in no
log yet, and the attach began after it; it shows again with the next prompt (kubectl says
"If you don't see a command prompt, try pressing enter." for the same reason).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kubectl_squarepeg.terminal.lineends import RawLineEnds

# How long the attach's first bytes may wait for the log to show where they begin. The log
# may be behind (its stream started late: the attach's `line 10` came before the log's
# `line 1` in a test run); what the attach says that no log has yet (a shell's prompt, a
# partial line) cannot be matched, and waits this long before it is shown.
JOIN_WAIT_SECONDS = 1.5
# What is kept of the log's bytes to look for the overlap in.
_SHOWN_KEPT = 256 * 1024


def _overlap(shown: bytes, pending: bytes) -> int:
    """The length of the longest end of `shown` that `pending` begins with."""
    start = max(0, len(shown) - len(pending))
    at = shown.find(pending[:1], start)
    while at != -1:
        if pending.startswith(shown[at:]):
            return len(shown) - at
        at = shown.find(pending[:1], at + 1)
    return 0


class Splice:
    """Feed it both streams (and `tick` now and then); each call returns the bytes to
    write to the terminal now. Not thread-safe: the caller serialises the calls."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, wait_seconds: float = JOIN_WAIT_SECONDS
    ) -> None:
        self._clock = clock
        self._wait_seconds = wait_seconds
        self._shown = bytearray()  # what the log showed since the attach was launched
        self._pending = bytearray()  # what the attach said before it joined
        self._first_at: float | None = None
        self._line_ends = RawLineEnds()
        self.joined = False  # the attach is the output now

    def attach_launched(self) -> None:
        self._shown = bytearray()

    def from_log(self, data: bytes) -> bytes:
        if self.joined:
            return b""
        data = self._line_ends(data)
        self._shown += data
        if len(self._shown) > _SHOWN_KEPT:
            del self._shown[: len(self._shown) - _SHOWN_KEPT]
        return data + self._join()

    def from_attach(self, data: bytes) -> bytes:
        if self.joined:
            return data
        if self._first_at is None:
            self._first_at = self._clock()
        self._pending += data
        return self._join()

    def tick(self) -> bytes:
        """Time has passed: what the attach said may have waited long enough."""
        return b"" if self.joined or not self._pending else self._join()

    def _join(self) -> bytes:
        """The attach's bytes beyond what the log showed, once it is known where they
        begin in it; b"" while that is not known yet."""
        if not self._pending:
            return b""
        shown, pending = bytes(self._shown), bytes(self._pending)
        overlap = _overlap(shown, pending)
        if 0 < overlap < len(pending):
            return self._become_joined(pending[overlap:])
        if overlap == len(pending) or pending in shown:
            return b""  # the log is ahead: it shows all of it, and the attach goes on
        assert self._first_at is not None
        if self._clock() - self._first_at < self._wait_seconds:
            return b""  # the log may be behind
        return self._become_joined(pending)

    def _become_joined(self, rest: bytes) -> bytes:
        self.joined = True
        self._shown, self._pending = bytearray(), bytearray()
        return rest
