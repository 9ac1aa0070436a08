"""squarepeg's own messages on stderr: one line each, prefixed `squarepeg:`.

Owns the stderr lock, so lines written from the log, watch and sweep threads never
interleave, the quiet switch, and the one status line that rewrites itself while a run
waits for its pod (`progress`): only on a terminal and not quiet, erased (`end_progress`)
before anything else is written, so it never stays behind in a scroll-back or a log file.
Container output never passes through here: it goes to stdout as raw bytes (see logs.py).
Also carries the run's event sink (`events`, terminal/eventstream.py), since every part of a
run that says something holds the console: each warning shown is an event too, and with
`--events -` the stream takes stderr's place (`stream_events`).
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, TextIO, cast

if TYPE_CHECKING:
    from kubectl_squarepeg.terminal.eventstream import EventSink

PREFIX = "squarepeg: "


class NullSink:
    """No --events: nothing is encoded or written (terminal/eventstream.py has the sinks
    that write; this one lives here, so that `--help` loads no more than the console)."""

    active = False

    def emit(self, event: str, **fields: Any) -> None:
        pass


class Console:
    """Writes squarepeg's messages; status lines are dropped when quiet."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self._stream = stream
        self.quiet = quiet
        # Reentrant: a signal handler (interrupt.py) runs in the main thread and may print
        # while that thread is itself between taking this lock and writing.
        self._lock = threading.RLock()
        self._progress_shown = False
        self._closed = False
        self._line_end = "\n"
        self.events: EventSink = NullSink()

    def stream_events(self, sink: EventSink, *, instead_of_lines: bool) -> None:
        """Send the run's events to `sink`; `instead_of_lines` (`--events -`, the stream on
        stderr): squarepeg's own lines are not written, so stderr is JSON alone."""
        self.events = sink
        if instead_of_lines:
            self._stream = cast(TextIO, _Discard())

    def terminal_raw(self, raw: bool) -> None:
        """The terminal is raw (`run -it` set it so): no output processing turns a line's
        `\n` into `\r\n` any more, so a line on that terminal ends with both itself."""
        try:
            on_terminal = raw and self._out().isatty()
        except (OSError, ValueError):
            on_terminal = False
        with self._lock:
            self._line_end = "\r\n" if on_terminal else "\n"

    def close(self) -> None:
        """No more lines, from any thread: squarepeg is leaving (an abandoned cleanup), and
        what a thread being torn down would say is not news."""
        with self._lock:
            self._closed = True

    def _out(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    def _put(self, text: str) -> None:
        try:
            stream = self._out()
            stream.write(text)
            stream.flush()
        except (OSError, ValueError):
            pass  # stderr closed: nothing useful left to do with the message

    def _write(self, text: str) -> None:
        with self._lock:
            line = PREFIX + " ".join(text.split()) + self._line_end
            if self._closed:
                return
            self.end_progress()
            self._put(line)

    def progress(self, text: str) -> None:
        """Show `text` as the self-rewriting status line (a terminal only, not quiet)."""
        if self.quiet:
            return
        try:
            terminal = self._out().isatty()
        except (OSError, ValueError):
            terminal = False
        if not terminal:
            return
        with self._lock:
            if self._closed:
                return
            self._progress_shown = True
            self._put("\r\x1b[K" + PREFIX + " ".join(text.split()))

    def end_progress(self) -> None:
        """Erase the status line, if one is shown."""
        with self._lock:
            if self._progress_shown:
                self._progress_shown = False
                self._put("\r\x1b[K")

    def status(self, text: str) -> None:
        """Progress and information; suppressed by --quiet."""
        if not self.quiet:
            self._write(text)

    def notice(self, text: str) -> None:
        """Information the user needs even when quiet (a kept resource's name)."""
        self._write(text)

    def warn(self, text: str) -> None:
        """Something the user should know even when quiet."""
        self._write("warning: " + text)
        if not self._closed:  # an abandoned cleanup's threads have nothing to add
            self.events.emit("warning", message=" ".join(text.split()))

    def error(self, text: str) -> None:
        """The run's failure, always shown."""
        self._write("error: " + text)


class _Discard:
    """stderr's place when the event stream has taken it: lines go nowhere."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False
