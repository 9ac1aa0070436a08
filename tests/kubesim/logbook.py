"""Container logs: the records the kubelet writes, and the streams `kubectl logs` reads.

The kubelet appends records. A record is a run of bytes read from the container at one moment,
so every line that starts in it carries its timestamp: one or more whole lines (each with its
trailing b"\\n"), or a 16 KiB piece of a longer line (CRI's partial records: every piece but
the last lacks the newline), or a final partial line at exit. A record that does not end with a
newline is continued by the next one, so with timestamps only line starts get the `TS ` prefix,
as the kubelet's log reader does. Keeping lines that were read together in one record (instead
of one Python object per line) is what lets 100 MB of short lines flow at tens of MB/s without
gigabytes of bookkeeping. since/tail filters work on logical lines.

Followers wait for new records until the container ends (a clean end of the stream), or the
`drop_followers` fault cuts them (`LogStreamDropped`: the server closes the connection without
ending the chunked body, so kubectl prints `error: unexpected EOF`). `cut_each` is the
standing form of that fault: every container's follow streams, open now or later, are cut
after so many bytes, until that container's have been cut so many times. An idle follower yields
b"" about once a second so the server can notice a client that went away.

Two scenario options (read by the kubelet, `configure`) play what the real kubelet does:

- `log_rotate_bytes: N`, `log_rotate_seconds: S` (default 10): the kubelet's log rotation
  (containerLogMaxSize, 10 MiB by default, counted there in CRI lines of about 40 bytes more
  than the content; checked every containerLogMonitorInterval, 10 s). Once the current file
  holds more than N content bytes and S seconds have passed since the last rotation, it is
  rotated as the next record arrives: what it holds is no longer served to a new reader
  (`kubectl logs`, a resumed follow), only the new file is. A follower that was reading the
  rotated file reads it to its end, then its stream ends cleanly: the real kubelet v1.34 ends
  a follow at a rotation now and then (and otherwise turns to the new file), seen on the real
  node with `seq 1 700000` (its 4.8 MB of output are 33 MB of CRI log). A record that
  follows a partial line starts a line of its own in the new file, with its timestamp.
- `log_follow_end_after_bytes: N` with `log_follow_end_times: K` (default 1): each
  container's first K follow streams end cleanly after N bytes, whether it still runs or
  not: the early clean end the real node showed (docs/decisions/0120).
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

HEARTBEAT_SECONDS = 1.0
# A follower sends at most about this many bytes per chunk it yields.
CHUNK_BYTES = 1 << 20


class LogStreamDropped(Exception):
    """The fault ended this follow stream abruptly."""


def parse_timestamp(text: str) -> datetime:
    """Parse RFC3339 with 0 to 9 fractional digits (Python keeps microseconds)."""
    text = text.strip().replace("z", "Z")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    if "." in text:
        head, rest = text.split(".", 1)
        digits = len(rest) - len(rest.lstrip("0123456789"))
        fraction, tail = rest[:digits], rest[digits:]
        text = f"{head}.{(fraction + '000000')[:6]}{tail}"
    return datetime.fromisoformat(text).astimezone(timezone.utc)


def format_timestamp(moment: datetime, nanos: int | None = None) -> str:
    """RFC3339Nano UTC with 9 fractional digits, e.g. 2026-12-02T19:00:00.123456789Z."""
    moment = moment.astimezone(timezone.utc)
    ns = moment.microsecond * 1000 if nanos is None else nanos
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns:09d}Z"


@dataclass(slots=True)
class _Record:
    timestamp: str
    moment: datetime
    data: bytes
    starts_line: bool

    def line_starts(self, offset: int = 0) -> list[int]:
        """Offsets at or after `offset` where a logical line starts in this record; a
        non-zero `offset` must itself be a line start."""
        data = self.data
        starts = [offset] if (offset > 0 or self.starts_line) else []
        at = data.find(b"\n", offset)
        while at != -1 and at + 1 < len(data):
            starts.append(at + 1)
            at = data.find(b"\n", at + 1)
        return starts

    def render(self, offset: int, timestamps: bool) -> bytes:
        """The record from `offset` (0, or a line start) as the log endpoint sends it."""
        data = self.data[offset:] if offset else self.data
        if not timestamps:
            return data
        prefix = self.timestamp.encode() + b" "
        head = prefix if (offset or self.starts_line) else b""
        if data.endswith(b"\n"):
            return head + data[:-1].replace(b"\n", b"\n" + prefix) + b"\n"
        return head + data.replace(b"\n", b"\n" + prefix)


@dataclass
class _Follower:
    budget: int | None = None
    dropped: bool = False
    standing: bool = False  # its budget is cut_each's
    end_budget: int | None = None  # bytes before it ends cleanly (log_follow_end_after_bytes)
    file_start: int = 0  # the record where the file it reads begins (see rotation)


@dataclass
class _Stream:
    records: list[_Record] = field(default_factory=list)
    ended: bool = False
    followers: list[_Follower] = field(default_factory=list)
    cuts: int = 0  # follow streams of this container cut by the standing fault (cut_each)
    file_start: int = 0  # the current file's first record: those before were rotated
    file_bytes: int = 0  # content bytes in the current file
    rotations: list[int] = field(default_factory=list)  # each rotated file's end
    early_ends: int = 0  # follow streams ended early (log_follow_end_after_bytes)
    rotated_at: float = field(default_factory=time.monotonic)  # the container's start, at first

    def moments(self) -> list[datetime]:
        return [r.moment for r in self.records]


Key = tuple[str, str, str]


class LogBook:
    """Every container's log, thread-safe, keyed by (namespace, pod, container)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._streams: dict[Key, _Stream] = {}
        self._cut_each: tuple[int, int] | None = None  # (after bytes, times per container)
        self._cuts_of_removed: list[int] = []  # the cut counts of deleted pods' containers
        self._rotate_bytes: int | None = None
        self._rotate_seconds = 10.0
        self._early_end: tuple[int, int] | None = None  # (after bytes, times per container)

    def configure(self, options: dict[str, object]) -> None:
        """Read the scenario options of the module docstring."""
        rotate = options.get("log_rotate_bytes")
        after = options.get("log_follow_end_after_bytes")
        times = options.get("log_follow_end_times", 1)
        with self._cond:
            self._rotate_bytes = int(str(rotate)) if rotate else None
            self._rotate_seconds = float(str(options.get("log_rotate_seconds", 10)))
            self._early_end = (int(str(after)), int(str(times))) if after else None

    def _stream(self, key: Key) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = _Stream()
        return stream

    def append(self, namespace: str, pod: str, container: str, data: bytes, *,
               timestamp: str, moment: datetime | None = None) -> None:
        """Add one record (see the module docstring for what a record is). `moment` is the
        parsed `timestamp`, when the caller has it."""
        if not data:
            return
        if moment is None:
            moment = parse_timestamp(timestamp)
        with self._cond:
            stream = self._stream((namespace, pod, container))
            previous = stream.records[-1] if stream.records else None
            starts = previous is None or previous.data.endswith(b"\n") \
                or len(stream.records) == stream.file_start
            stream.records.append(_Record(timestamp, moment, data, starts))
            stream.file_bytes += len(data)
            if self._rotate_bytes is not None and stream.file_bytes > self._rotate_bytes \
                    and time.monotonic() - stream.rotated_at >= self._rotate_seconds:
                stream.rotated_at = time.monotonic()
                stream.file_start = len(stream.records)
                stream.rotations.append(stream.file_start)
                stream.file_bytes = 0
            self._cond.notify_all()

    def end(self, namespace: str, pod: str, container: str) -> None:
        """The container exited: followers send what is left and finish cleanly."""
        with self._cond:
            self._stream((namespace, pod, container)).ended = True
            self._cond.notify_all()

    def reset(self, namespace: str, pod: str, container: str) -> None:
        """A restart: the new container's log starts empty; followers of the old one end."""
        with self._cond:
            old = self._streams.get((namespace, pod, container))
            if old is not None:
                old.ended = True
            self._streams[(namespace, pod, container)] = _Stream()
            self._cond.notify_all()

    def remove(self, namespace: str, pod: str) -> None:
        """Forget a deleted pod's logs; its followers finish cleanly."""
        with self._cond:
            for key in [k for k in self._streams if k[:2] == (namespace, pod)]:
                stream = self._streams.pop(key)
                stream.ended = True
                if stream.cuts:
                    self._cuts_of_removed.append(stream.cuts)
            self._cond.notify_all()

    def close(self) -> None:
        """End every follower cleanly (the server is shutting down)."""
        with self._cond:
            for stream in self._streams.values():
                stream.ended = True
            self._cond.notify_all()

    def drop_followers(self, after_bytes: int | None = None) -> int:
        """The fault: cut every open follow stream now, or after `after_bytes` more bytes
        each. Returns how many streams were open."""
        with self._cond:
            count = 0
            for stream in self._streams.values():
                for follower in stream.followers:
                    count += 1
                    if after_bytes is None or after_bytes <= 0:
                        follower.dropped = True
                    else:
                        follower.budget = after_bytes
            self._cond.notify_all()
            return count

    def cut_each(self, after_bytes: int, times: int) -> int:
        """The standing fault: from now on, every follow stream is cut after `after_bytes`
        bytes, until its container's streams have been cut `times` times (a resumed stream
        is a new follower of the same container). Returns how many streams were open."""
        with self._cond:
            self._cut_each = (after_bytes, times) if after_bytes > 0 and times > 0 else None
            count = 0
            for stream in self._streams.values():
                for follower in stream.followers:
                    count += 1
                    self._arm(stream, follower)
            return count

    def _arm(self, stream: _Stream, follower: _Follower) -> None:
        policy = self._cut_each
        if policy is not None and follower.budget is None and stream.cuts < policy[1]:
            follower.budget = policy[0]
            follower.standing = True

    def cut_counts(self) -> dict[int, int]:
        """How many containers had their follow streams cut how many times (cut_each)."""
        with self._cond:
            counts: dict[int, int] = {}
            live = [stream.cuts for stream in self._streams.values() if stream.cuts]
            for cuts in live + self._cuts_of_removed:
                counts[cuts] = counts.get(cuts, 0) + 1
            return counts

    def follower_count(self) -> int:
        """How many follow streams are open."""
        with self._cond:
            return sum(len(s.followers) for s in self._streams.values())

    def rotation_count(self, namespace: str, pod: str, container: str) -> int:
        """How many times the container's log was rotated (log_rotate_bytes)."""
        with self._cond:
            stream = self._streams.get((namespace, pod, container))
            return len(stream.rotations) if stream else 0

    def has_records(self, namespace: str, pod: str, container: str) -> bool:
        with self._cond:
            stream = self._streams.get((namespace, pod, container))
            return bool(stream and stream.records)

    def read(self, namespace: str, pod: str, container: str, *,
             since_time: datetime | None = None, since_seconds: float | None = None,
             follow: bool = False, timestamps: bool = False,
             tail_lines: int | None = None) -> Iterator[bytes]:
        """The log as the kubelet serves it. Not following, the iterator yields what is there
        and ends. Following, it then waits for more until the container ends; the fault
        raises LogStreamDropped from it."""
        key = (namespace, pod, container)
        cutoff = since_time
        if since_seconds is not None:
            by_seconds = datetime.now(timezone.utc) - timedelta(seconds=since_seconds)
            cutoff = by_seconds if cutoff is None else max(cutoff, by_seconds)
        with self._cond:
            stream = self._stream(key)
            start = self._start(stream, cutoff, tail_lines)
            follower = _Follower(file_start=stream.file_start)
            if follow:
                stream.followers.append(follower)
                self._arm(stream, follower)
                early = self._early_end
                if early is not None and stream.early_ends < early[1]:
                    follower.end_budget = early[0]
                    stream.early_ends += 1
        try:
            yield from self._deliver(stream, start, follower, follow, timestamps)
        finally:
            with self._cond:
                if follower in stream.followers:
                    stream.followers.remove(follower)

    @staticmethod
    def _file_end(stream: _Stream, follower: _Follower) -> int | None:
        """Where the file the follower opened ends, once it was rotated; else None."""
        return next((end for end in stream.rotations if end > follower.file_start), None)

    @staticmethod
    def _start(stream: _Stream, cutoff: datetime | None,
               tail_lines: int | None) -> tuple[int, int]:
        """Where reading begins: (record index, byte offset of a line start in it)."""
        records = stream.records
        first, offset = stream.file_start, 0  # rotated files are not served
        if cutoff is not None:
            # Records are appended in time order: the first one at or after the cutoff.
            first = bisect.bisect_left(stream.moments(), cutoff, lo=first)
            while first < len(records):
                starts = records[first].line_starts()
                if starts:
                    offset = starts[0]
                    break
                first += 1
        if tail_lines is None:
            return first, offset
        if tail_lines <= 0:
            return len(records), 0
        wanted = tail_lines
        for index in range(len(records) - 1, first - 1, -1):
            record = records[index]
            starts = record.line_starts(offset if index == first else 0)
            if len(starts) >= wanted:
                return index, starts[len(starts) - wanted]
            wanted -= len(starts)
        return first, offset

    def _deliver(self, stream: _Stream, start: tuple[int, int], follower: _Follower,
                 follow: bool, timestamps: bool) -> Iterator[bytes]:
        index, offset = start
        while True:
            with self._cond:
                if follow and not follower.dropped and index >= len(stream.records) \
                        and not stream.ended and self._file_end(stream, follower) is None:
                    self._cond.wait(HEARTBEAT_SECONDS)
                if follower.dropped:
                    raise LogStreamDropped()
                rotated_end = self._file_end(stream, follower)
                file_end = len(stream.records) if rotated_end is None else rotated_end
                pending: list[_Record] = []
                size = 0
                while index < file_end and size < CHUNK_BYTES:
                    pending.append(stream.records[index])
                    size += len(stream.records[index].data)
                    index += 1
                # A follower at the end of a rotated file ends, as the kubelet's may.
                finished = not follow or stream.ended or (
                    rotated_end is not None and index >= rotated_end)
            parts = []
            for record in pending:
                parts.append(record.render(offset, timestamps))
                offset = 0
            chunk = b"".join(parts)
            with self._cond:
                early = follower.end_budget
                ends_early = early is not None and len(chunk) >= early
                if early is not None and ends_early:
                    chunk = chunk[:early]
                elif early is not None:
                    follower.end_budget = early - len(chunk)
                budget = follower.budget
                if budget is not None and len(chunk) >= budget:
                    follower.dropped = True
                    chunk = chunk[:budget]
                    if follower.standing:
                        stream.cuts += 1
                elif budget is not None:
                    follower.budget = budget - len(chunk)
                end = self._file_end(stream, follower)
                more = index < (len(stream.records) if end is None else end)
            if chunk or follow:
                yield chunk
            if follower.dropped:
                raise LogStreamDropped()
            if ends_early or (finished and not more):
                return
