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

Three scenario options (read by the kubelet, `configure`) play what the real kubelet does:

- `log_rotate_bytes: N`, `log_rotate_seconds: S` (default 10): the kubelet's log rotation
  (containerLogMaxSize, 10 MiB by default, counted there in CRI lines of about 40 bytes more
  than the content; checked every containerLogMonitorInterval, 10 s). Once the current file
  holds more than N content bytes and S seconds have passed since the last rotation, it is
  rotated as the next record arrives, which begins the new file (so the last write before a
  pause stays in the current file until more comes): what the rotated file holds is no
  longer served to a new reader (`kubectl logs`, a resumed follow), only the new file is.
  A follower that was reading the rotated file reads it to its end, then its stream ends
  cleanly: the real kubelet v1.34 ends a follow at a rotation now and then (and otherwise
  turns to the new file), seen on the real node with `seq 1 700000` (its 4.8 MB of output
  are 33 MB of CRI log). A record that follows a partial line starts a line of its own in
  the new file, with its timestamp.
- `log_follow_end_after_bytes: N` with `log_follow_end_times: K` (default 1): each
  container's first K follow streams end cleanly after N bytes, whether it still runs or
  not: the early clean end the real node showed (docs/decisions/0120).
- `log_first_read_delay_seconds: S` (default 0): a container's first log request (follow or
  not, any query) waits S seconds before it reads anything; later ones do not wait. The
  real kubelet serves a container's log only once its own status says running, a second
  or more after the container's first write: a fast writer's head may be rotated away by
  then. A restarted container is a new container and waits again; the kubelet's own read
  (the termination message's tail) is no request and never waits.

The node's files (`node_files`, `node_file`; served as the kubelet's `/logs/` by
nodelogs.py) are the same records as the files the kubelet keeps under
/var/log/pods/NS_POD_UID/CONTAINER/: `N.log` (N the restart count) holds the current
file, what a new reader is served; each rotation leaves `N.log.YYYYMMDD-HHMMSS` behind,
named by the rotation's time in UTC (the node's zone here): the second of the record whose
arrival rotated it, or the next free second (`_rotate`); all but the newest rotated file
are gzipped (`.gz`), and the oldest are deleted beyond containerLogMaxFiles (5, the
current file included). A file is CRI log: one entry per line, `TIME STREAM TAG CONTENT`,
TIME in RFC3339Nano (Go's, trailing zeros dropped) and the same instant as the log API's
timestamp for that line; a record's whole lines are `F` entries and a piece without its
newline a `P` entry that the next one continues.
"""

from __future__ import annotations

import bisect
import gzip
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

HEARTBEAT_SECONDS = 1.0
# A follower sends at most about this many bytes per chunk it yields.
CHUNK_BYTES = 1 << 20
# The kubelet's containerLogMaxFiles: the current file and at most four rotated ones.
MAX_FILES = 5


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


def go_rfc3339_nano(timestamp: str) -> str:
    """A 9-digit log timestamp as Go's RFC3339Nano writes it (what containerd puts in the
    file): trailing zeros of the fraction dropped, and the dot when nothing is left."""
    head, dot, rest = timestamp.partition(".")
    if not dot:
        return timestamp
    digits = len(rest) - len(rest.lstrip("0123456789"))
    fraction = rest[:digits].rstrip("0")
    return f"{head}.{fraction}{rest[digits:]}" if fraction else head + rest[digits:]


@dataclass(slots=True)
class _Record:
    timestamp: str
    moment: datetime
    data: bytes
    starts_line: bool
    stream: str = "stdout"  # the pipe it came from, as a CRI entry names it

    def cri_entries(self) -> bytes:
        """The record as CRI log entries (see the module docstring)."""
        head = f"{go_rfc3339_nano(self.timestamp)} {self.stream} ".encode()
        data = self.data
        cut = data.rfind(b"\n") + 1
        whole, piece = data[:cut], data[cut:]
        parts = []
        if whole:
            full = head + b"F "
            parts.append(full + whole[:-1].replace(b"\n", b"\n" + full) + b"\n")
        if piece:
            parts.append(head + b"P " + piece + b"\n")
        return b"".join(parts)

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
    # Each rotated file's name time, in whole seconds since the epoch (see _rotate).
    rotation_names: list[int] = field(default_factory=list)
    gzipped: dict[int, bytes] = field(default_factory=dict)  # rotated file's index -> .gz
    early_ends: int = 0  # follow streams ended early (log_follow_end_after_bytes)
    rotated_at: float = field(default_factory=time.monotonic)  # the container's start, at first
    restarts: int = 0  # the container's restart count: its files are RESTARTS.log...
    requested: bool = False  # a log request came (log_first_read_delay_seconds)

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
        self._first_read_delay = 0.0
        self._closed = False

    def configure(self, options: dict[str, object]) -> None:
        """Read the scenario options of the module docstring."""
        rotate = options.get("log_rotate_bytes")
        after = options.get("log_follow_end_after_bytes")
        times = options.get("log_follow_end_times", 1)
        delay = float(str(options.get("log_first_read_delay_seconds", 0)))
        with self._cond:
            self._rotate_bytes = int(str(rotate)) if rotate else None
            self._rotate_seconds = float(str(options.get("log_rotate_seconds", 10)))
            self._early_end = (int(str(after)), int(str(times))) if after else None
            self._first_read_delay = max(0.0, delay)

    def _stream(self, key: Key) -> _Stream:
        stream = self._streams.get(key)
        if stream is None:
            stream = self._streams[key] = _Stream()
        return stream

    def append(self, namespace: str, pod: str, container: str, data: bytes, *,
               timestamp: str, moment: datetime | None = None, stream: str = "stdout") -> None:
        """Add one record (see the module docstring for what a record is). `moment` is the
        parsed `timestamp`, when the caller has it; `stream` is stdout or stderr."""
        if not data:
            return
        if moment is None:
            moment = parse_timestamp(timestamp)
        with self._cond:
            log = self._stream((namespace, pod, container))
            if self._rotate_bytes is not None and log.file_bytes > self._rotate_bytes \
                    and time.monotonic() - log.rotated_at >= self._rotate_seconds:
                self._rotate(log, moment)
            previous = log.records[-1] if log.records else None
            starts = previous is None or previous.data.endswith(b"\n") \
                or len(log.records) == log.file_start
            log.records.append(_Record(timestamp, moment, data, starts, stream))
            log.file_bytes += len(data)
            self._cond.notify_all()

    @staticmethod
    def _rotate(stream: _Stream, moment: datetime) -> None:
        """Rotate the current file as a record written at `moment` arrives (it goes to the
        new file): the file holds every record before it."""
        stream.rotated_at = time.monotonic()
        stream.file_start = len(stream.records)
        stream.rotations.append(stream.file_start)
        stream.file_bytes = 0
        # The file is named after the rotation's second. The kubelet rotates at most every
        # 10 s and never meets a name twice; rotations here can come faster, so a name
        # already used moves on to the next unused second: names stay unique and in
        # rotation order, a little ahead of the clock only while rotations come that fast.
        second = int(moment.timestamp())
        if stream.rotation_names and second <= stream.rotation_names[-1]:
            second = stream.rotation_names[-1] + 1
        stream.rotation_names.append(second)
        oldest_kept = len(stream.rotations) - (MAX_FILES - 1)
        for deleted in [index for index in stream.gzipped if index < oldest_kept]:
            del stream.gzipped[deleted]  # the node deleted that file: nobody reads it again

    def end(self, namespace: str, pod: str, container: str) -> None:
        """The container exited: followers send what is left and finish cleanly."""
        with self._cond:
            self._stream((namespace, pod, container)).ended = True
            self._cond.notify_all()

    def reset(self, namespace: str, pod: str, container: str,
              restarts: int | None = None) -> None:
        """A restart: the new container's log starts empty; followers of the old one end.
        `restarts` is the new container's restart count (else one more than the old's)."""
        with self._cond:
            old = self._streams.get((namespace, pod, container))
            if old is not None:
                old.ended = True
            if restarts is None:
                restarts = old.restarts + 1 if old is not None else 1
            self._streams[(namespace, pod, container)] = _Stream(restarts=restarts)
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
            self._closed = True
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

    def node_files(self, namespace: str, pod: str, container: str) -> list[str] | None:
        """The names of the container's files on the node (see the module docstring), or
        None when its log has not begun (no record, no read, no end yet)."""
        with self._cond:
            stream = self._streams.get((namespace, pod, container))
            if stream is None:
                return None
            current = f"{stream.restarts}.log"
            return [current] + [name for name, _index in self._rotated_files(stream)]

    def node_file(self, namespace: str, pod: str, container: str, name: str) -> bytes | None:
        """One of `node_files`' files as the node holds it (gzip bytes for a `.gz`), or None
        when there is no such file."""
        with self._cond:
            stream = self._streams.get((namespace, pod, container))
            if stream is None:
                return None
            if name == f"{stream.restarts}.log":
                return self._cri_file(stream, stream.file_start, len(stream.records))
            index = dict(self._rotated_files(stream)).get(name)
            if index is None:
                return None
            data = self._cri_file(stream, stream.rotations[index - 1] if index else 0,
                                  stream.rotations[index])
            if not name.endswith(".gz"):
                return data
            packed = stream.gzipped.get(index)
            if packed is None:
                # A rotated file, once compressed, no longer changes: pack it once.
                packed = stream.gzipped[index] = gzip.compress(data, mtime=0)
            return packed

    @staticmethod
    def _rotated_files(stream: _Stream) -> list[tuple[str, int]]:
        """(name, index in stream.rotations) of the rotated files the node keeps, oldest
        first: the newest MAX_FILES - 1, all but the newest gzipped."""
        count = len(stream.rotations)
        kept = range(max(0, count - (MAX_FILES - 1)), count)
        files = []
        for index in kept:
            stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(stream.rotation_names[index]))
            suffix = "" if index == count - 1 else ".gz"
            files.append((f"{stream.restarts}.log.{stamp}{suffix}", index))
        return files

    @staticmethod
    def _cri_file(stream: _Stream, first: int, end: int) -> bytes:
        return b"".join(record.cri_entries() for record in stream.records[first:end])

    def read(self, namespace: str, pod: str, container: str, *,
             since_time: datetime | None = None, since_seconds: float | None = None,
             follow: bool = False, timestamps: bool = False,
             tail_lines: int | None = None, request: bool = True) -> Iterator[bytes]:
        """The log as the kubelet serves it. Not following, the iterator yields what is there
        and ends. Following, it then waits for more until the container ends; the fault
        raises LogStreamDropped from it. `request` is False for the kubelet's own read,
        which log_first_read_delay_seconds never holds back."""
        key = (namespace, pod, container)
        with self._cond:
            stream = self._stream(key)
            if request and not stream.requested:
                stream.requested = True
                self._wait_unless_closed(self._first_read_delay)
            cutoff = since_time
            if since_seconds is not None:
                by_seconds = datetime.now(timezone.utc) - timedelta(seconds=since_seconds)
                cutoff = by_seconds if cutoff is None else max(cutoff, by_seconds)
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

    def _wait_unless_closed(self, seconds: float) -> None:
        """Wait `seconds` with the condition released (the caller holds it), or until the
        book is closed (the server shuts down)."""
        deadline = time.monotonic() + seconds
        while not self._closed:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

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
