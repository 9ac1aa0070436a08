"""The head check: whether the log API's first line was the container's first, asked of the
node's own log files.

The log API serves a container's current log file only. What the kubelet rotated away
before squarepeg's first request reached it (a container that writes containerLogMaxSize,
10 MiB by default, in its first second) cannot be seen missing through it
(docs/decisions/0270, 0280). The kubelet's `/logs/` endpoint serves the node's /var/log,
rotated files included, to whoever may `get nodes/proxy`:

    /api/v1/nodes/NODE/proxy/logs/pods/NS_POD_UID/CONTAINER/

lists `0.log` and, once rotated, `0.log.YYYYMMDD-HHMMSS` (the newest rotated one plain,
older ones gzipped). If the oldest rotated file's first line was written before the first
line the log API gave, what lies between never reached the user: the head is lost. If it
begins with that same line, or nothing was rotated, the head is whole.

The check starts on its own thread as the first line arrives (the rotated file is then at
most one rotation old) and the runner waits for its verdict before the delete, which
removes the files. It says "lost" only on proof. Whatever keeps it from looking (no right
to `nodes/proxy`, a kubelet whose `podLogsDir` is not under /var/log, an API server that
cannot be reached, the oldest file already deleted) gives no verdict: the limit the README
states for such clusters.

Two halves: pure functions (the listing, a CRI line's timestamp) and `HeadCheck`, which asks
through `kubectl get --raw`.
"""

from __future__ import annotations

import calendar
import contextlib
import html
import re
import threading
import time
import urllib.parse
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubectl_squarepeg.cluster import kubectl
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.errors import SquarepegError

# The kubelet names a rotated file after the rotation's time, to the second.
_ROTATED = re.compile(r"^(\d+)\.log\.(\d{8}-\d{6})(\.gz)?$")
_HREF = re.compile(r'<a href="([^"]*)">')
_STAMP = re.compile(
    rb"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$"
)
# Enough of a file for its first line: the kubelet splits a longer line into 16 KiB pieces.
_FIRST_LINE_BYTES = 64 * 1024
# The listing and the first line each get this long; a slower answer gives no verdict.
REQUEST_SECONDS = 10.0


def rotated_files(listing: str, restart: int = 0) -> list[str]:
    """The rotated files of the container's run number `restart` in the kubelet's
    directory listing (Go's FileServer: one `<a href="NAME">` per entry), oldest first."""
    found: list[tuple[str, str]] = []
    for href in _HREF.findall(listing):
        name = urllib.parse.unquote(html.unescape(href))
        match = _ROTATED.match(name)
        if match is not None and int(match.group(1)) == restart:
            found.append((match.group(2), name))
    return [name for _when, name in sorted(found)]


def stamp_nanos(stamp: bytes) -> int | None:
    """An RFC 3339 timestamp as nanoseconds since the epoch (the log API writes UTC with Z,
    a CRI log file the node's zone); None if it is not one."""
    match = _STAMP.match(stamp)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    fraction, zone = match.group(7) or b"", match.group(8)
    seconds = calendar.timegm((year, month, day, hour, minute, second))
    if zone != b"Z":
        sign = -1 if zone[:1] == b"-" else 1
        seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return seconds * 1_000_000_000 + int(fraction.ljust(9, b"0") or b"0")


def first_entry_stamp(data: bytes) -> bytes | None:
    """The timestamp of a CRI log file's first entry (`TIME STREAM TAG CONTENT`), if its
    first line has arrived whole enough to hold one."""
    space = data.find(b" ")
    if space <= 0 or b"\n" in data[:space]:
        return None
    stamp = data[:space]
    return stamp if stamp_nanos(stamp) is not None else None


@dataclass(frozen=True)
class HeadLoss:
    """The proof that the output's head is gone: the oldest rotated file began earlier than
    the first line received, or something was rotated and no line came at all."""

    node: str
    path: str  # the rotated file, as `kubectl get --raw` reads it
    written_from: str  # its first line's timestamp
    received_from: str | None  # the first line the log API gave, if any

    def message(self, pod: str) -> str:
        missing = (
            f"what the container wrote from {self.written_from} until {self.received_from}"
            if self.received_from
            else f"all the container wrote, from {self.written_from} on,"
        )
        return (
            f"output lost before line 1, byte 0: the node rotated the log of pod {pod} "
            f"before squarepeg's first read, and {missing} did not come"
        )

    def hint(self, commands: Commands) -> str:
        reading = commands.kubectl("get", "--raw", self.path, namespaced=False)
        return (
            "the kubelet rotates a container's log file at containerLogMaxSize, 10 MiB by "
            f"default; while the pod exists (--keep) `{reading}` reads the rotated part in "
            "the node's format"
        )


@dataclass(frozen=True)
class _Oldest:
    """The oldest rotated file the node listed, and its first line's timestamp."""

    path: str
    stamp: bytes


class HeadCheck:
    """Asks the node, on a thread, what it rotated of the container's log (see the module
    docstring). `start()` as the first line arrives, or once the container has ended if none
    has (a rotation needs a running container, so the listing is then final); `verdict()`
    with the first line's timestamp, before the delete."""

    def __init__(self, target: kubectl.Target, pod: Mapping[str, Any], container: str) -> None:
        self._target = target
        metadata = pod.get("metadata") or {}
        self._pod = str(metadata.get("name", ""))
        self._node = str((pod.get("spec") or {}).get("nodeName") or "")
        namespace = str(metadata.get("namespace") or target.namespace or "default")
        uid = str(metadata.get("uid") or "")
        self._known = bool(self._node and uid)
        node = urllib.parse.quote(self._node, safe="")
        directory = urllib.parse.quote(f"{namespace}_{self._pod}_{uid}", safe="")
        self._directory = (
            f"/api/v1/nodes/{node}/proxy/logs/pods/{directory}/"
            f"{urllib.parse.quote(container, safe='')}/"
        )
        self._oldest: _Oldest | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._thread is not None or not self._known:
                return
            self._thread = threading.Thread(target=self._check, name=f"head-{self._pod}",
                                            daemon=True)
        self._thread.start()

    def verdict(self, first_stamp: bytes, timeout: float) -> HeadLoss | None:
        """The proven loss, given the first line's timestamp (b"": no line came); None when
        the head is whole or the node did not answer within `timeout`."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        oldest = self._oldest
        if oldest is None or thread is None or thread.is_alive():
            return None
        written = stamp_nanos(oldest.stamp)
        if first_stamp:
            received = stamp_nanos(first_stamp)
            if written is None or received is None or written >= received:
                return None
        return HeadLoss(self._node, oldest.path, oldest.stamp.decode("ascii"),
                        first_stamp.decode("ascii") or None)

    def _check(self) -> None:
        # kubectl could not ask (gone, timed out): no verdict
        with contextlib.suppress(SquarepegError, OSError):
            self._oldest = self._look()

    def _look(self) -> _Oldest | None:
        listing = kubectl.run(
            ["get", "--raw", self._directory], self._target, timeout=REQUEST_SECONDS,
            namespaced=False,
        )
        if not listing.ok:
            return None  # no right to nodes/proxy, or no such directory: no verdict
        rotated = rotated_files(listing.stdout.decode("utf-8", "replace"))
        if not rotated:
            return None  # nothing was rotated before the first read: the head is whole
        path = self._directory + urllib.parse.quote(rotated[0])
        stamp = _first_stamp_of(path, self._target, gzipped=rotated[0].endswith(".gz"))
        return _Oldest(path, stamp) if stamp is not None else None


def _first_stamp_of(path: str, target: kubectl.Target, *, gzipped: bool) -> bytes | None:
    """The first entry's timestamp of a node log file, reading no more of it than that."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if gzipped else None
    got: list[bytes] = []
    arrived = threading.Event()

    def take(chunk: bytes) -> None:
        if arrived.is_set():
            return
        try:
            got.append(inflater.decompress(chunk) if inflater is not None else chunk)
        except zlib.error:
            arrived.set()
            return
        data = b"".join(got)
        if b"\n" in data or len(data) >= _FIRST_LINE_BYTES:
            arrived.set()

    child = kubectl.start(["get", "--raw", path], target, on_stdout=take, namespaced=False)
    give_up = time.monotonic() + REQUEST_SECONDS
    try:
        while not arrived.wait(0.05):
            if child.wait(0) is not None or time.monotonic() > give_up:
                break  # ended (all it printed has been taken) or too slow
    finally:
        child.terminate()
    return first_entry_stamp(b"".join(got))
