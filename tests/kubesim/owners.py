"""Ownership between Jobs and their pods, for the controllers that act on it.

Owns the index of pods by owner uid (kept by the pods informer, and filled eagerly by the job
controller when it creates a pod, so a reconcile never misses its own pod), reading a pod's
Job owner references, and how a controller deletes a pod: as the API server does for a
DELETE with the pod's own grace period, i.e. at once when the pod is not bound to a node or
already finished, else by setting `deletionTimestamp` (now + grace) and
`deletionGracePeriodSeconds` so the kubelet stops it gracefully and removes it.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from typing import Any, TypeGuard

from tests.kubesim.informer import object_key
from tests.kubesim.store import Obj, Store

TERMINAL = ("Succeeded", "Failed")
DEFAULT_GRACE_SECONDS = 30


def job_owners(obj: Obj) -> list[dict[str, Any]]:
    """The ownerReferences of `obj` that point at a batch Job."""
    return [ref for ref in obj.get("metadata", {}).get("ownerReferences") or []
            if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/")]


def controller_job(obj: Obj) -> dict[str, Any] | None:
    """The controlling Job reference of `obj`, if any."""
    return next((ref for ref in job_owners(obj) if ref.get("controller")), None)


def owned_by(obj: Obj | None, uid: str) -> TypeGuard[Obj]:
    return obj is not None and any(ref.get("uid") == uid for ref in job_owners(obj))


class OwnerIndex:
    """Pods by the uid of the Jobs that own them (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_owner: dict[str, set[tuple[str, str]]] = {}
        self._owners_of: dict[tuple[str, str], set[str]] = {}

    def on_pod(self, kind: str, pod: Obj) -> None:
        key = object_key(pod)
        uids = set() if kind == "DELETED" else {str(r.get("uid")) for r in job_owners(pod)}
        with self._lock:
            for uid in self._owners_of.pop(key, set()) - uids:
                pods = self._by_owner.get(uid)
                if pods is not None:
                    pods.discard(key)
                    if not pods:
                        del self._by_owner[uid]
            if uids:
                self._owners_of[key] = uids
                for uid in uids:
                    self._by_owner.setdefault(uid, set()).add(key)

    def add(self, uid: str, namespace: str, name: str) -> None:
        with self._lock:
            self._owners_of.setdefault((namespace, name), set()).add(uid)
            self._by_owner.setdefault(uid, set()).add((namespace, name))

    def pods(self, uid: str) -> list[tuple[str, str]]:
        with self._lock:
            return sorted(self._by_owner.get(uid, ()))


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def delete_pod(store: Store, namespace: str, name: str, uid: str | None = None) -> bool:
    """Delete a pod as the API would (see the module docstring); True if it was there."""
    pod = store.get_raw("pods", namespace, name)
    if pod is None or (uid is not None and pod["metadata"].get("uid") != uid):
        return False
    if pod["metadata"].get("deletionTimestamp"):
        return True
    spec = pod.get("spec") or {}
    if not spec.get("nodeName") or (pod.get("status") or {}).get("phase") in TERMINAL:
        store.delete("pods", namespace, name)
        return True
    grace = spec.get("terminationGracePeriodSeconds")
    grace = DEFAULT_GRACE_SECONDS if grace is None else int(grace)
    pod_uid = pod["metadata"].get("uid")

    def mutate(obj: Obj) -> None:
        if obj["metadata"].get("uid") != pod_uid or obj["metadata"].get("deletionTimestamp"):
            return
        when = datetime.now(timezone.utc) + timedelta(seconds=grace)
        obj["metadata"]["deletionTimestamp"] = rfc3339(when)
        obj["metadata"]["deletionGracePeriodSeconds"] = grace

    store.update("pods", namespace, name, mutate)
    return True
