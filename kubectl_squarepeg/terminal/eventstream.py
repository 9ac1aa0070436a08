"""`run --events`: the run's phases as JSON lines, for pipelines (docs/events.md).

Owns the encoding of one event (`encode`, pure: the schema's version, the time, the name,
the fields in a fixed order), the sinks (`JsonLinesSink` writes and flushes each line
whole, under a lock, so that lines from the log, watch and signal paths never interleave
and a reader sees each one at once; `NullSink`, in terminal/console.py, what every run
without --events has: nothing is encoded, nothing asked of the cluster), and where the
stream goes (`open_sink`: a file, or `-` for stderr in place of squarepeg's own lines,
docs/decisions/0400).

What goes in is what squarepeg's lines already say: no environment value ever does
(docs/decisions/0026), and callers pass names, codes and the cluster's own messages only.
"""

from __future__ import annotations

import datetime
import json
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol, TextIO

# Bumped when a field changes meaning or goes away; new events and fields keep it.
SCHEMA_VERSION = 1
STDERR = "-"


def timestamp(epoch_seconds: float) -> str:
    """RFC 3339 in UTC with milliseconds, as a pipeline's log shipper reads it."""
    moment = datetime.datetime.fromtimestamp(epoch_seconds, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def encode(event: str, fields: dict[str, Any], epoch_seconds: float) -> str:
    """One event as one line (its `\\n` included): `version`, `time`, `event`, then the
    fields as given, None ones left out. Non-ASCII stays readable; a newline in a message
    is escaped by JSON, so a line is always one event."""
    record: dict[str, Any] = {
        "version": SCHEMA_VERSION,
        "time": timestamp(epoch_seconds),
        "event": event,
    }
    for key, value in fields.items():
        if value is not None and key not in record:
            record[key] = value
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"


class EventSink(Protocol):
    """Where a run's events go."""

    @property
    def active(self) -> bool: ...  # whether anything is written (worth a question to the cluster)

    def emit(self, event: str, **fields: Any) -> None: ...


class JsonLinesSink:
    """Writes each event as one line, flushed at once. Write errors are swallowed: the
    stream is the pipeline's view of the run, never a reason for the run to fail."""

    active = True

    def __init__(self, stream: TextIO, clock: Callable[[], float] | None = None) -> None:
        import time

        self._stream = stream
        self._clock = clock or time.time
        # Reentrant: the interrupt handler emits from the main thread, which may be inside
        # an emit of its own; each line is one write call, so lines stay whole.
        self._lock = threading.RLock()
        self._broken = False

    def emit(self, event: str, **fields: Any) -> None:
        line = encode(event, fields, self._clock())
        with self._lock:
            if self._broken:
                return
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):
                self._broken = True  # the reader went away: the run goes on without it


def open_sink(destination: str) -> JsonLinesSink:
    """The sink for `--events DESTINATION`: `-` is stderr; any other value a file, created
    or truncated, line-buffered. OSError (a missing directory, no permission) is the
    caller's to word."""
    if destination == STDERR:
        return JsonLinesSink(sys.stderr)
    return JsonLinesSink(open(destination, "w", encoding="utf-8", buffering=1))
