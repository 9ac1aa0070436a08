"""The object store: every API object kubesim holds, one global resourceVersion, and watches.

Objects are indexed by (resource, namespace) then name; cluster-scoped resources use the
namespace None. Stored objects are copy-on-write: `update` replaces an object with a mutated
copy and never changes a stored dict in place, so readers inside this package (the HTTP
server serializing a list, a watch delivering an event) may hold stored dicts without copying
them, while the public methods hand out deep copies that callers may change freely.

Watches keep a bounded history of events so a watch can start from a list's resourceVersion;
a resourceVersion older than the history raises `Expired` (the API answers 410 Gone).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

from tests.kubesim.selectors import (
    FieldSelector,
    LabelSelector,
    parse_field_selector,
    parse_label_selector,
)

Obj = dict[str, Any]

CLUSTER_SCOPED = frozenset({"namespaces", "nodes"})
HISTORY_EVENTS = 50_000


class AlreadyExists(Exception):
    """create() of a name that is already taken in that resource and namespace."""

    def __init__(self, resource: str, namespace: str | None, name: str):
        super().__init__(f"{resource} {name!r} already exists in {namespace or 'the cluster'}")
        self.resource = resource
        self.namespace = namespace
        self.name = name


class Expired(Exception):
    """A watch asked to start from a resourceVersion older than the kept history."""


def now_rfc3339() -> str:
    """The current time as the apiserver writes timestamps: second resolution, UTC, `Z`."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _meta(obj: Obj) -> dict[str, Any]:
    meta: dict[str, Any] = obj.setdefault("metadata", {})
    return meta


def _namespace_of(resource: str, obj: Obj) -> str | None:
    return None if resource in CLUSTER_SCOPED else obj.get("metadata", {}).get("namespace")


class _Event:
    __slots__ = ("new", "old", "resource", "rv", "type")

    def __init__(self, rv: int, kind: str, resource: str, new: Obj, old: Obj | None):
        self.rv = rv
        self.type = kind
        self.resource = resource
        self.new = new
        self.old = old


class Watch:
    """A stream of (type, object) for one resource, filtered by namespace and selectors.

    Iterating blocks until the next event and ends when the watch is closed (by `close()`,
    or by the store dropping every watch as a fault). Objects from `__iter__` are copies;
    `next_raw` returns stored objects for read-only use (serialization) without copying.
    """

    def __init__(self, store: Store, resource: str, namespace: str | None,
                 labels: LabelSelector, fields: FieldSelector):
        self._store = store
        self.resource = resource
        self.namespace = namespace
        self._labels = labels
        self._fields = fields
        self._queue: deque[tuple[str, Obj]] = deque()
        self._cond = threading.Condition(threading.Lock())
        self.closed = False
        self.dropped = False

    def _matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata", {})
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self._labels.matches(meta.get("labels")) and self._fields.matches(obj)

    def _translate(self, event: _Event) -> tuple[str, Obj] | None:
        """The event as this watcher sees it: an object leaving the selector is DELETED for it,
        one entering it is ADDED, as the apiserver's watch cache does."""
        new_in = self._matches(event.new)
        if event.type != "MODIFIED":
            return (event.type, event.new) if new_in else None
        old_in = self._matches(event.old)
        if new_in and old_in:
            return ("MODIFIED", event.new)
        if new_in:
            return ("ADDED", event.new)
        if old_in:
            return ("DELETED", event.new)
        return None

    def _offer(self, event: _Event) -> None:
        item = self._translate(event)
        if item is None:
            return
        with self._cond:
            self._queue.append(item)
            self._cond.notify_all()

    def pending(self) -> int:
        """How many events are queued and not yet taken."""
        with self._cond:
            return len(self._queue)

    def push_front(self, kind: str, obj: Obj) -> None:
        """Put a synthetic event first (the ADDED events a resourceVersion=0 watch starts with)."""
        with self._cond:
            self._queue.appendleft((kind, obj))
            self._cond.notify_all()

    def next_raw(self, timeout: float | None = None) -> tuple[str, Obj] | None:
        """The next event, or None when the timeout passes or the watch is closed."""
        with self._cond:
            if not self._queue and not self.closed:
                self._cond.wait(timeout)
            if self._queue:
                return self._queue.popleft()
            return None

    def __iter__(self) -> Iterator[tuple[str, Obj]]:
        while True:
            item = self.next_raw(timeout=1.0)
            if item is not None:
                yield item[0], copy.deepcopy(item[1])
            elif self.closed:
                return

    def close(self, *, dropped: bool = False) -> None:
        with self._cond:
            self.closed = True
            self.dropped = self.dropped or dropped
            self._queue.clear()
            self._cond.notify_all()
        self._store._forget(self)


class Store:
    """The thread-safe object store with one global, monotonic resourceVersion."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._objects: dict[str, dict[str | None, dict[str, Obj]]] = {}
        self._rv = itertools.count(1)
        self._last_rv = 0
        self._history: deque[_Event] = deque(maxlen=HISTORY_EVENTS)
        self._watches: set[Watch] = set()

    # -- internals -------------------------------------------------------------------------

    def _bucket(self, resource: str, namespace: str | None) -> dict[str, Obj]:
        return self._objects.setdefault(resource, {}).setdefault(namespace, {})

    def _next_rv(self) -> int:
        self._last_rv = next(self._rv)
        return self._last_rv

    def _emit(self, kind: str, resource: str, new: Obj, old: Obj | None) -> None:
        event = _Event(self._last_rv, kind, resource, new, old)
        self._history.append(event)
        for watch in list(self._watches):
            if watch.resource == resource:
                watch._offer(event)
        self._changed.notify_all()

    def _forget(self, watch: Watch) -> None:
        with self._lock:
            self._watches.discard(watch)

    def _iter_stored(self, resource: str, namespace: str | None) -> Iterator[Obj]:
        buckets = self._objects.get(resource, {})
        if resource in CLUSTER_SCOPED or namespace is not None:
            yield from buckets.get(None if resource in CLUSTER_SCOPED else namespace, {}).values()
            return
        for bucket in buckets.values():
            yield from bucket.values()

    # -- the public API --------------------------------------------------------------------

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Hold the store for a series of calls (a collection delete): one lock taken once,
        rather than once per object against every controller thread."""
        with self._lock:
            yield

    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._last_rv)

    def create(self, resource: str, obj: Obj, *, dry_run: bool = False,
               uid: str | None = None) -> Obj:
        """Store a new object, filling uid, resourceVersion, creationTimestamp and generation.

        With dry_run the object is checked and filled in as if created, but not stored and
        no event is emitted (the apiserver's dryRun=All). `uid` is the uid to give it (the
        API server picks it before defaulting, which writes it into a Job's selector)."""
        obj = copy.deepcopy(obj)
        meta = _meta(obj)
        namespace = _namespace_of(resource, obj)
        with self._lock:
            bucket = self._bucket(resource, namespace)
            if meta.get("name") in bucket:
                raise AlreadyExists(resource, namespace, str(meta.get("name")))
            meta["uid"] = uid or str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            meta.setdefault("generation", 1)
            if dry_run:
                meta.pop("resourceVersion", None)
                return obj
            meta["resourceVersion"] = str(self._next_rv())
            bucket[meta["name"]] = obj
            self._emit("ADDED", resource, obj, None)
            return copy.deepcopy(obj)

    def get(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        with self._lock:
            obj = self.get_raw(resource, namespace, name)
            return copy.deepcopy(obj) if obj is not None else None

    def get_raw(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        """The stored object itself, for read-only use; never change it."""
        with self._lock:
            scope = None if resource in CLUSTER_SCOPED else namespace
            return self._objects.get(resource, {}).get(scope, {}).get(name)

    def list_raw(self, resource: str, namespace: str | None = None, *,
                 labels: LabelSelector | None = None,
                 fields: FieldSelector | None = None) -> tuple[list[Obj], str]:
        """Stored objects (read-only; never change them) sorted by namespace and name, and
        the list resourceVersion."""
        with self._lock:
            name = fields.exact_name() if fields else None
            if name is not None and (namespace is not None or resource in CLUSTER_SCOPED):
                one = self.get_raw(resource, namespace, name)
                candidates: Iterator[Obj] = iter([one] if one is not None else [])
            else:
                candidates = self._iter_stored(resource, namespace)
            items = [
                obj for obj in candidates
                if (labels is None or labels.matches(obj["metadata"].get("labels")))
                and (fields is None or fields.matches(obj))
            ]
            rv = str(self._last_rv)
        items.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
        return items, rv

    def list(self, resource: str, namespace: str | None = None, *,
             label_selector: str | None = None,
             field_selector: str | None = None) -> tuple[list[Obj], str]:
        """Copies of the matching objects and the list resourceVersion. Selector strings that
        do not parse raise selectors.SelectorError."""
        items, rv = self.list_raw(
            resource, namespace, labels=parse_label_selector(label_selector),
            fields=parse_field_selector(field_selector),
        )
        return copy.deepcopy(items), rv

    def update(self, resource: str, namespace: str | None, name: str,
               mutate: Callable[[Obj], None]) -> Obj | None:
        """Apply `mutate` to a copy of the object under the lock, store it with a new
        resourceVersion and emit MODIFIED. None when it does not exist. An exception from
        `mutate` leaves the object unchanged."""
        with self._lock:
            old = self.get_raw(resource, namespace, name)
            if old is None:
                return None
            new = copy.deepcopy(old)
            mutate(new)
            meta = _meta(new)
            meta["name"], meta["uid"] = old["metadata"]["name"], old["metadata"]["uid"]
            if new.get("spec") != old.get("spec"):
                meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
            meta["resourceVersion"] = str(self._next_rv())
            self._bucket(resource, _namespace_of(resource, old))[name] = new
            self._emit("MODIFIED", resource, new, old)
            return copy.deepcopy(new)

    def delete(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        """Remove the object now and emit DELETED; None when it does not exist."""
        with self._lock:
            old = self.get_raw(resource, namespace, name)
            if old is None:
                return None
            del self._bucket(resource, _namespace_of(resource, old))[name]
            gone = copy.copy(old)
            gone["metadata"] = dict(old["metadata"], resourceVersion=str(self._next_rv()))
            self._emit("DELETED", resource, gone, None)
            return copy.deepcopy(gone)

    def watch(self, resource: str, namespace: str | None = None, *,
              label_selector: str | None = None, field_selector: str | None = None,
              since_rv: int = 0) -> Watch:
        """A watch of future changes; with since_rv > 0, also every change after since_rv
        that is still in the history (raises Expired when since_rv is older than it)."""
        return self.watch_parsed(
            resource, namespace, labels=parse_label_selector(label_selector),
            fields=parse_field_selector(field_selector), since_rv=since_rv,
        )

    def watch_parsed(self, resource: str, namespace: str | None, *, labels: LabelSelector,
                     fields: FieldSelector, since_rv: int = 0) -> Watch:
        watch = Watch(self, resource, namespace, labels, fields)
        with self._lock:
            if since_rv:
                oldest = self._history[0].rv if self._history else self._last_rv + 1
                if since_rv < oldest - 1 and len(self._history) == self._history.maxlen:
                    raise Expired(f"too old resource version: {since_rv} ({oldest - 1})")
                for event in self._history:
                    if event.rv > since_rv and event.resource == resource:
                        watch._offer(event)
            self._watches.add(watch)
        return watch

    def drop_watches(self) -> int:
        """End every open watch abruptly (the fault); returns how many were open."""
        with self._lock:
            watches = list(self._watches)
        for watch in watches:
            watch.close(dropped=True)
        return len(watches)

    def wait_for_change(self, timeout: float, since_rv: str | None = None) -> None:
        """Block until any object changes or the timeout passes. Pass the resource_version
        read before a controller's pass as since_rv so a change during the pass is not
        missed."""
        with self._lock:
            before = int(since_rv) if since_rv is not None else self._last_rv
            self._changed.wait_for(lambda: self._last_rv != before, timeout)
