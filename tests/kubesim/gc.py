"""The garbage collector and the TTL-after-finished controller: deletions the cluster does
on its own.

Owns:
- Background: pods whose Job owner no longer exists (no Job of that name and uid) are
  deleted, gracefully as the API deletes (owners.delete_pod). Checked when the Job is deleted
  and whenever such a pod changes; the owner is looked up in the Store itself before a pod is
  deleted, so informer lag can never delete a live Job's pod.
- Foreground: a Job with `deletionTimestamp` and the `foregroundDeletion` finalizer has its
  pods deleted; once none is left in the Store the Job itself is deleted.
- Orphan: nothing (the API server strips the ownerReferences).
- ttlSecondsAfterFinished: a finished Job (Complete or Failed condition) is deleted when its
  TTL has passed since the condition's lastTransitionTime (second resolution), with
  background propagation, so its pods follow. (The real TTL controller uses foreground.)

Only Job owners are understood; a pod owned by another kind is never collected.
"""

from __future__ import annotations

from typing import Any

from tests.kubesim import jobs, owners
from tests.kubesim.informer import Controller
from tests.kubesim.store import Obj, Store

FOREGROUND = "foregroundDeletion"


class GarbageCollector(Controller):
    """The garbage collector's worker (see the module docstring)."""

    name = "garbage-collector"

    def __init__(self, store: Store, index: owners.OwnerIndex):
        super().__init__()
        self._store = store
        self._index = index

    # -- informer handlers -----------------------------------------------------------------

    def on_job(self, kind: str, job: Obj) -> None:
        meta = job.get("metadata", {})
        namespace = meta.get("namespace") or "default"
        if kind == "DELETED":
            self.queue.add(("gone", namespace, str(meta.get("uid"))))
            return
        if meta.get("deletionTimestamp") and FOREGROUND in (meta.get("finalizers") or []):
            self.queue.add(("foreground", namespace, meta.get("name", "")))
            return
        remaining = jobs.ttl_expiry(job)
        if remaining is not None:
            self.queue.add_after(("ttl", namespace, meta.get("name", "")), remaining)

    def on_pod(self, kind: str, pod: Obj) -> None:
        refs = owners.job_owners(pod)
        if not refs:
            return
        namespace = pod["metadata"].get("namespace") or "default"
        if kind == "DELETED":
            for ref in refs:
                job = self._store.get_raw("jobs", namespace, ref.get("name", ""))
                if job is not None and job["metadata"].get("deletionTimestamp"):
                    self.queue.add(("foreground", namespace, ref.get("name", "")))
            return
        if not self._has_owner(namespace, refs):
            self.queue.add(("orphan", namespace, pod["metadata"]["name"]))

    def _has_owner(self, namespace: str, refs: list[dict[str, Any]]) -> bool:
        for ref in refs:
            job = self._store.get_raw("jobs", namespace, ref.get("name", ""))
            if job is not None and job["metadata"].get("uid") == ref.get("uid"):
                return True
        return False

    # -- reconcile -------------------------------------------------------------------------

    def reconcile(self, key: Any) -> None:
        what, namespace, name = key
        if what == "gone":
            for ns, pod_name in self._index.pods(name):
                self._collect(ns, pod_name)
        elif what == "orphan":
            self._collect(namespace, name)
        elif what == "foreground":
            self._foreground(namespace, name)
        elif what == "ttl":
            self._ttl(namespace, name)

    def _collect(self, namespace: str, name: str) -> None:
        pod = self._store.get_raw("pods", namespace, name)
        if pod is None:
            return
        refs = owners.job_owners(pod)
        if refs and not self._has_owner(namespace, refs):
            owners.delete_pod(self._store, namespace, name, pod["metadata"].get("uid"))

    def _foreground(self, namespace: str, name: str) -> None:
        job = self._store.get_raw("jobs", namespace, name)
        if job is None or not job["metadata"].get("deletionTimestamp"):
            return
        uid = str(job["metadata"].get("uid"))
        remaining = [p for p in (self._store.get_raw("pods", ns, n)
                                 for ns, n in self._index.pods(uid)) if owners.owned_by(p, uid)]
        for pod in remaining:
            owners.delete_pod(self._store, namespace, pod["metadata"]["name"],
                              pod["metadata"].get("uid"))
        remaining = [p for p in remaining
                     if self._store.get_raw("pods", namespace, p["metadata"]["name"]) is not None]
        if not remaining:
            current = self._store.get_raw("jobs", namespace, name)
            if current is not None and current["metadata"].get("uid") == uid:
                self._store.delete("jobs", namespace, name)

    def _ttl(self, namespace: str, name: str) -> None:
        job = self._store.get_raw("jobs", namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        remaining = jobs.ttl_expiry(job)
        if remaining is None:
            return
        if remaining > 0:
            self.queue.add_after(("ttl", namespace, name), remaining)
            return
        self._store.delete("jobs", namespace, name)
