"""How the cluster's controllers learn about changes: informers and work queues, as in
client-go, over the in-process Store instead of HTTP.

An `Informer` watches one resource of the Store from a thread of its own and calls its
handlers with every (type, object) in order. Objects are the stored dicts themselves
(copy-on-write in the Store): handlers must never change them. When a watch is dropped (the
`drop_watches` fault drops the cluster's watches too) it resumes from the last
resourceVersion it saw; if that is older than the Store's history it lists again and
synthesizes the events it missed. Handlers must be quick and idempotent: they queue work.

A `WorkQueue` holds keys for a controller's worker thread: a key queued twice is processed
once, a key queued while being processed is processed again afterwards, `add_after` delays.
"""

from __future__ import annotations

import heapq
import itertools
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

from tests.kubesim.store import Expired, Obj, Store

Handler = Callable[[str, Obj], None]


def object_key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata", {})
    return meta.get("namespace") or "", meta.get("name", "")


def log_exception(where: str) -> None:
    """Report a bug in a controller thread on stderr; the thread carries on."""
    print(f"kubesim: error in {where}:", file=sys.stderr)
    traceback.print_exc(file=sys.stderr)


class Informer:
    """One resource's events, delivered to handlers on one thread (see the module docstring)."""

    def __init__(self, store: Store, resource: str):
        self._store = store
        self.resource = resource
        self._handlers: list[Handler] = []
        self._known: dict[tuple[str, str], Obj] = {}
        self._stopped = threading.Event()
        self._watch: Any = None
        self._thread = threading.Thread(target=self._run, name=f"kubesim-informer-{resource}",
                                        daemon=True)
        self.synced = threading.Event()

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        watch = self._watch
        if watch is not None:
            watch.close()
        self._thread.join(5.0)

    def _dispatch(self, kind: str, obj: Obj) -> None:
        key = object_key(obj)
        if kind == "DELETED":
            self._known.pop(key, None)
        else:
            self._known[key] = obj
        for handler in self._handlers:
            try:
                handler(kind, obj)
            except Exception:
                log_exception(f"a {self.resource} handler")

    def _relist(self) -> int:
        """Resynchronize: every stored object as ADDED, every vanished one as DELETED.
        Returns the list's resourceVersion, where a resumed watch must start."""
        self._watch = self._store.watch(self.resource)
        items, rv = self._store.list_raw(self.resource)
        present = {object_key(obj) for obj in items}
        for key in [k for k in self._known if k not in present]:
            self._dispatch("DELETED", self._known[key])
        for obj in items:
            self._dispatch("ADDED", obj)
        return int(rv)

    def _run(self) -> None:
        try:
            last_rv = self._relist()
            self.synced.set()
            while not self._stopped.is_set():
                item = self._watch.next_raw(timeout=0.5)
                if item is not None:
                    kind, obj = item
                    last_rv = max(last_rv, int(obj["metadata"].get("resourceVersion") or 0))
                    self._dispatch(kind, obj)
                    continue
                if not self._watch.closed or self._stopped.is_set():
                    continue
                try:
                    self._watch = self._store.watch(self.resource, since_rv=last_rv)
                except Expired:
                    last_rv = self._relist()
        except Exception:
            log_exception(f"the {self.resource} informer")
        finally:
            self.synced.set()


class WorkQueue:
    """Deduplicating keys for one worker (see the module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[Hashable] = deque()
        self._queued: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._dirty: set[Hashable] = set()
        self._delayed: list[tuple[float, int, Hashable]] = []
        self._seq = itertools.count()
        self._shutdown = False

    def add(self, key: Hashable) -> None:
        with self._cond:
            if self._shutdown or key in self._queued:
                return
            if key in self._processing:
                self._dirty.add(key)
                return
            self._queued.add(key)
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: Hashable, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            heapq.heappush(self._delayed, (time.monotonic() + delay, next(self._seq), key))
            self._cond.notify()

    def get(self) -> Hashable | None:
        """The next key to process (call done(key) after), or None after shutdown."""
        with self._cond:
            while True:
                if self._shutdown:
                    return None
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    _, _, key = heapq.heappop(self._delayed)
                    if key not in self._queued:
                        if key in self._processing:
                            self._dirty.add(key)
                        else:
                            self._queued.add(key)
                            self._queue.append(key)
                if self._queue:
                    key = self._queue.popleft()
                    self._queued.discard(key)
                    self._processing.add(key)
                    return key
                timeout = self._delayed[0][0] - now if self._delayed else None
                self._cond.wait(timeout)

    def done(self, key: Hashable) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._queued.add(key)
                self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()


class Controller:
    """A worker thread draining a WorkQueue into `reconcile(key)`."""

    name = "controller"

    def __init__(self) -> None:
        self.queue = WorkQueue()
        self._thread = threading.Thread(target=self._work, name=f"kubesim-{self.name}",
                                        daemon=True)

    def reconcile(self, key: Any) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.queue.shutdown()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def _work(self) -> None:
        while True:
            key = self.queue.get()
            if key is None:
                return
            try:
                self.reconcile(key)
            except Exception:
                log_exception(f"{self.name} reconciling {key!r}")
            finally:
                self.queue.done(key)
