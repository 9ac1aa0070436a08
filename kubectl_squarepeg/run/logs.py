"""The log follower: the container's output, as raw bytes, to stdout, across dropped streams.

Owns the follow stream of one container's log (`verbs.log_request`: the request
`kubectl logs -f --timestamps` sends, made with `kubectl get --raw`), taking the timestamps
off, writing the content bytes untouched (binary, ANSI, `\\r`, a partial line as soon as it
arrives), and reconnecting when the stream drops, with exponential backoff, so that nothing
is lost and nothing is repeated. Never decodes container output and never writes anything of
its own to stdout: its messages go to stderr through the console.

Two halves. `LogDecoder` is pure (bytes in, bytes out, no I/O) and holds the resume point.
`LogFollower` drives kubectl (through `kubectl.start`) on a background thread.

Resuming (the spec left the method open; stern's is used). The log API resumes by time only,
and its `sinceTime` has one-second resolution, so a reconnect replays from the start of the
second of the last line written. The decoder remembers that second, how many
lines it started in that second, and how many content bytes of the last line it wrote if the
stream dropped mid-line. In the replay it drops every line of an earlier second, the lines of
that second it has already counted (identical timestamps are just more lines in the count),
and of the last one only the bytes already written. Lines are counted per second rather than
matched by exact timestamp because the order of lines is what the log keeps; timestamps
within a second need not be increasing. A line whose prefix is not a timestamp is not the
container's: the kubelet writes every log line with one, and its own error into a body it
has begun with status 200 (`failed to try resolving symlinks in path ".../0.log"`, kubectl
exiting 0), so such text is never written: the stream counts as failed with it as the reason.

Complete (docs/decisions/0120, 0200). A clean end of the stream proves nothing: the real
kubelet ends a follow cleanly at a log rotation, with the container still writing or not. So
once the container's end is known (`finish()`), every request is a plain read (no follow)
from the resume point, repeated until one brings nothing new; only that ends the follower.
Which kind a request is, is decided just before it starts: one sent after the end was known
reads a log that no longer changes, so a quick container's first request can be the proof.
The cheap check (the log's last line, `tailLines=1`, compared with the last line written) is
made once, after a stream that brought output ended cleanly and the end is known. Starting
it beside a stream still open at the end was measured and dropped (decision 0200).

Rotation. The kubelet renames a container's log file once it exceeds containerLogMaxSize
(10 MiB of CRI log by default, about 40 bytes a line more than the output), looking every
10 s, and serves only the current file. A resume whose replay shows the log beginning after
the resume point's line (its first line of the resume second is later, or nothing at all
comes) met a rotation. After a clean end within ROTATION_CHECK_SECONDS, that is the
continuation: the kubelet turns to the next file only at the end of the one it read. After
a cut (or long after), what the stream did not deliver of the rotated file is gone: the
follower says where on stderr (line and byte of the output) and sets `lost`, and the runner
exits 125 unless --keep. What was rotated before the first request cannot be seen missing
through the API: the runner asks the node's files (loghead.py), for which the follower
tells it of the first line. What containerd wrote in the instant between the kubelet's
rename and its reopen is not seen at all.
"""

from __future__ import annotations

import errno
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from kubectl_squarepeg.cluster import kubectl, verbs
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.target import DEFAULT_NAMESPACE
from kubectl_squarepeg.errors import SquarepegError
from kubectl_squarepeg.terminal.console import Console

# RFC3339Nano is at most 35 bytes ("2026-12-02T19:00:00.123456789+00:00"); a line whose first
# space comes later than this has no timestamp.
_MAX_TIMESTAMP = 40
_SECOND = 19  # len("2026-12-02T19:00:00"): the part --since-time keeps
_SKIP_ALL = -1
# A line break, then a timestamp as the kubelet writes it (RFC 3339, UTC, up to nine
# fraction digits) and its space: what LogDecoder._bulk strips. Starting with a literal
# newline rather than `^` lets the regex engine skip from one newline to the next: twice as
# fast over a large block.
_STAMP_AFTER_NEWLINE = re.compile(rb"\n\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z ")
# What a stream cut inside a timestamp leaves held back.
_TIMESTAMP_START = re.compile(rb"[0-9TZ:.+-]{1,39}")
# Chunks smaller than this go line by line: the bulk path's bookkeeping would not pay.
_BULK_MIN_BYTES = 4096
# A pipe holds 64 KiB; reading more at once lets a fast stream arrive in fewer, larger chunks.
READ_BYTES = 128 * 1024
# The kubelet looks at log sizes this often (containerLogMonitorInterval, default 10 s), so
# it rotates a container's log at most once in that time: a resume within it meets at most
# the one rotation that ended the stream before (see "Rotation").
ROTATION_CHECK_SECONDS = 10.0
# The cheap check at the end compares a last line of at most this many bytes, and waits
# this long for its answer.
_PROBE_LINE_BYTES = 64 * 1024
_PROBE_SECONDS = 10.0
# How much of a text without timestamps (the kubelet's error, take_refusal) is kept.
_REFUSAL_BYTES = 1000
# kubectl's complaints that another attempt cannot fix.
_FINAL = ("forbidden", "unauthorized", "must be logged in", "not found")


def _nanos(stamp: bytes) -> bytes:
    """A timestamp with nine fraction digits, so that two compare as bytes (RFC3339Nano
    drops trailing zeros)."""
    dot = stamp.find(b".", _SECOND)
    fraction = stamp[dot + 1 : -1] if dot >= 0 else b""
    return stamp[:_SECOND] + b"." + fraction.ljust(9, b"0")


def _is_timestamp(text: bytes) -> bool:
    # A cheap shape check, done for every line: the date/time separator and UTC's Z.
    return len(text) > _SECOND and text[10:11] == b"T" and text[-1:] == b"Z"


@dataclass(frozen=True)
class Gap:
    """Where a resumed stream showed that the log no longer holds what came after the resume
    point: the lines between it and `next_timestamp` were rotated away unread."""

    lines_before: int  # lines of output begun before the gap (the last may be partial)
    bytes_before: int  # content bytes written before the gap
    partial: bool  # the last line before the gap arrived only in part
    after_timestamp: bytes  # of the last line written before the gap
    next_timestamp: bytes  # of the first line after it


@dataclass(frozen=True)
class ResumePoint:
    """What has been written so far, as a reconnect needs it."""

    timestamp: bytes = b""  # of the last line written (empty: nothing written yet)
    lines_in_second: int = 0  # lines started (at least partly written) in its second
    partial: int | None = None  # content bytes written of that line if it has not ended

    @property
    def second(self) -> bytes:
        return self.timestamp[:_SECOND]

    def since_time(self) -> str | None:
        """The `--since-time` to resume from: the second of the last line, or None."""
        return self.second.decode("ascii") + "Z" if self.timestamp else None


class LogDecoder:
    """`kubectl logs --timestamps` bytes in, container bytes out, replays dropped.

    Call `feed` with every chunk as it arrives (any boundaries), and `restart` before the
    first chunk of a new stream that resumes from `resume.since_time()`. It runs once per
    line of output, so the resume point is kept in plain attributes, not rebuilt per line.
    """

    def __init__(self) -> None:
        self._stamp = b""  # the resume point, see ResumePoint
        self._count = 0
        self._partial: int | None = None
        self._prefix = b""  # the start of a line whose timestamp has not ended yet
        self._in_line = False  # inside a line's content (its timestamp has been read)
        self._counted = False  # this line is the resume point's last line
        self._skip = 0  # content bytes of this line to drop; _SKIP_ALL: the whole line
        self._replay: ResumePoint | None = None  # the overlap still to drop, if replaying
        self._replayed = 0  # lines seen in the replay within the resume second
        self._lines = 0  # lines of output begun (written at least in part)
        self._emitted = 0  # content bytes returned by feed and end
        self._gap: Gap | None = None  # found by the replay, until take_gap()
        self._gap_found = False  # set by _written_before for _begin_replayed
        self._after_cut = False  # the stream before this one failed (see restart)
        self._refusal = b""  # text without a timestamp: the server's, see take_refusal
        self._refusing = False  # inside such a line
        self._first = b""  # the first line's timestamp (the head check's, loghead.py)

    @property
    def resume(self) -> ResumePoint:
        return ResumePoint(self._stamp, self._count, self._partial)

    @property
    def lines(self) -> int:
        """Lines of output begun so far (the last one may be partial)."""
        return self._lines

    @property
    def emitted(self) -> int:
        """Content bytes returned so far."""
        return self._emitted

    @property
    def first_timestamp(self) -> bytes:
        """The timestamp of the first line of output, b"" before it."""
        return self._first

    def take_gap(self) -> Gap | None:
        """The gap the last `feed` found, once (see Gap)."""
        gap, self._gap = self._gap, None
        return gap

    def restart(self, *, after_cut: bool = False) -> None:
        """A new stream begins: forget a cut-off line, and drop what it replays. `after_cut`:
        the stream before it failed rather than ended (see "Rotation")."""
        self._after_cut = after_cut
        self._refusal, self._refusing = b"", False
        self._prefix = b""
        self._in_line = self._counted = False
        self._skip = 0
        self._replay = self.resume if self._stamp else None
        self._replayed = 0

    def feed(self, chunk: bytes) -> bytes:
        """The content bytes of `chunk` that have not been written before."""
        out = self._feed(chunk)
        self._emitted += len(out)
        return out

    def _feed(self, chunk: bytes) -> bytes:
        if self._replay is not None and len(chunk) >= _BULK_MIN_BYTES:
            return self._feed_replay(chunk)
        if self._replay is not None or len(chunk) < _BULK_MIN_BYTES:
            return self._feed_lines(chunk)
        # Line by line up to the first line start, and the unfinished last line; the whole
        # lines between go in bulk when they allow it (see _bulk).
        head_end = 0
        if self._in_line or self._prefix:
            head_end = chunk.find(b"\n") + 1
            if head_end == 0:
                return self._feed_lines(chunk)
        tail_start = chunk.rfind(b"\n") + 1
        out = [self._feed_lines(chunk[:head_end])] if head_end else []
        whole = chunk[head_end:tail_start]
        if whole:
            bulk = self._bulk(whole)
            out.append(bulk if bulk is not None else self._feed_lines(whole))
        out.append(self._feed_lines(chunk[tail_start:]))
        return b"".join(out)

    def _feed_replay(self, chunk: bytes) -> bytes:
        """A big chunk of a replay: its first line (the rotation check) and any unfinished
        line one by one, then the lines of the resume second already written skipped at C
        speed (the plain read after the end replays that whole second: 30 MB of `yes`)."""
        out: list[bytes] = []
        pos = 0
        while self._replay is not None and (self._replayed == 0 or self._in_line or self._prefix):
            newline = chunk.find(b"\n", pos)
            if newline < 0:
                out.append(self._feed_lines(chunk[pos:]))
                return b"".join(out)
            out.append(self._feed_lines(chunk[pos : newline + 1]))
            pos = newline + 1
        if self._replay is not None:
            pos = self._skip_replayed(chunk, pos, self._replay)
        rest = chunk[pos:]
        if rest:
            out.append(self._feed_lines(rest) if self._replay is not None else self._feed(rest))
        return b"".join(out)

    def _skip_replayed(self, chunk: bytes, pos: int, replay: ResumePoint) -> int:
        """Past the whole lines from `pos` that are of the resume second and before its last
        written line (that one is checked line by line); `pos` when they are not so."""
        skippable = replay.lines_in_second - 1 - self._replayed
        end = chunk.rfind(b"\n") + 1
        if skippable <= 0 or end <= pos:
            return pos
        whole = chunk[pos:end]
        lines = whole.count(b"\n")
        if lines > skippable:
            whole = whole[: len(whole) - len(whole.split(b"\n", skippable)[-1])]
            lines = skippable
        second = replay.second
        if not whole.startswith(second) or whole.count(b"\n" + second) != lines - 1:
            return pos
        self._replayed += lines
        self._counted = False
        return pos + len(whole)

    def _bulk(self, whole: bytes) -> bytes | None:
        """Whole lines, each with a timestamp, at C speed rather than line by line (a fast
        container writes a million lines a minute); None when they need the line-by-line
        path: a line without a timestamp, or seconds out of order within the block."""
        content, stamped = _STAMP_AFTER_NEWLINE.subn(b"\n", b"\n" + whole)
        lines = whole.count(b"\n")
        if stamped != lines:
            return None
        content = content[1:]
        last_start = whole.rfind(b"\n", 0, len(whole) - 1) + 1
        stamp = whole[last_start : whole.index(b" ", last_start)]
        second = stamp[:_SECOND]
        first = 0 if whole.startswith(second) else whole.find(b"\n" + second) + 1
        run = whole[first:]
        in_second = 1 + run.count(b"\n" + second)
        if in_second != run.count(b"\n"):
            return None  # the last line's second also occurs earlier, not contiguously
        if first == 0 and second == self._stamp[:_SECOND]:
            in_second += self._count
        if not self._first:
            self._first = whole[: whole.index(b" ")]
        self._stamp, self._count, self._partial = stamp, in_second, None
        self._lines += lines
        self._in_line = self._counted = False
        return content

    def _feed_lines(self, chunk: bytes) -> bytes:
        out: list[bytes] = []
        pos, size = 0, len(chunk)
        while pos < size:
            if self._in_line:
                newline = chunk.find(b"\n", pos)
                end = size if newline < 0 else newline + 1
                if self._skip:
                    self._drop_replayed(chunk[pos:end], newline >= 0, out)
                else:
                    out.append(chunk[pos:end])
                    self._wrote(end - pos, newline >= 0)
                pos = end
                continue
            room = _MAX_TIMESTAMP - len(self._prefix)
            space = chunk.find(b" ", pos, pos + room)
            if space < 0:
                if size - pos < room and b"\n" not in chunk[pos:]:  # it goes on in the next
                    self._prefix += chunk[pos:]
                    pos = size
                else:  # too long for a timestamp: the line has none
                    self._untimestamped(self._prefix, out)
                continue
            stamp = self._prefix + chunk[pos:space] if self._prefix else chunk[pos:space]
            self._prefix = b""
            pos = space + 1
            if not _is_timestamp(stamp):
                self._untimestamped(stamp + b" ", out)
            elif self._replay is not None:
                self._begin_replayed(stamp, out)
            else:
                self._begin_line(stamp)
        return b"".join(out)

    def end(self) -> bytes:
        """The stream ended cleanly: a line start still held back is never output: the start
        of a timestamp (the stream was cut inside it; the resume reads it again), or else the
        server's words (see take_refusal). Returns b""."""
        if self._prefix and not _TIMESTAMP_START.fullmatch(self._prefix):
            self._refusal += self._prefix[:_REFUSAL_BYTES]
        self._prefix = b""
        replay = self._replay
        if replay is not None and self._replayed == 0 and self._after_cut and not self._refusal:
            # Not even the resume point's own line: the log's file is a newer one, empty
            # so far (rotated after the last write), and the rest of the older one is gone.
            self._replay = None
            self._gap = Gap(self._lines, self._emitted, self._partial is not None,
                            replay.timestamp, b"")
        return b""

    def take_refusal(self) -> str | None:
        """Text of the stream that was not a log line (no timestamp), once: the kubelet's
        error, which it writes into a body it has begun with status 200 (the real node:
        `failed to try resolving symlinks in path ".../0.log": ... no such file or
        directory`, with kubectl exiting 0)."""
        text, self._refusal = self._refusal, b""
        return " ".join(text.decode("utf-8", "replace").split()) or None if text else None

    def _untimestamped(self, head: bytes, out: list[bytes]) -> None:
        self._prefix = b""
        self._in_line = True
        self._counted = False
        self._skip = _SKIP_ALL
        self._refusing = True
        self._refusal += head[:_REFUSAL_BYTES]

    def _begin_line(self, stamp: bytes) -> None:
        if not self._first:
            self._first = stamp
        self._in_line = True
        self._counted = True
        self._lines += 1
        second = stamp[:_SECOND]
        self._count = self._count + 1 if second == self._stamp[:_SECOND] else 1
        self._stamp = stamp
        self._partial = 0

    def _begin_replayed(self, stamp: bytes, out: list[bytes]) -> None:
        """A line of a resumed stream: dropped, cut to what was not written, or new."""
        replay = self._replay
        assert replay is not None
        self._gap_found = False
        written = self._written_before(replay, stamp)
        if written is not None:
            self._in_line = True
            self._skip = written
            return
        if self._gap_found:
            self._gap = Gap(
                lines_before=self._lines,
                bytes_before=self._emitted + sum(map(len, out)),
                partial=self._partial is not None,
                after_timestamp=replay.timestamp,
                next_timestamp=stamp,
            )
        self._begin_line(stamp)

    def _written_before(self, replay: ResumePoint, stamp: bytes) -> int | None:
        """How much of a replayed line was written already: _SKIP_ALL (all of it), N content
        bytes (the line the drop cut, which the resume point goes on counting), or None
        (a new line: the replay is over). Sets `_gap_found` when the log no longer holds
        what followed the resume point (see "Rotation" in the module docstring)."""
        second = stamp[:_SECOND]
        if second < replay.second:
            self._counted = False
            return _SKIP_ALL
        index = self._replayed
        self._replayed += 1
        if index == 0 and (second > replay.second or _nanos(stamp) > _nanos(replay.timestamp)):
            # The log now begins after the resume point's line: its file was rotated. After a
            # clean end the kubelet had read that file to its end (it only turns to the next
            # file there), so this is the continuation; after a cut, what the stream did not
            # deliver of the rotated file is gone.
            self._replay = None
            self._gap_found = self._after_cut
            return None
        last = replay.lines_in_second - 1
        if second == replay.second and index < last:
            self._counted = False
            return _SKIP_ALL
        self._replay = None
        if second > replay.second or stamp != replay.timestamp:
            # The log began before the resume point's line but that line is not where it
            # was: it cannot be told apart from what followed it, which may be lost.
            self._gap_found = True
            return None
        if replay.partial is None:
            self._counted = False
            return _SKIP_ALL
        self._counted = True
        return replay.partial

    def _wrote(self, size: int, ends_line: bool) -> None:
        if ends_line:
            self._in_line = False
        if self._counted:
            self._partial = None if ends_line else (self._partial or 0) + size

    def _drop_replayed(self, piece: bytes, ends_line: bool, out: list[bytes]) -> None:
        if self._skip == _SKIP_ALL:
            if self._refusing and len(self._refusal) < _REFUSAL_BYTES:
                self._refusal += piece[: _REFUSAL_BYTES - len(self._refusal)]
            if ends_line:
                self._in_line = False
                self._skip = 0
                self._refusing = False
            return
        dropped = min(self._skip, len(piece))
        self._skip = 0 if ends_line else self._skip - dropped
        if dropped < len(piece):
            out.append(piece[dropped:])
        self._wrote(len(piece) - dropped, ends_line)


# --- the follower: kubectl, reconnects, backoff ---------------------------------------------


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


class LogFollower:
    """Follows one container's log on a background thread, writing its output to `out`.

    `start()` once the container is running or has ended; `finish(seconds)` once it has
    ended, to let the stream deliver the rest; `stop()` to stop at once (that is not a
    failure).

    When the reconnects are used up while the container runs (an API server down for longer
    than they last), the follower says so and waits: `finish()` tries again, with every
    attempt anew, once the container has ended (the API answers again by then: that is how
    the runner learned of the end), and fetches what is missing from the resume point. Once
    the container has ended, the reconnects are no longer counted: they go on (at the
    longest backoff) until `finish()`'s drain deadline, since every stream then replays up
    to the end and a few cuts inside the replay must not cost the output. When output is
    still incomplete at the deadline (or a retry cannot help) it says so on stderr, with the
    kubectl command that shows all of it, and sets `gave_up` and `error`. A stdout closed by
    its reader (`| head -1`) is not a failure of the stream: the follower stops without a
    word and sets `reader_gone`.
    """

    def __init__(
        self,
        target: kubectl.Target,
        pod: str,
        container: str,
        out: BinaryIO,
        console: Console,
        *,
        backoff: Backoff | None = None,
        start: StartStream | None = None,
        clock: Callable[[], float] = time.monotonic,
        logs_command: str | None = None,
        commands: Commands | None = None,
        on_first_line: Callable[[], None] | None = None,
    ) -> None:
        self._target, self._pod, self._container = target, pod, container
        # Called once, as the first line arrives (the runner's head check, loghead.py).
        self._on_first_line = on_first_line
        self._commands = commands or Commands(target)  # for a denial's `auth can-i`
        self._out = out
        self._console = console
        self._backoff = backoff or Backoff()
        self._start = start or self._start_kubectl
        self._clock = clock
        self._logs_command = logs_command or Commands(target).logs("Pod", pod, container)
        self.gave_up = False
        self.error: str | None = None
        self._pod_gone = False  # deleted by someone else: a stream that ends for good is no loss
        # What the output is missing, for the runner's exit code: a gap in the middle, or the
        # rest after the follower gave up; None while it is complete so far.
        self.lost: str | None = None
        self.reader_gone = False
        self._suspended: str | None = None  # why the reconnects were used up, until finish()
        self._last_failure: str | None = None  # the last drop's reason, for the deadline's word
        self._decoder = LogDecoder()
        # _lock guards the flags and the current stream; _write_lock keeps decoding and
        # writing in order, and is never held while waiting on anything else.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._write_lock = threading.Lock()
        self._stopped = False
        self._finished = False
        self._stream: Stream | None = None
        self._cut = False  # the last stream failed rather than ended (LogDecoder.restart)
        self._ended_at = clock()  # when the last stream ended
        self._written = 0
        self._tail = b""  # the end of what was written: its last line, for the cheap check
        self._check: _Check | None = None  # the cheap check, once the container has ended
        self._write_failure: Exception | None = None
        self._thread = threading.Thread(target=self._follow, name=f"logs-{pod}", daemon=True)

    # -- the runner's side

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop streaming now: end the kubectl child; the thread ends soon after."""
        with self._lock:
            self._stopped = True
            stream = self._stream
            check = self._check.child if self._check is not None else None
            self._changed.notify_all()
        for child in (stream, check):
            if child is not None:
                child.terminate()

    @property
    def first_timestamp(self) -> bytes:
        """The timestamp of the output's first line, b"" while none has come."""
        with self._write_lock:
            return self._decoder.first_timestamp

    def pod_is_gone(self) -> None:
        """The pod was deleted before its container ended (the run fails with that): what
        could not be read is gone with it, so giving up warns of nothing and names no
        `kubectl logs`, which could only answer NotFound."""
        with self._lock:
            self._pod_gone = True

    def finish(self, deadline_seconds: float) -> bool:
        """The container has ended: wait up to `deadline_seconds` for the stream to deliver
        the rest (reconnecting if it drops). True when everything was written. Called before
        `start()`, the first request is already a final read (see "Complete")."""
        with self._lock:
            self._finished = True
            self._changed.notify_all()
        if self._thread.ident is not None:
            self._thread.join(deadline_seconds)
            if not self._thread.is_alive() and self._resume_after_suspension():
                self._thread.join(deadline_seconds)
            if self._thread.is_alive():
                late = f"the stream did not end within {deadline_seconds:g}s of the container's end"
                if self._last_failure is not None:
                    late += f"; the last drop: {self._last_failure}"
                self._give_up(late)
                self.stop()
                self._thread.join(deadline_seconds)
        return not self.gave_up

    def _resume_after_suspension(self) -> bool:
        """A new round of reconnects for a follower that used its attempts up; False when
        there is nothing to resume."""
        with self._lock:
            if self._suspended is None or self._stopped or self.gave_up:
                return False
            self._suspended = None
            self._thread = threading.Thread(
                target=self._follow, name=f"logs-{self._pod}", daemon=True
            )
        self._thread.start()
        return True

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True once it has ended (or was never started)."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the thread

    def _start_kubectl(self, args: Sequence[str], on_stdout: Callable[[bytes], None]) -> Stream:
        # The namespace is in the request's path; `get --raw` takes no --namespace.
        return kubectl.start(
            args, self._target, on_stdout=on_stdout, out_bufsize=READ_BYTES, namespaced=False
        )

    def _follow(self) -> None:
        attempt = 0
        while True:
            began, written = self._clock(), self._written
            with self._lock:
                finished = self._finished
            if finished and self._check is None and not self._cut and self._written:
                # The stream before ended cleanly before the container's end was known: the
                # cheap check first, now (see "Complete" in the module docstring).
                self._start_check()
                if self._check_says_complete():
                    return
            # A rotation found by a resume long after a clean end may be a second one.
            quiet = self._clock() - self._ended_at
            connected = self._connect(after_cut=self._cut or quiet >= ROTATION_CHECK_SECONDS)
            if connected is None:
                return
            stream, final = connected
            code = self._wait(stream)
            with self._write_lock:
                if code == 0:
                    self._decoder.end()
                    gap = self._decoder.take_gap()
                    if gap is not None:
                        self._report_gap(gap)
                refusal = self._decoder.take_refusal()
            if refusal is not None and code == 0:
                code = _REFUSED  # the kubelet's error in the body: not an end
            if self._written > written:
                # Only a stream that brought output tells where the kubelet's reader of the
                # older file stopped: a refused or empty request does not change it.
                self._cut = code != 0
                self._ended_at = self._clock()
            with self._lock:
                self._stream = None
                if self._stopped:
                    return
                finished = self._finished
            if self._write_failure is not None:
                if _is_reader_gone(self._write_failure):
                    self.reader_gone = True  # `| head`: what the reader wanted, it got
                else:
                    self._give_up(f"cannot write to stdout ({self._write_failure})")
                return
            if code == 0 and final and self._written == written:
                return  # complete: the log holds nothing after what was written
            if code == 0 and finished:
                attempt = 0
                continue  # a clean end proves nothing: read what the log holds now
            if self._written > written or self._clock() - began >= self._backoff.stable_seconds:
                attempt = 0
            # A clean end before finish() is most likely the container's own end, seen
            # before the runner saw the pod's phase: wait for finish() instead of a retry.
            reason = None if code == 0 else refusal or _reason(stream, code)
            if reason is not None and not retryable(reason):
                self._give_up(reason)
                return
            if reason is not None:
                self._last_failure = reason
            attempt += 1
            # Clean ends too: the runner may not have seen the container's end yet (its
            # watch reconnecting after an API server restart), and what is missing, if
            # anything, is fetched once it has. After the end, the deadline decides.
            if attempt > self._backoff.attempts and self._suspend(reason):
                return
            delay = self._backoff.delay(attempt)
            if reason is not None:
                self._console.status(
                    f"the log stream of pod {self._pod} dropped ({reason}); will retry in "
                    f"{delay:g}s ({self._attempt_words(attempt)})"
                )
            self._pause(delay, ended_cleanly=reason is None)

    def _attempt_words(self, attempt: int) -> str:
        if attempt <= self._backoff.attempts:
            return f"attempt {attempt} of {self._backoff.attempts}"
        return f"attempt {attempt}; the container has ended: until the drain deadline"

    def _connect(self, *, after_cut: bool) -> tuple[Stream, bool] | None:
        """Start the next log stream, resuming after what was written; None: stop. With it,
        whether it is final: started once the container's end was known, a plain read
        (no follow) of a log that no longer changes."""
        with self._write_lock:
            self._decoder.restart(after_cut=after_cut)
            since = self._decoder.resume.since_time()
        namespace = self._target.namespace or DEFAULT_NAMESPACE
        with self._lock:
            if self._stopped:
                return None
            # Decided here, under the lock and just before the start, rather than at the top
            # of the loop: a request that leaves after finish() reads a final log, and a
            # quick container's end is often known by the time its first request starts.
            final = self._finished
            request = verbs.log_request(
                namespace, self._pod, self._container, since, follow=not final
            )
            try:
                self._stream = self._start(["get", "--raw", request], self._deliver)
            except (SquarepegError, OSError) as exc:
                failure = exc.one_line() if isinstance(exc, SquarepegError) else str(exc)
            else:
                return self._stream, final
        self._give_up(failure)
        return None

    def _wait(self, stream: Stream) -> int:
        while True:
            code = stream.wait(0.25)
            if code is not None:
                return code
            if self._write_failure is not None:
                stream.terminate()

    def _pause(self, seconds: float, *, ended_cleanly: bool) -> None:
        """Wait before the next attempt; after a clean end, only until the container ends."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._stopped or (ended_cleanly and self._finished), seconds
            )

    def _deliver(self, chunk: bytes) -> None:
        """On the reader thread: decode a chunk and write the container's bytes at once."""
        with self._write_lock:
            if self._write_failure is None:
                data = self._decoder.feed(chunk)
                if self._on_first_line is not None and self._decoder.first_timestamp:
                    self._on_first_line()
                    self._on_first_line = None
                gap = self._decoder.take_gap()
                if gap is None:
                    self._write(data)
                    return
                cut = gap.bytes_before - (self._decoder.emitted - len(data))
                self._write(data[:cut])
                self._report_gap(gap)
                self._write(data[cut:])

    def _report_gap(self, gap: Gap) -> None:
        last = f"line {gap.lines_before}" + (" (in part)" if gap.partial else "")
        after = gap.after_timestamp.decode("ascii", "replace")
        upto = gap.next_timestamp.decode("ascii", "replace")
        span = f"between {after} and {upto}" if upto else f"after {after}"
        lost = (
            f"output lost after {last}, byte {gap.bytes_before}: the node's log of pod "
            f"{self._pod} no longer holds what the container wrote {span}"
        )
        if self.lost is None:  # not under _lock: _connect may hold it while this runs
            self.lost = lost
        self._console.warn(
            f"{lost} (the kubelet rotates a container's log file at containerLogMaxSize, "
            "10 MiB by default, and the rotated part was not read in time); "
            "the output after the gap follows"
        )

    def _write(self, data: bytes) -> None:
        if not data:
            return
        try:
            self._out.write(data)
            self._out.flush()
        except (OSError, ValueError) as exc:
            self._write_failure = exc
            return
        self._written += len(data)
        self._tail = (self._tail + data)[-_PROBE_LINE_BYTES:]

    def _start_check(self) -> None:
        """Start the cheap check (docs/decisions/0120): one request for the log's last line
        (`tailLines=1`), made only once the container's end is known, so that its answer is
        the log's final last line. Once per follower; `_check_says_complete` reads it."""
        answer: list[bytes] = []
        check = _Check(answer, self._clock())
        self._check = check
        namespace = self._target.namespace or DEFAULT_NAMESPACE
        request = verbs.log_request(
            namespace, self._pod, self._container, None, follow=False, tail=1
        )
        with self._lock:
            if self._stopped:
                return
            try:
                check.child = self._start(["get", "--raw", request], answer.append)
            except (SquarepegError, OSError):
                return  # no answer: the plain read decides

    def _check_says_complete(self) -> bool:
        """Whether the check's answer is the last line written: by its timestamp, to the
        nanosecond as the kubelet stamps every line, and its content (no line at all when
        nothing was written). Waits for the answer up to _PROBE_SECONDS from the check's
        start; False when it cannot tell: then the plain read from the resume point
        decides. The answer is used once."""
        check = self._check
        if check is None or check.used or check.child is None or self._cut:
            return False
        check.used = True
        code = check.child.wait(max(0.0, check.started + _PROBE_SECONDS - self._clock()))
        if code is None:
            check.child.terminate()
            return False
        if code != 0:
            return False
        with self._write_lock:
            expected = self._expected_last_line()
        return expected is not None and b"".join(check.answer) == expected

    def _expected_last_line(self) -> bytes | None:
        """What `tailLines=1` answers if the output written is all of the log; None when it
        cannot be told from what was kept (see "Complete")."""
        resume = self._decoder.resume
        last = self._tail
        if not resume.timestamp:
            return b"" if not self._written else None
        if not last:
            return None
        if resume.partial is None:
            if not last.endswith(b"\n"):
                return None
            start = last.rfind(b"\n", 0, len(last) - 1) + 1
        else:  # a last line without its newline (`head -c`): it must be all of the line
            start = last.rfind(b"\n") + 1
            if len(last) - start != resume.partial:
                return None
        if start == 0 and len(last) == _PROBE_LINE_BYTES:
            return None  # a longer line than the tail kept
        return resume.timestamp + b" " + last[start:]

    def _suspend(self, reason: str | None) -> bool:
        """Wait for the container's end before trying again (see the class docstring);
        False if it has ended already (the attempts were the last chance). A stream that
        only ended cleanly (`reason` None) lost nothing: it waits without a word."""
        with self._lock:
            if self._finished or self._stopped:
                return False
            self._suspended = reason or _KEPT_ENDING
        if reason is not None:
            self._console.warn(
                f"the log stream of pod {self._pod} dropped and {self._backoff.attempts} "
                f"reconnects failed ({reason}); the rest of the output will be fetched once "
                "the container has ended, before anything is deleted"
            )
        return True

    def _give_up(self, reason: str) -> None:
        with self._lock:
            if self.gave_up:
                return
            self.gave_up = True
            self.error = reason
            if self._pod_gone:
                return
            if self.lost is None:
                self.lost = (
                    f"the output may be incomplete after byte {self._written}: the log "
                    f"stream of pod {self._pod} was lost ({reason})"
                )
        self._console.warn(
            f"lost the log stream of pod {self._pod} ({reason}"
            f"{self._commands.permission_check(reason)}); its output may be "
            f"incomplete: see all of it with `{self._logs_command}`"
        )


@dataclass
class _Check:
    """The cheap check's request (LogFollower._start_check) and its answer."""

    answer: list[bytes]
    started: float
    child: Stream | None = None
    used: bool = False


_KEPT_ENDING = "the stream kept ending before the container did"
_REFUSED = -1  # the exit code the follower gives a stream that carried the kubelet's error


def _is_reader_gone(failure: Exception) -> bool:
    return isinstance(failure, BrokenPipeError) or getattr(failure, "errno", None) == errno.EPIPE


def _reason(stream: Stream, code: int) -> str:
    return kubectl.Result((), code, b"", stream.stderr).error_text
