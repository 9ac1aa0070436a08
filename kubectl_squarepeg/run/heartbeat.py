"""The run's heartbeat: its Pod or Job says, every HEARTBEAT_SECONDS, that its run is alive.

Owns the `squarepeg.io/alive-at` annotation (plan/labels.py) while a run that is not detached
goes on: one `kubectl annotate --overwrite` of the run's own resource, on a thread of its
own, first FIRST_BEAT_SECONDS after the create (a short run pays nothing) and then every
HEARTBEAT_SECONDS, with the machine's UTC time. A run killed with SIGKILL stops renewing it;
once it is older than orphan_sweep_silence, the next sweep of the same user ends and deletes
the resource (run/orphans.py, decision 0350). Two kubectl processes, and two API requests, a
minute per run.

A renewal that fails because the user may not patch the resource (or it is gone) ends the
heartbeat: a resource that never got the annotation is never taken for silent, so a user
without the right keeps today's behaviour rather than having live runs swept. Any other
failure (the API server restarting) is tried again at the next beat. Never raises.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone

from kubectl_squarepeg.cluster import kubectl, verbs
from kubectl_squarepeg.plan.labels import ALIVE_AT_ANNOTATION

HEARTBEAT_SECONDS = 30.0
FIRST_BEAT_SECONDS = 5.0
# kubectl's words for a renewal that will never succeed.
_FINAL = ("forbidden", "notfound", "not found")


def alive_at(now: float) -> str:
    """The annotation's value: a UTC time in RFC 3339, to the second."""
    return datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Heartbeat:
    """Renews the run's `alive-at` annotation until stopped."""

    def __init__(
        self,
        target: kubectl.Target,
        kind: str,
        name: str,
        *,
        clock: Callable[[], float] = time.time,
        first: float = FIRST_BEAT_SECONDS,
        every: float = HEARTBEAT_SECONDS,
    ) -> None:
        self._target = target
        self._kind = kind
        self._name = name
        self._clock = clock
        self._first = first
        self._every = every
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)
        self.beats = 0

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        """No more renewals (a renewal in flight ends with the run's other children)."""
        self._stopped.set()

    def _beat(self) -> None:
        pause = self._first
        while not self._stopped.wait(pause):
            pause = self._every
            try:
                result = verbs.annotate(
                    self._target,
                    self._kind,
                    self._name,
                    f"{ALIVE_AT_ANNOTATION}={alive_at(self._clock())}",
                )
            except Exception:  # best effort: nothing may escape into the run
                continue
            if result.ok:
                self.beats += 1
            elif any(word in result.error_text.lower() for word in _FINAL):
                return
