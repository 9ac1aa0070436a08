"""Events the cluster components record: core/v1 Event objects in the Store, as
`kubectl get events` and `kubectl describe` show them.

Owns the Event shape (involvedObject, reason, message, type, count, first/lastTimestamp,
source, reportingComponent/Instance) and the aggregation a real event recorder does: the same
object, reason, message and source within ten minutes bumps `count` and `lastTimestamp` of
one Event instead of creating another. Names are `<object>.<hex nanoseconds>` like real ones.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.kubesim.store import AlreadyExists, Obj, Store, now_rfc3339

AGGREGATE_SECONDS = 600.0

KIND_API_VERSION = {"Pod": "v1", "Node": "v1", "Job": "batch/v1"}


class EventRecorder:
    """Creates and aggregates Events (thread-safe)."""

    def __init__(self, store: Store):
        self._store = store
        self._lock = threading.Lock()
        # aggregation key -> (event namespace, event name, monotonic time of the last one)
        self._recent: dict[tuple[Any, ...], tuple[str, str, float]] = {}

    def record(self, obj: Obj, kind: str, type_: str, reason: str, message: str, *,
               component: str, host: str | None = None, field_path: str | None = None) -> None:
        """Record that `reason` happened to `obj` (a stored object of kind `kind`)."""
        meta = obj.get("metadata", {})
        namespace = meta.get("namespace") or "default"
        involved = {
            "apiVersion": KIND_API_VERSION.get(kind, "v1"),
            "kind": kind,
            "name": meta.get("name", ""),
            "namespace": namespace,
            "resourceVersion": meta.get("resourceVersion", ""),
            "uid": meta.get("uid", ""),
        }
        if field_path:
            involved["fieldPath"] = field_path
        key = (namespace, involved["uid"], reason, message, component, host, field_path, type_)
        now = now_rfc3339()
        with self._lock:
            recent = self._recent.get(key)
            if recent is not None and time.monotonic() - recent[2] < AGGREGATE_SECONDS:
                updated = self._store.update("events", recent[0], recent[1],
                                             lambda e: _bump(e, now))
                if updated is not None:
                    self._recent[key] = (recent[0], recent[1], time.monotonic())
                    return
            name = f"{involved['name']}.{time.time_ns():x}"
            source: dict[str, str] = {"component": component}
            if host:
                source["host"] = host
            event = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "source": source,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
                "type": type_,
                "eventTime": None,
                "reportingComponent": component,
                "reportingInstance": host or "",
            }
            try:
                self._store.create("events", event)
            except AlreadyExists:  # two events in the same nanosecond: the first one stands
                return
            self._recent[key] = (namespace, name, time.monotonic())
            if len(self._recent) > 10_000:
                self._forget_old()

    def _forget_old(self) -> None:
        cutoff = time.monotonic() - AGGREGATE_SECONDS
        for key in [k for k, v in self._recent.items() if v[2] < cutoff]:
            del self._recent[key]


def _bump(event: Obj, now: str) -> None:
    event["count"] = int(event.get("count") or 1) + 1
    event["lastTimestamp"] = now
