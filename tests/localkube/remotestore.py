"""kubesim's Store interface over the real API server, so kubesim's kubelet (kubelet.py,
container.py, events.py) runs unchanged as localkube's node agent.

Owns the translation of the few Store calls the kubelet half makes:

- `get_raw("pods", ns, name)`: the pod as the agent's informer last saw it (else a GET);
- `update("pods", ...)`: read-modify-write of `pods/NAME/status` (PUT with the
  resourceVersion; on 409 Conflict it reads again and re-applies the change);
- `delete("pods", ...)`: DELETE with `gracePeriodSeconds: 0` and the uid as precondition,
  as the kubelet ends a terminated pod;
- `create("events", ...)`, `update("events", ...)`: POST / PUT of core/v1 Events;
- `get_raw("nodes", None, name)`, `update("nodes", ...)`: GET / PUT of the Node.

A write that finds the API server unreachable (it may be restarting) is retried every half
second for up to WRITE_RETRY_SECONDS, as the kubelet's status manager keeps syncing: a
container that exits while the API server is down still shows terminated once it is back.
It subclasses Store for the type only: the in-memory part of Store is never used.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from typing import Any

from tests.kubesim.store import AlreadyExists, Obj, Store
from tests.localkube.apiclient import ApiClient, ApiError, ApiUnavailable

WRITE_RETRY_SECONDS = 90.0
CONFLICT_RETRIES = 20


def resource_path(resource: str, namespace: str | None, name: str | None = None) -> str:
    group = "/apis/coordination.k8s.io/v1" if resource == "leases" else "/api/v1"
    path = group + (f"/namespaces/{namespace}" if namespace else "") + f"/{resource}"
    return path + (f"/{name}" if name else "")


class ApiStore(Store):
    """See the module docstring."""

    def __init__(self, api: ApiClient) -> None:
        super().__init__()
        self.api = api
        self.closed = threading.Event()
        self._pods: dict[tuple[str, str], Obj] = {}
        self._cache_lock = threading.Lock()

    # -- the informer keeps the pod cache ----------------------------------------------------

    def observe_pod(self, kind: str, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace")), str(meta.get("name")))
        with self._cache_lock:
            if kind == "DELETED":
                current = self._pods.get(key)
                if current is not None and current["metadata"].get("uid") == meta.get("uid"):
                    del self._pods[key]
                return
            current = self._pods.get(key)
            if current is None or _rv(pod) >= _rv(current) or \
                    current["metadata"].get("uid") != meta.get("uid"):
                self._pods[key] = pod

    # -- calls with retries --------------------------------------------------------------------

    def _retrying(self, call: Callable[[], Obj]) -> Obj:
        deadline = time.monotonic() + WRITE_RETRY_SECONDS
        while True:
            try:
                return call()
            except ApiUnavailable:
                if self.closed.is_set() or time.monotonic() > deadline:
                    raise
                self.closed.wait(0.5)

    # -- the Store interface the kubelet half uses ---------------------------------------------

    def get_raw(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        if resource == "pods":
            with self._cache_lock:
                cached = self._pods.get((str(namespace), name))
            if cached is not None:
                return cached
        try:
            return self._retrying(lambda: self.api.request(
                "GET", resource_path(resource, namespace, name)))
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise

    def get(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        found = self.get_raw(resource, namespace, name)
        return copy.deepcopy(found) if found is not None else None

    def create(self, resource: str, obj: Obj, *, dry_run: bool = False,
               **_: Any) -> Obj:
        namespace = (obj.get("metadata") or {}).get("namespace")
        body = {k: v for k, v in obj.items() if v is not None}
        try:
            return self._retrying(lambda: self.api.request(
                "POST", resource_path(resource, namespace), body))
        except ApiError as exc:
            if exc.code == 409:
                raise AlreadyExists(resource, namespace, str(obj["metadata"].get("name"))) \
                    from None
            raise

    def update(self, resource: str, namespace: str | None, name: str,
               mutate: Callable[[Obj], None]) -> Obj | None:
        suffix = "/status" if resource == "pods" else ""
        current = self.get_raw(resource, namespace, name)
        for _ in range(CONFLICT_RETRIES):
            if current is None:
                return None
            changed = copy.deepcopy(current)
            mutate(changed)
            body = {k: v for k, v in changed.items() if v is not None}
            try:
                updated = self._retrying(lambda body=body: self.api.request(  # type: ignore[misc]
                    "PUT", resource_path(resource, namespace, name) + suffix, body))
            except ApiError as exc:
                if exc.code == 404:
                    return None
                if exc.code != 409:
                    raise
                try:
                    current = self._retrying(lambda: self.api.request(
                        "GET", resource_path(resource, namespace, name)))
                except ApiError as again:
                    if again.code == 404:
                        return None
                    raise
                continue
            if resource == "pods":
                self.observe_pod("MODIFIED", updated)
            return updated
        raise RuntimeError(f"{resource} {namespace}/{name}: too many conflicts")

    def delete(self, resource: str, namespace: str | None, name: str) -> Obj | None:
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        current = self.get_raw(resource, namespace, name)
        uid = (current or {}).get("metadata", {}).get("uid")
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            return self._retrying(lambda: self.api.request(
                "DELETE", resource_path(resource, namespace, name), body))
        except ApiError as exc:
            if exc.code in (404, 409):
                return None
            raise


def _rv(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0
