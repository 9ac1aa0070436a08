"""The output of `run -i` without `-t`: the log's bytes, with the `\\r`s the runtime dropped
put back from the attach. Pure: no I/O, no process, no thread (an import-linter contract in
pyproject.toml keeps it so); run/exactout.py feeds it and writes what it returns.

Why (docs/decisions/0422-exact-bytes-under-i.md). containerd's CRI logger reads lines and
drops a `\\r` before each `\\n` (`printf 'a\\r\\nb'` is logged `a\\nb`), and that is all it
changes: a line cut at 16 KiB is rejoined by the kubelet byte for byte, a `\\r` elsewhere is
kept. A non-tty `run -i` has an attach open anyway (it feeds stdin), and the attach has the
container's exact bytes, but only from the moment it connected, and only until it drops; the
log has everything from byte 1 and survives drops. So the log stays the authority on what
was written and in which order, and the attach answers one question per line of it: did
this line end in `\\r\\n`?

How. Both sides are cut into lines. A line is known by its signature: its length and a
digest of its bytes as the log keeps them (a `\\r` before the `\\n` dropped), so neither side
holds whole lines (a 100 MB line without a newline costs nothing). For each `\\n` of the log,
in order, the first attach line (stdout's or stderr's: the log merges the two, the attach
keeps them apart) with the same signature decides: its `\\r\\n` is written if it had one.
Attach lines ahead of the match in the same stream are dropped: they are kubectl's own words
(its warnings go to the same stderr as the container's) or lines whose log line was decided
without them. A log `\\n` that no attach line matches waits at most `wait_seconds` from its
arrival (the attach may lag the log by a moment), and not at all once the attach has ended,
then is written as the log has it: what the attach never saw (before it connected, after it
dropped) comes as the log has it, as before. A line's bytes before its `\\n` are the same on
both sides, so they are written as soon as nothing before them waits: only line ends wait.
Bytes only the attach has are never written.

What it cannot restore: the `\\r` of a line the attach saw only in part (it connected in the
middle of it), and of lines written while the attach was away. A line that appears twice
may take the other's ending when the attach missed one of them.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Callable

# How long a line end of the log waits for the attach's copy of its line.
WAIT_SECONDS = 1.0
# Attach lines kept unmatched, per stream (kubectl's words, lines the log passed without
# them): a bound, not a size any run should reach.
_KEPT_LINES = 100_000
# How deep the search goes into a stream's unmatched attach lines.
_SEARCH_DEPTH = 1_000

Signature = tuple[int, bytes]


class _LineHash:
    """The signature of the line being read, built as its bytes arrive."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._digest = hashlib.blake2b(digest_size=16)
        self._length = 0

    def update(self, data: bytes) -> None:
        if data:
            self._digest.update(data)
            self._length += len(data)

    def take(self) -> Signature:
        """The line has ended: its signature; the next line starts empty."""
        signature = (self._length, self._digest.digest())
        self._reset()
        return signature


class _AttachLines:
    """One of the attach's streams, as the signatures of its lines and whether each ended
    in `\\r\\n`. A `\\r` at a chunk's end is held until the next byte says what it is."""

    def __init__(self) -> None:
        self.lines: deque[tuple[Signature, bool]] = deque()
        self._hash = _LineHash()
        self._held_cr = False

    def feed(self, data: bytes) -> None:
        if self._held_cr and data:
            self._held_cr = False
            if data[0] != 0x0A:
                self._hash.update(b"\r")
            else:
                self._add(self._hash.take(), crlf=True)
                data = data[1:]
        start = 0
        while (end := data.find(b"\n", start)) != -1:
            crlf = end > start and data[end - 1] == 0x0D
            self._hash.update(data[start : end - 1 if crlf else end])
            self._add(self._hash.take(), crlf=crlf)
            start = end + 1
        rest = data[start:]
        if rest.endswith(b"\r"):
            rest, self._held_cr = rest[:-1], True
        self._hash.update(rest)

    def _add(self, signature: Signature, *, crlf: bool) -> None:
        self.lines.append((signature, crlf))
        if len(self.lines) > _KEPT_LINES:
            self.lines.popleft()

    def take(self, signature: Signature, depth: int) -> bool | None:
        """Whether the first line with `signature` (within `depth`) ended in `\\r\\n`, that
        line and the ones before it gone; None when there is none."""
        for at, (seen, crlf) in enumerate(self.lines):
            if at >= depth:
                return None
            if seen == signature:
                for _ in range(at + 1):
                    self.lines.popleft()
                return crlf
        return None


class ExactLines:
    """Feed it the log's bytes (`from_log`), the attach's (`from_attach`, stream 1 or 2),
    and `tick` by `deadline()`; each call returns the bytes to write now, in order.
    `attach_ended` once the attach has ended; `flush` at the end. Not thread-safe: the
    caller serialises the calls."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, wait_seconds: float = WAIT_SECONDS
    ) -> None:
        self._clock = clock
        self._wait_seconds = wait_seconds
        # The log's ended lines whose `\n` is not written yet: the bytes before that `\n`
        # not written yet, the line's signature, when its `\n` arrived.
        self._waiting: deque[tuple[bytes, Signature, float]] = deque()
        self._rest = bytearray()  # of the line not ended yet, the bytes not written yet
        self._line = _LineHash()
        self._attach = {1: _AttachLines(), 2: _AttachLines()}
        self._attach_open = True
        self.restored = 0  # line ends written as `\r\n` where the log had `\n`

    def from_log(self, data: bytes) -> bytes:
        now = self._clock()
        start = 0
        while (end := data.find(b"\n", start)) != -1:
            self._line.update(data[start:end])
            self._rest += data[start:end]
            self._waiting.append((bytes(self._rest), self._line.take(), now))
            self._rest.clear()
            start = end + 1
        self._line.update(data[start:])
        self._rest += data[start:]
        return self._settle(now)

    def from_attach(self, data: bytes, stream: int) -> bytes:
        self._attach[stream].feed(data)
        return self._settle(self._clock())

    def attach_ended(self) -> bytes:
        self._attach_open = False
        return self._settle(self._clock())

    def tick(self) -> bytes:
        return self._settle(self._clock())

    def flush(self) -> bytes:
        """The end: every line end decided with what the attach said so far."""
        return self._settle(self._clock(), final=True)

    def deadline(self) -> float | None:
        """When the first waiting line end stops waiting; None: nothing waits."""
        if not self._waiting or not self._attach_open:
            return None
        return self._waiting[0][2] + self._wait_seconds

    def _settle(self, now: float, *, final: bool = False) -> bytes:
        out: list[bytes] = []
        waiting = self._waiting
        while waiting:
            before, signature, arrived = waiting[0]
            if before:
                out.append(before)  # the same on both sides: it need not wait
                waiting[0] = (b"", signature, arrived)
            crlf = self._take(signature)
            if crlf is None:
                may_wait = self._attach_open and now - arrived < self._wait_seconds
                if may_wait and not final:
                    break
                crlf = False
            if crlf:
                self.restored += 1
            out.append(b"\r\n" if crlf else b"\n")
            waiting.popleft()
        if not waiting and self._rest:
            out.append(bytes(self._rest))
            self._rest.clear()
        return b"".join(out)

    def _take(self, signature: Signature) -> bool | None:
        for depth in (1, _SEARCH_DEPTH):  # the streams' next lines first, then deeper
            for lines in self._attach.values():
                crlf = lines.take(signature, depth)
                if crlf is not None:
                    return crlf
        return None
