"""The control loops that belong to the API half: namespace termination and quota status.

- A namespace being deleted (phase Terminating) has its pods deleted gracefully, its Jobs
  deleted with Background propagation, its events and quotas removed; once no pod or Job is
  left, the namespace itself goes (the namespace controller and its `kubernetes` finalizer).
- Each ResourceQuota's `status.used` follows what its namespace uses (the quota controller),
  so `kubectl get quota` and `describe` read true numbers; admission itself computes usage
  fresh and does not depend on this loop.
One thread, woken by store changes, at most every 0.1 s.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from tests.kubesim.admission import quota_status
from tests.kubesim.store import Store

Obj = dict[str, Any]
PERIOD = 0.1


class Housekeeping:
    def __init__(self, store: Store, delete: Callable[[str, str, str, Obj], None]):
        """`delete(resource, namespace, name, options)` deletes as the API would."""
        self.store = store
        self.delete = delete
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubesim-housekeeping",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(5)

    def _run(self) -> None:
        seen = self.store.resource_version
        while not self._stop.is_set():
            self.store.wait_for_change(1.0, seen)
            seen = self.store.resource_version
            try:
                self.pass_once()
            except Exception:  # a failed pass must not end the loop; report it
                traceback.print_exc(file=sys.stderr)
            self._stop.wait(PERIOD)

    def pass_once(self) -> None:
        namespaces, _ = self.store.list_raw("namespaces")
        for ns in namespaces:
            if (ns.get("status") or {}).get("phase") == "Terminating":
                self._finish_namespace(ns["metadata"]["name"])
        quotas, _ = self.store.list_raw("resourcequotas")
        for quota in quotas:
            status = quota_status(self.store, quota)
            if status != quota.get("status"):
                meta = quota["metadata"]

                def refresh(obj: Obj, status: Obj = status) -> None:
                    obj["status"] = status

                self.store.update("resourcequotas", meta["namespace"], meta["name"], refresh)

    def _finish_namespace(self, name: str) -> None:
        jobs, _ = self.store.list_raw("jobs", name)
        for job in jobs:
            if not job["metadata"].get("deletionTimestamp"):
                self.delete("jobs", name, job["metadata"]["name"],
                            {"propagationPolicy": "Background"})
        pods, _ = self.store.list_raw("pods", name)
        for pod in pods:
            if not pod["metadata"].get("deletionTimestamp"):
                self.delete("pods", name, pod["metadata"]["name"], {})
        for resource in ("events", "resourcequotas"):
            for obj in self.store.list_raw(resource, name)[0]:
                self.store.delete(resource, name, obj["metadata"]["name"])
        if not self.store.list_raw("pods", name)[0] and not self.store.list_raw("jobs", name)[0]:
            self.store.delete("namespaces", None, name)
