"""The log decoder: `kubectl logs --timestamps` bytes in, the container's bytes out, and the
resume point a reconnect starts from. Pure: no I/O, no process, no thread (an import-linter
contract in pyproject.toml keeps it so); the follower (logs.py) feeds it what kubectl reads.

Owns taking the timestamps off while passing the content bytes through untouched (binary,
ANSI, `\\r`, a partial line as soon as it arrives; never decoded as text), the resume point
(`ResumePoint`), dropping what a resumed stream replays, and the gap a rotation left (`Gap`).

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
exiting 0), so such text is never written: the decoder keeps it for `take_refusal`, and the
follower counts the stream as failed with it as the reason.

Rotation. A resume whose replay shows the log beginning after the resume point's line (its
first line of the resume second is later, or nothing at all comes) met a rotation of the
container's log file (logs.py, "Rotation"). After a clean end (`restart()` without
`after_cut`) that is the continuation: the kubelet turns to the next file only at the end of
the one it read. After a cut, what the stream did not deliver of the rotated file is gone:
the decoder gives a `Gap` (`take_gap`), which the follower reports. A resume point's line
that is no longer where it was is a gap as well: what followed it cannot be told apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
# How much of a text without timestamps (the kubelet's error, take_refusal) is kept.
_REFUSAL_BYTES = 1000


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
