"""The output of `run -i` without `-t` on its way to stdout: the log follower's bytes and the
attach's two streams meet here, and what run/exactlines.py makes of them is written, in
order, under one lock (docs/decisions/0422-exact-bytes-under-i.md).

Owns that lock, the thread that lets a line end stop waiting for the attach once its time
is up (a condition's timed wait, not a poll), and the end: `close` writes whatever still
waits, after which the log's bytes go straight through. A write to stdout that fails (its
reader went away) is raised to the log follower at its next write, as its own write would
have raised it, so `| head -1` still ends the run as it did.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import BinaryIO

from kubectl_squarepeg.run.exactlines import ExactLines

STDOUT, STDERR = 1, 2


class ExactOut:
    """The log follower's `out` for `run -i` without `-t`; `attach_stream(n)` is the
    callback for the attach's stdout (1) or stderr (2).

    Two locks: `_lock` guards the matcher and the bytes it made ready, in order, and is
    never held while writing; `_write_lock` lets one thread at a time write them. The
    attach's callbacks only feed the matcher and never write: a stdout that is slow to read
    holds back the log follower, as it always did, but never kubectl attach, which would
    hold back the container's own writes."""

    def __init__(self, out: BinaryIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._out = out
        self._clock = clock
        self._lines = ExactLines(clock)
        self._ready: list[bytes] = []
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._write_lock = threading.Lock()
        self._closed = False
        self._failure: Exception | None = None
        self._thread = threading.Thread(target=self._wait_out, name="exact-out", daemon=True)
        self._thread.start()

    @property
    def restored(self) -> int:
        """Line ends written as `\\r\\n` where the log had `\\n`."""
        with self._lock:
            return self._lines.restored

    def write(self, data: bytes) -> int:
        with self._lock:
            self._add(self._lines.from_log(data))
            if self._closed:
                self._add(self._lines.flush())
            self._changed.notify()  # a line end may wait now: the thread's next deadline
        self._write_ready()
        if self._failure is not None:
            raise self._failure
        return len(data)

    def flush(self) -> None:
        """Every write is flushed as it is made."""

    def attach_stream(self, stream: int) -> Callable[[bytes], None]:
        def take(chunk: bytes) -> None:
            with self._lock:
                if self._add(self._lines.from_attach(chunk, stream)):
                    self._changed.notify()

        return take

    def attach_ended(self) -> None:
        with self._lock:
            self._add(self._lines.attach_ended())
            self._changed.notify()

    def close(self, seconds: float = 5.0) -> None:
        """The end (or a stop): what waits is written now, within `seconds` (a stdout
        nobody reads must not hold the run); the thread ends."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._add(self._lines.flush())
            self._changed.notify()
        self._thread.join(seconds)

    def _add(self, data: bytes) -> bool:
        if data:
            self._ready.append(data)
        return bool(data)

    def _write_ready(self) -> None:
        with self._write_lock:
            while True:
                with self._lock:
                    data = b"".join(self._ready)
                    self._ready.clear()
                if not data:
                    return
                if self._failure is None:
                    try:
                        self._out.write(data)
                        self._out.flush()
                    except (OSError, ValueError) as exc:
                        self._failure = exc

    def _wait_out(self) -> None:
        """Writes what the attach made ready, and line ends whose wait is over."""
        while True:
            with self._changed:
                if not self._ready and not self._closed:
                    deadline = self._lines.deadline()
                    timeout = None if deadline is None else max(0.0, deadline - self._clock())
                    self._changed.wait(timeout)
                self._add(self._lines.tick())
                closed = self._closed
            self._write_ready()
            if closed:
                return
