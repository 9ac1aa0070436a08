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
    callback for the attach's stdout (1) or stderr (2)."""

    def __init__(self, out: BinaryIO, clock: Callable[[], float] = time.monotonic) -> None:
        self._out = out
        self._clock = clock
        self._lines = ExactLines(clock)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
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
            ready = self._lines.from_log(data)
            if self._closed:
                ready += self._lines.flush()
            self._emit(ready)
            self._changed.notify()
            if self._failure is not None:
                raise self._failure
        return len(data)

    def flush(self) -> None:
        """Every write is flushed as it is made."""

    def attach_stream(self, stream: int) -> Callable[[bytes], None]:
        def take(chunk: bytes) -> None:
            with self._lock:
                self._emit(self._lines.from_attach(chunk, stream))

        return take

    def attach_ended(self) -> None:
        with self._lock:
            self._emit(self._lines.attach_ended())

    def close(self) -> None:
        """The end (or a stop): what waits is written now; the thread ends."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._emit(self._lines.flush())
            self._changed.notify()
        self._thread.join(1.0)

    def _emit(self, data: bytes) -> None:
        if not data or self._failure is not None:
            return
        try:
            self._out.write(data)
            self._out.flush()
        except (OSError, ValueError) as exc:
            self._failure = exc

    def _wait_out(self) -> None:
        with self._changed:
            while not self._closed:
                deadline = self._lines.deadline()
                timeout = None if deadline is None else max(0.0, deadline - self._clock())
                self._changed.wait(timeout)
                self._emit(self._lines.tick())
