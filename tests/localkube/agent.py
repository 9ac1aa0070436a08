"""The node of localkube: kubesim's kubelet half as a node agent against the real API server.

Owns one Node (`localkube-node`, InternalIP 127.0.0.1) and what a kubelet does for it:

- registers the Node (Ready, 4 CPU, 8Gi, 110 pods; `daemonEndpoints.kubeletEndpoint.Port` is
  the agent's own HTTPS port) and renews it every HEARTBEAT_SECONDS: a Lease in
  `kube-node-lease` and the Ready condition's heartbeat, so the real node lifecycle
  controller never marks it NotReady;
- watches the pods bound to it (`fieldSelector=spec.nodeName=...`; the real scheduler binds
  them) and hands every event to kubesim's `Kubelet`, which runs their containers as local
  processes and writes status and Events through `ApiStore` (remotestore.py); after a
  dropped watch it lists again and reports what vanished as DELETED;
- serves the kubelet endpoint the API server proxies `pods/log` to:
  `GET /containerLogs/NS/POD/CONTAINER` with follow, timestamps, sinceTime, sinceSeconds,
  tailLines and limitBytes,
  from kubesim's LogBook, over HTTPS on 127.0.0.1 (the API server does not verify a
  kubelet's serving certificate unless told to, so a throwaway one does);
- the node-pressure eviction fault (`evict`), which only a node can make.

Images are kubesim's catalogue (`scenario.images`): alpine, busybox, ubuntu, debian, python
and what a scenario adds; any other image fails to pull with containerd's message.
"""

from __future__ import annotations

import threading
import time
import urllib.parse

from tests.kubesim import tls
from tests.kubesim.api import Api
from tests.kubesim.cluster import node_object
from tests.kubesim.events import EventRecorder
from tests.kubesim.informer import log_exception, object_key
from tests.kubesim.kubelet import Kubelet
from tests.kubesim.logbook import LogBook, parse_timestamp
from tests.kubesim.scenario import Node, Scenario
from tests.kubesim.store import Obj, now_rfc3339
from tests.kubesim.transport import Reply, Request, Stream, Transport
from tests.localkube.apiclient import ApiClient, ApiError, ApiUnavailable
from tests.localkube.remotestore import ApiStore, resource_path

NODE_NAME = "localkube-node"
NODE_IP = "127.0.0.1"
HEARTBEAT_SECONDS = 10.0
LEASE_SECONDS = 40
RETRY_SECONDS = 0.5


class NodeAgent:
    """See the module docstring."""

    def __init__(self, api: ApiClient, scenario: Scenario, release: str) -> None:
        self.api = api
        self.release = release
        self.node = Node(NODE_NAME)
        self.scenario = Scenario(**{**scenario.__dict__, "nodes": [self.node]})
        self.store = ApiStore(api)
        self.logbook = LogBook()
        self.recorder = EventRecorder(self.store)
        self.kubelet = Kubelet(self.store, self.logbook, self.scenario, self.recorder,
                               {NODE_NAME: NODE_IP})
        self.server = Transport(self._serve, tls.generate().server_context())
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self._known: dict[tuple[str, str], Obj] = {}

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self.server.start()
        self._register()
        for target, name in ((self._watch_pods, "pods"), (self._heartbeat, "heartbeat")):
            thread = threading.Thread(target=target, name=f"localkube-agent-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stopped.set()
        self.store.closed.set()
        self.kubelet.stop()
        self.logbook.close()
        self.server.stop()
        for thread in self._threads:
            thread.join(5.0)

    def evict(self, namespace: str, name: str) -> bool:
        return self.kubelet.evict(namespace, name)

    # -- the Node --------------------------------------------------------------------------------

    def node_object(self) -> Obj:
        node = node_object(self.node, 0, NODE_IP)
        status = node["status"]
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": self.server.port}}
        status["nodeInfo"].update(kubeletVersion=self.release, kubeProxyVersion=self.release,
                                  osImage="localkube node agent")
        node["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "localkube"
        return node

    def _register(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                self.api.request("POST", "/api/v1/nodes", self.node_object())
                return
            except ApiError as exc:
                if exc.code == 409:  # left from an earlier agent: take it over
                    self._renew_node(fresh=True)
                    return
                raise
            except ApiUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(RETRY_SECONDS)

    def _renew_node(self, fresh: bool = False) -> None:
        now = now_rfc3339()

        def beat(node: Obj) -> None:
            if fresh:
                wanted = self.node_object()
                node["status"] = wanted["status"]
            for condition in node.get("status", {}).get("conditions") or []:
                condition["lastHeartbeatTime"] = now

        self.store.update("nodes", None, NODE_NAME, beat)

    def _renew_lease(self) -> None:
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        path = resource_path("leases", "kube-node-lease", NODE_NAME)
        try:
            lease = self.api.request("GET", path)
        except ApiError as exc:
            if exc.code != 404:
                raise
            self.api.request("POST", resource_path("leases", "kube-node-lease"), {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": NODE_NAME, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": NODE_NAME, "leaseDurationSeconds": LEASE_SECONDS,
                         "renewTime": now}})
            return
        lease.setdefault("spec", {})["renewTime"] = now
        self.api.request("PUT", path, lease)

    def _heartbeat(self) -> None:
        while not self._stopped.wait(HEARTBEAT_SECONDS):
            try:
                self._renew_lease()
                self._renew_node()
            except (ApiError, ApiUnavailable):
                continue  # the next beat tries again
            except Exception:
                log_exception("the node heartbeat")

    # -- the pods bound to this node -----------------------------------------------------------

    def _dispatch(self, kind: str, pod: Obj) -> None:
        key = object_key(pod)
        if kind == "DELETED":
            self._known.pop(key, None)
        else:
            self._known[key] = pod
        self.store.observe_pod(kind, pod)
        try:
            self.kubelet.on_pod(kind, pod)
        except Exception:
            log_exception(f"the kubelet handling pod {key[0]}/{key[1]}")

    def _relist(self, selector: str) -> str:
        listed = self.api.request("GET", "/api/v1/pods", params={"fieldSelector": selector})
        items = listed.get("items") or []
        present = {object_key(pod) for pod in items}
        for key in [k for k in self._known if k not in present]:
            self._dispatch("DELETED", self._known[key])
        for pod in items:
            pod.setdefault("apiVersion", "v1")
            pod.setdefault("kind", "Pod")
            self._dispatch("MODIFIED" if object_key(pod) in self._known else "ADDED", pod)
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    def _watch_pods(self) -> None:
        selector = f"spec.nodeName={NODE_NAME}"
        rv = ""
        while not self._stopped.is_set():
            try:
                if not rv:
                    rv = self._relist(selector)
                for kind, obj in self.api.watch("/api/v1/pods", {
                        "fieldSelector": selector, "resourceVersion": rv,
                        "allowWatchBookmarks": "true", "timeoutSeconds": "300"}):
                    if self._stopped.is_set():
                        return
                    if kind == "ERROR":  # 410 Gone: the history moved on
                        rv = ""
                        break
                    rv = str(obj.get("metadata", {}).get("resourceVersion") or rv)
                    if kind != "BOOKMARK":
                        self._dispatch(kind, obj)
            except (ApiError, ApiUnavailable):
                rv = ""
                self._stopped.wait(RETRY_SECONDS)
            except Exception:
                log_exception("the pod watch")
                rv = ""
                self._stopped.wait(RETRY_SECONDS)

    # -- the kubelet's HTTPS endpoint ------------------------------------------------------------

    def _serve(self, req: Request) -> Reply | Stream:
        parts = [urllib.parse.unquote(p) for p in req.path.split("/") if p]
        if req.method == "GET" and parts in (["healthz"], ["readyz"], ["livez"]):
            return Reply(200, b"ok", "text/plain")
        if req.method != "GET" or len(parts) != 4 or parts[0] != "containerLogs":
            return Reply(404, b"404 page not found\n", "text/plain")
        _, namespace, pod, container = parts
        return self._container_logs(req, namespace, pod, container)

    def _container_logs(self, req: Request, namespace: str, pod: str,
                        container: str) -> Reply | Stream:
        def number(name: str) -> int | None:
            value = req.param(name)
            return int(value) if value not in (None, "") else None

        def flag(name: str) -> bool:
            return (req.param(name) or "").lower() in ("true", "1")

        try:
            since_text = req.param("sinceTime")
            since_time = parse_timestamp(since_text) if since_text else None
            since_seconds, tail, limit = number("sinceSeconds"), number("tailLines"), \
                number("limitBytes")
        except ValueError as exc:
            return Reply(400, f"bad log options: {exc}\n".encode(), "text/plain")
        if flag("previous"):
            return Reply(400, f'previous terminated container "{container}" in pod "{pod}" '
                         "not found\n".encode(), "text/plain")
        chunks = self.logbook.read(namespace, pod, container, since_time=since_time,
                                   since_seconds=since_seconds, follow=flag("follow"),
                                   timestamps=flag("timestamps"), tail_lines=tail)
        return Stream(200, Api._log_chunks(chunks, limit), "text/plain")
