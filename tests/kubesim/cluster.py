"""The cluster half of kubesim: nodes and the controllers that act on what the API stores.

Owns wiring and lifetime: `Cluster.start()` registers a Node object per scenario node and
starts the informers (one thread per watched resource: pods, jobs, nodes) and the workers:
the scheduler (scheduler.py), the kubelet of every node (kubelet.py, container.py,
process.py), the job controller (jobs.py) and the garbage collector with the TTL controller
(gc.py). `stop()` kills every container process group and joins the threads; it is
idempotent and also runs at interpreter exit. `evict()` is the node-pressure fault.

The API half and this half meet only in the Store (and the LogBook): pods and Jobs arrive
defaulted; this half owns pod and Job `status`, Node objects, the Events it records, the
container processes and the log records.

Scenario options (`scenario.options`) this half reads, with their defaults:

| option | default | what |
|---|---|---|
| crash_backoff_seconds, crash_backoff_max_seconds | 1, 10 | CrashLoopBackOff (real: 10, 300) |
| image_pull_backoff_seconds, ..._max_seconds | 1, 10 | ImagePullBackOff (real: 10, 300) |
| err_image_pull_seconds | 0.5 | how long ErrImagePull shows before ImagePullBackOff |
| pull_failure_seconds | 0 | how long a failing pull takes |
| config_retry_seconds | 1 | retry of CreateContainerConfigError |
| memory_poll_seconds | 0.05 | RSS polling for memory limits |
| scheduler_retry_seconds | 10 | retry of unschedulable pods without a cluster change |
| job_backoff_seconds | 0 | delay before replacing a failed Job pod (real: 10, doubling) |
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from typing import TYPE_CHECKING

from tests.kubesim.events import EventRecorder
from tests.kubesim.gc import GarbageCollector
from tests.kubesim.informer import Informer
from tests.kubesim.jobs import JobController
from tests.kubesim.kubelet import Kubelet
from tests.kubesim.logbook import LogBook
from tests.kubesim.owners import OwnerIndex
from tests.kubesim.scenario import Node, Scenario
from tests.kubesim.scheduler import Scheduler
from tests.kubesim.store import AlreadyExists, Obj, Store, now_rfc3339

if TYPE_CHECKING:
    from tests.kubesim.admission import Admission

KUBELET_VERSION = "v1.32.4"


def node_object(node: Node, index: int, ip: str) -> Obj:
    """The Node a kubelet registers for a scenario node."""
    resources = {"cpu": str(node.cpu), "memory": str(node.memory), "pods": str(node.pods),
                 "ephemeral-storage": "100Gi"}
    now = now_rfc3339()

    def condition(type_: str, status: str, reason: str, message: str) -> Obj:
        return {"type": type_, "status": status, "reason": reason, "message": message,
                "lastHeartbeatTime": now, "lastTransitionTime": now}

    spec: Obj = {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]}
    if node.taints:
        spec["taints"] = [dict(t) for t in node.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": dict(node.labels),
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                          "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                          "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID",
                          "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": ip},
                          {"type": "Hostname", "address": node.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": "amd64", "bootID": "", "containerRuntimeVersion":
                "containerd://1.7.24", "kernelVersion": "6.1.0", "kubeProxyVersion":
                KUBELET_VERSION, "kubeletVersion": KUBELET_VERSION, "machineID": "",
                "operatingSystem": "linux", "osImage": "kubesim", "systemUUID": "",
            },
        },
    }


class Cluster:
    """Scheduler, kubelets, job controller and garbage collector over one Store."""

    def __init__(self, store: Store, logbook: LogBook, scenario: Scenario,
                 admission: Admission | None = None) -> None:
        self.store = store
        self.logbook = logbook
        self.scenario = scenario
        self.recorder = EventRecorder(store)
        self.node_ips = {node.name: f"10.0.0.{10 + i}" for i, node in enumerate(scenario.nodes)}
        self.owners = OwnerIndex()
        self.scheduler = Scheduler(store, scenario, self.recorder)
        self.kubelet = Kubelet(store, logbook, scenario, self.recorder, self.node_ips)
        self.jobs = JobController(store, scenario, self.recorder, self.owners, admission)
        self.gc = GarbageCollector(store, self.owners)
        self._pods = Informer(store, "pods")
        self._jobs = Informer(store, "jobs")
        self._nodes = Informer(store, "nodes")
        for handler in (self.owners.on_pod, self.scheduler.on_pod, self.kubelet.on_pod,
                        self.jobs.on_pod, self.gc.on_pod):
            self._pods.add_handler(handler)
        self._jobs.add_handler(self.jobs.on_job)
        self._jobs.add_handler(self.gc.on_job)
        self._nodes.add_handler(self.scheduler.on_node)
        self._lock = threading.Lock()
        self._started = False
        self._stopped = False

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        atexit.register(self.stop)
        for index, node in enumerate(self.scenario.nodes):
            with contextlib.suppress(AlreadyExists):
                self.store.create("nodes", node_object(node, index, self.node_ips[node.name]))
        for controller in (self.scheduler, self.jobs, self.gc):
            controller.start()
        for informer in (self._nodes, self._jobs, self._pods):
            informer.start()
        for informer in (self._nodes, self._jobs, self._pods):
            informer.synced.wait(5.0)

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        try:
            self.kubelet.stop()
        finally:
            for informer in (self._pods, self._jobs, self._nodes):
                informer.stop()
            for controller in (self.scheduler, self.jobs, self.gc):
                controller.stop()
            self.kubelet.registry.kill_all()

    def evict(self, namespace: str, name: str) -> bool:
        """Evict a pod for node memory pressure; False if there is no such pod."""
        return self.kubelet.evict(namespace, name)
