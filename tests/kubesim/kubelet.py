"""The kubelet of every simulated node: runs the pods bound to them, writes their status.

Owns the pod-level life on a node; one `PodWorker` (a thread) per pod, one `ContainerRunner`
(container.py) per container:

- Start: as soon as a pod is bound, the first status: phase Pending, hostIP(s), podIP(s),
  startTime, qosClass, every container waiting `ContainerCreating` (`PodInitializing` with
  init containers), conditions. Init containers run one after the other (a restartable one, a
  native sidecar, only has to start); then all containers run at once. Each container writes
  its own status the moment it changes (an exited main container shows terminated while its
  sidecar still runs), and every write recomputes phase and conditions (podstatus.py).
- Graceful deletion: when the API server sets `deletionTimestamp`, the kubelet records
  Killing, sends SIGTERM to every running container (its main process, which as PID 1
  ignores it without a handler: process.py), waits
  `deletionGracePeriodSeconds` (else the pod's terminationGracePeriodSeconds, else 30),
  SIGKILLs what is left, writes the final status (phase Failed, or Succeeded if every
  container exited 0) and deletes the pod from the Store.
- Active deadline (`activeDeadlineSeconds`, counted from the pod's start; set or lowered on a
  running pod too, as `stop` does): reason DeadlineExceeded and the kubelet's message at
  once, a Warning event, the containers stopped as for a deletion (SIGTERM, the pod's grace
  period, SIGKILL), then phase Failed (the real kubelet's phase stays Running until then).
- A pod deleted from the Store directly is forgotten: its processes are SIGKILLed, its logs
  and scratch directories removed.
- Eviction (the node-pressure fault): processes SIGKILLed, phase Failed, reason Evicted,
  message `The node was low on resource: memory. ...`, a DisruptionTarget condition, every
  container terminated exit 137 `ContainerStatusUnknown`, as real nodes report it.

Scratch working directories live under one temporary directory per cluster, removed by
`stop()`. Pod IPs are 10.244.<node>.<n>; node IPs 10.0.0.<10+node>.
"""

from __future__ import annotations

import contextlib
import copy
import os
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable

from tests.kubesim import images, podstatus
from tests.kubesim.container import ContainerRunner
from tests.kubesim.events import EventRecorder
from tests.kubesim.informer import log_exception, object_key
from tests.kubesim.logbook import LogBook
from tests.kubesim.process import ContainerProcess, MemoryMonitor, ProcessRegistry
from tests.kubesim.scenario import Image, Scenario
from tests.kubesim.store import Obj, Store, now_rfc3339

TERMINAL = ("Succeeded", "Failed")
DEFAULT_GRACE_SECONDS = 30.0
EVICTION_MESSAGE = ("The node was low on resource: memory. Threshold quantity: 100Mi, "
                    "available: {available}Ki. ")
EVICTION_CONTAINER = "Container {name} was using {usage}Ki, request is {request}, has larger " \
                     "consumption of memory. "
UNKNOWN_MESSAGE = "The container could not be located when the pod was terminated"

Key = tuple[str, str]


class _Stale(Exception):
    """The stored pod is not the one this worker runs (another uid): skip the write."""


class Kubelet:
    """Every node's kubelet (see the module docstring)."""

    def __init__(self, store: Store, logbook: LogBook, scenario: Scenario,
                 recorder: EventRecorder, node_ips: dict[str, str]):
        self.store = store
        self.logbook = logbook
        logbook.configure(scenario.options)  # log rotation and early ends (logbook.py)
        self.scenario = scenario
        self.recorder = recorder
        self.options = scenario.options
        self.node_ips = node_ips
        self.registry = ProcessRegistry()
        self.monitor = MemoryMonitor(float(scenario.options.get("memory_poll_seconds", 0.05)))
        self.scratch_root = tempfile.mkdtemp(prefix="kubesim-containers-")
        self.stopped = False
        self._lock = threading.Lock()
        self._workers: dict[Key, PodWorker] = {}
        self._pulled: set[tuple[str, str]] = set()
        self._next_ip: dict[str, int] = {}

    # -- shared node state -----------------------------------------------------------------

    def image_present(self, node: str, ref: images.Reference, entry: Image | None) -> bool:
        if entry is None:
            return False
        if entry.pull_seconds <= 0:
            return True
        with self._lock:
            return (node, ref.normalized) in self._pulled

    def mark_pulled(self, node: str, ref: images.Reference) -> None:
        with self._lock:
            self._pulled.add((node, ref.normalized))

    def allocate_ip(self, node: str) -> str:
        index = sorted(self.node_ips).index(node) if node in self.node_ips else 0
        with self._lock:
            n = self._next_ip.get(node, 0)
            self._next_ip[node] = n + 1
        return f"10.244.{index}.{2 + n % 250}"

    def node_allocatable(self, node: str) -> dict[str, str]:
        obj = self.store.get_raw("nodes", None, node)
        return dict(((obj or {}).get("status") or {}).get("allocatable") or {})

    # -- the informer's view -----------------------------------------------------------------

    def on_pod(self, kind: str, pod: Obj) -> None:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or node not in self.node_ips or self.stopped:
            return
        key = object_key(pod)
        meta = pod["metadata"]
        uid = meta.get("uid")
        with self._lock:
            worker = self._workers.get(key)
            if worker is not None and worker.uid != uid and kind != "DELETED":
                self._workers.pop(key)  # a new pod took the name; the old one is gone
                stale, worker = worker, None
            else:
                stale = None
        if stale is not None:
            stale.forget()
        if kind == "DELETED":
            if worker is not None and worker.uid == uid:
                with self._lock:
                    if self._workers.get(key) is worker:
                        del self._workers[key]
                worker.forget()
            return
        if worker is None:
            if (pod.get("status") or {}).get("phase") in TERMINAL:
                return
            if meta.get("deletionTimestamp"):
                self._delete_unstarted(pod)
                return
            worker = PodWorker(self, pod)
            with self._lock:
                if self.stopped or key in self._workers:
                    return
                self._workers[key] = worker
            worker.start()
        worker.spec_changed(pod.get("spec") or {})
        if meta.get("deletionTimestamp"):
            grace = meta.get("deletionGracePeriodSeconds")
            if grace is None:
                grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
            worker.request_deletion(DEFAULT_GRACE_SECONDS if grace is None else float(grace))

    def _delete_unstarted(self, pod: Obj) -> None:
        meta = pod["metadata"]
        current = self.store.get_raw("pods", meta.get("namespace"), meta["name"])
        if current is not None and current["metadata"].get("uid") == meta.get("uid"):
            self.store.delete("pods", meta.get("namespace"), meta["name"])

    def forget_worker(self, worker: PodWorker) -> None:
        with self._lock:
            if self._workers.get(worker.key) is worker:
                del self._workers[worker.key]
        worker.forget()

    def running_process(self, namespace: str, name: str, uid: str | None,
                        container: str) -> ContainerProcess | None:
        """The live process of a pod's container, for an attach; None when it is not
        running (not started yet, exited, or the pod is not this node's)."""
        with self._lock:
            worker = self._workers.get((namespace, name))
        if worker is None or (uid is not None and worker.uid != uid):
            return None
        for runner in list(worker.runners):
            if runner.name == container and runner.running():
                return runner.process
        return None

    def scratch_dir_of(self, namespace: str, name: str, uid: str | None, container: str) -> str:
        """A pod's container's scratch directory (its pod directory holds the emptyDir
        volumes, mountns.py), for an exec into it."""
        with self._lock:
            worker = self._workers.get((namespace, name))
        if worker is None or (uid is not None and worker.uid != uid):
            raise FileNotFoundError(f"pod {namespace}/{name} is not on this node")
        return worker.scratch_dir(container)

    # -- faults and shutdown -----------------------------------------------------------------

    def evict(self, namespace: str, name: str) -> bool:
        pod = self.store.get_raw("pods", namespace, name)
        if pod is None:
            return False
        with self._lock:
            worker = self._workers.get((namespace, name))
        if worker is not None and worker.uid == pod["metadata"].get("uid"):
            worker.evict()
        else:
            evict_status(self.store, self.recorder, pod, usage={}, host=None)
        return True

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            workers = list(self._workers.values())
        for worker in workers:
            worker.freeze()
        self.registry.kill_all()
        deadline = time.monotonic() + 5.0
        for worker in workers:
            worker.join(max(0.1, deadline - time.monotonic()))
        self.registry.kill_all()
        self.monitor.stop()
        shutil.rmtree(self.scratch_root, ignore_errors=True)

    def worker_count(self) -> int:
        with self._lock:
            return len(self._workers)


def evict_status(store: Store, recorder: EventRecorder, pod: Obj, *, usage: dict[str, int],
                 host: str | None) -> Obj | None:
    """Write the status of a pod the node evicted (see the module docstring)."""
    uid = pod["metadata"].get("uid")
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    worst = max(containers, key=lambda c: usage.get(c.get("name", ""), 0), default=None)
    message = EVICTION_MESSAGE.format(available=51200)
    if worst is not None:
        request = ((worst.get("resources") or {}).get("requests") or {}).get("memory", "0")
        message += EVICTION_CONTAINER.format(
            name=worst.get("name", ""), usage=max(usage.get(worst.get("name", ""), 0), 1024)
            // 1024, request=request)
    now = now_rfc3339()

    def unknown(container: Obj, previous: Obj | None) -> Obj:
        status = dict(previous or {"name": container.get("name", ""), "lastState": {},
                                   "restartCount": 0, "image": container.get("image", ""),
                                   "imageID": ""})
        status.update({"ready": False, "started": False, "state": {"terminated": {
            "exitCode": 137, "reason": "ContainerStatusUnknown", "message": UNKNOWN_MESSAGE}}})
        return status

    def mutate(obj: Obj) -> None:
        if obj["metadata"].get("uid") != uid:
            raise _Stale()
        status = obj.setdefault("status", {})
        for field, section in (("containerStatuses", "containers"),
                               ("initContainerStatuses", "initContainers")):
            previous = {s.get("name"): s for s in status.get(field) or []}
            statuses = []
            for container in (obj.get("spec") or {}).get(section) or []:
                old = previous.get(container.get("name"))
                if old is not None and "terminated" in (old.get("state") or {}):
                    statuses.append(old)
                else:
                    statuses.append(unknown(container, old))
            if statuses:
                status[field] = sorted(statuses, key=lambda s: s.get("name", "")) \
                    if field == "containerStatuses" else statuses
        status["phase"] = "Failed"
        status["reason"] = "Evicted"
        status["message"] = message
        fresh = podstatus.conditions(obj, "Failed", sandbox=False)
        fresh.append({"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                      "reason": "TerminationByKubelet", "message": message})
        status["conditions"] = podstatus.merge_conditions(status.get("conditions"), fresh, now)

    try:
        updated = store.update("pods", pod["metadata"].get("namespace"), pod["metadata"]["name"],
                               mutate)
    except _Stale:
        return None
    if updated is not None:
        recorder.record(updated, "Pod", "Warning", "Evicted", message, component="kubelet",
                        host=host)
    return updated


class PodWorker:
    """One pod on a node (see the module docstring)."""

    def __init__(self, kubelet: Kubelet, pod: Obj):
        self.kubelet = kubelet
        meta = pod["metadata"]
        self.namespace = str(meta.get("namespace") or "default")
        self.name = str(meta["name"])
        self.key: Key = (self.namespace, self.name)
        self.uid = meta.get("uid")
        self.spec: Obj = copy.deepcopy(pod.get("spec") or {})
        self.node = str(self.spec.get("nodeName"))
        self.host_ip = kubelet.node_ips.get(self.node, "10.0.0.10")
        self.pod_ip = kubelet.allocate_ip(self.node)
        self._snapshot: Obj = pod
        self.stopping = threading.Event()  # no more starts or restarts
        self._lock = threading.RLock()
        self._frozen = False  # no more status writes
        self._terminating = False  # deleted or evicted: the phase ends terminal
        self._deleting = False
        self._deadline = 0.0
        self._started_at = time.monotonic()
        self._finished = threading.Condition(threading.Lock())
        self.runners: list[ContainerRunner] = []
        self._scratch: list[str] = []
        self._thread = threading.Thread(target=self._run, name=f"kubesim-pod-{self.name}",
                                        daemon=True)
        self._forgotten = False
        self._main_done = threading.Event()

    # -- helpers for the runners ---------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        if self._thread.is_alive():
            self._thread.join(timeout)
        for runner in list(self.runners):
            runner.join(max(0.05, deadline - time.monotonic()))

    def pod_snapshot(self) -> Obj:
        current = self.kubelet.store.get_raw("pods", self.namespace, self.name)
        if current is not None and current["metadata"].get("uid") == self.uid:
            self._snapshot = current
        return self._snapshot

    def scratch_dir(self, container: str) -> str:
        path = os.path.join(self.kubelet.scratch_root, f"{self.namespace}_{self.name}_"
                            f"{str(self.uid)[:8]}", container)
        os.makedirs(path, exist_ok=True)
        with self._lock:
            self._scratch.append(os.path.dirname(path))
        return path

    def event(self, type_: str, reason: str, message: str, *,
              field_path: str | None = None) -> None:
        if self._frozen and reason not in ("Killing",):
            return
        self.kubelet.recorder.record(self.pod_snapshot(), "Pod", type_, reason, message,
                                     component="kubelet", host=self.node, field_path=field_path)

    def runner_finished(self) -> None:
        with self._finished:
            self._finished.notify_all()

    def signal_new_process(self, process: ContainerProcess) -> None:
        """A container that started while the pod was already terminating."""
        with self._lock:
            deleting = self._deleting
        if deleting:
            process.kill(signal.SIGTERM)
        else:
            process.kill(signal.SIGKILL)

    # -- status --------------------------------------------------------------------------------

    def _write(self, change: Callable[[Obj], None] | None = None) -> Obj | None:
        with self._lock:
            if self._frozen or self.kubelet.stopped:
                return None
            terminating = self._terminating
            now = now_rfc3339()

            def mutate(pod: Obj) -> None:
                if pod["metadata"].get("uid") != self.uid:
                    raise _Stale()
                status = pod.setdefault("status", {})
                if change is not None:
                    change(status)
                before = status.get("phase")
                phase = podstatus.phase(pod, terminating=terminating)
                if before in TERMINAL:
                    phase = before  # a finished pod never runs again
                status["phase"] = phase
                fresh = podstatus.conditions(pod, phase, sandbox=phase not in TERMINAL)
                status["conditions"] = podstatus.merge_conditions(status.get("conditions"),
                                                                  fresh, now)

            try:
                updated = self.kubelet.store.update("pods", self.namespace, self.name, mutate)
            except _Stale:
                return None
            if updated is not None:
                self._snapshot = self.kubelet.store.get_raw("pods", self.namespace,
                                                            self.name) or self._snapshot
            return updated

    def set_container_status(self, kind: str, status: Obj) -> None:
        field = "containerStatuses" if kind == "regular" else "initContainerStatuses"

        def change(pod_status: Obj) -> None:
            statuses = [s for s in pod_status.get(field) or [] if s.get("name") != status["name"]]
            statuses.append(status)
            if field == "containerStatuses":
                statuses.sort(key=lambda s: s.get("name", ""))
            else:
                order = [c.get("name") for c in self.spec.get("initContainers") or []]
                statuses.sort(key=lambda s: order.index(s.get("name"))
                              if s.get("name") in order else len(order))
            pod_status[field] = statuses

        self._write(change)

    def _initial_status(self) -> None:
        now = now_rfc3339()
        has_init = bool(self.spec.get("initContainers"))

        def waiting(container: Obj, reason: str) -> Obj:
            return {"name": container.get("name", ""), "state": {"waiting": {"reason": reason}},
                    "lastState": {}, "ready": False, "restartCount": 0,
                    "image": container.get("image", ""), "imageID": "", "started": False}

        def change(status: Obj) -> None:
            status.setdefault("phase", "Pending")
            status["hostIP"] = self.host_ip
            status["hostIPs"] = [{"ip": self.host_ip}]
            status["podIP"] = self.pod_ip
            status["podIPs"] = [{"ip": self.pod_ip}]
            status.setdefault("startTime", now)
            status.setdefault("qosClass", podstatus.qos_class(self.spec))
            if has_init:
                status["initContainerStatuses"] = [
                    waiting(c, "PodInitializing") for c in self.spec["initContainers"]]
            reason = "PodInitializing" if has_init else "ContainerCreating"
            status["containerStatuses"] = sorted(
                (waiting(c, reason) for c in self.spec.get("containers") or []),
                key=lambda s: s["name"])

        self._write(change)

    # -- the pod's life ------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._initial_status()
            if self._run_init_containers():
                regular = [ContainerRunner(self, c, "regular")
                           for c in self.spec.get("containers") or []]
                with self._lock:
                    self.runners.extend(regular)
                for runner in regular:
                    runner.start()
                if not self._wait_for(regular, self._active_deadline):
                    self._pass_deadline(regular)
            self._stop_sidecars()
            self._write()
        except Exception:
            log_exception(f"pod {self.namespace}/{self.name}")
            for runner in list(self.runners):
                runner.kill(signal.SIGKILL)
        finally:
            self._main_done.set()
            self.runner_finished()

    def _active_deadline(self) -> float | None:
        """When `activeDeadlineSeconds` runs out (counted from the pod's start here)."""
        seconds = self.spec.get("activeDeadlineSeconds")
        return None if seconds is None else self._started_at + float(seconds)

    def spec_changed(self, spec: Obj) -> None:
        """A pod update: of what the API server lets change on a running pod, the kubelet
        here honours `activeDeadlineSeconds` (set, or shortened: squarepeg's `stop`)."""
        seconds = spec.get("activeDeadlineSeconds")
        with self._lock:
            if seconds == self.spec.get("activeDeadlineSeconds"):
                return
            self.spec["activeDeadlineSeconds"] = seconds
        with self._finished:
            self._finished.notify_all()

    def _pass_deadline(self, runners: list[ContainerRunner]) -> None:
        """The kubelet's active deadline: its containers stopped with the pod's grace
        period, then the pod Failed with reason DeadlineExceeded. The real kubelet (1.34,
        seen on localkube) reports the phase Running through the grace period and Failed
        only with the containers' ends; the reason is written here at once, without a
        phase, so that no container's end is ever seen without it."""
        message = "Pod was active on the node longer than the specified deadline"

        def reason(status: Obj) -> None:
            status.update(reason="DeadlineExceeded", message=message)

        def failed(status: Obj) -> None:
            status.update(phase="Failed", reason="DeadlineExceeded", message=message)

        self._write(reason)
        self.event("Warning", "DeadlineExceeded", message)
        self.stopping.set()
        grace = float(self.spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))
        for runner in runners:
            runner.kill(signal.SIGTERM)
        if not self._wait_for(runners, time.monotonic() + grace):
            for runner in runners:
                runner.kill(signal.SIGKILL)
            self._wait_for(runners, time.monotonic() + 5.0)
        self._write(failed)

    def _wait_for(self, runners: list[ContainerRunner],
                  deadline: float | Callable[[], float | None] | None = None) -> bool:
        """Wait until every runner is done (or the deadline passes); True if all are. A
        callable deadline is asked again at every wake-up (a pod update may move it)."""
        with self._finished:
            while not all(r.done.is_set() for r in runners):
                until = deadline() if callable(deadline) else deadline
                timeout = None if until is None else until - time.monotonic()
                if timeout is not None and timeout <= 0:
                    return False
                self._finished.wait(timeout if timeout is not None else 1.0)
        return True

    def _run_init_containers(self) -> bool:
        """Run the init containers in order; True when the pod may start its containers."""
        for container in self.spec.get("initContainers") or []:
            if self.stopping.is_set():
                return False
            kind = "sidecar" if podstatus.is_sidecar(container) else "init"
            runner = ContainerRunner(self, container, kind)
            with self._lock:
                self.runners.append(runner)
            runner.start()
            if kind == "sidecar":
                while not runner.started.wait(0.5):
                    if runner.done.is_set() or self.stopping.is_set():
                        return False
                continue
            self._wait_for([runner])
            if (runner.final or {}).get("exitCode") != 0:
                return False
        return not self.stopping.is_set()

    def _stop_sidecars(self) -> None:
        sidecars = [r for r in self.runners if r.kind == "sidecar" and not r.done.is_set()]
        if not sidecars:
            return
        self.stopping.set()
        grace = float(self.spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))
        for runner in sidecars:
            if runner.running():
                self.event("Normal", "Killing", f"Stopping container {runner.name}",
                           field_path=runner.field_path)
            runner.kill(signal.SIGTERM)
        if not self._wait_for(sidecars, time.monotonic() + grace):
            for runner in sidecars:
                runner.kill(signal.SIGKILL)
            self._wait_for(sidecars, time.monotonic() + 5.0)

    # -- deletion, eviction, forgetting --------------------------------------------------------

    def request_deletion(self, grace: float) -> None:
        deadline = time.monotonic() + max(grace, 0.0)
        with self._lock:
            again = self._deleting
            self._deadline = min(self._deadline, deadline) if again else deadline
            self._deleting = True
            self._terminating = True
        if again:  # a shorter grace period: wake the deleter (lock order: _finished alone)
            self.runner_finished()
            return
        self.stopping.set()
        threading.Thread(target=self._delete, name=f"kubesim-delete-{self.name}",
                         daemon=True).start()

    def _delete(self) -> None:
        try:
            with self._lock:
                runners = list(self.runners)
            for runner in runners:
                if runner.running():
                    self.event("Normal", "Killing", f"Stopping container {runner.name}",
                               field_path=runner.field_path)
                runner.kill(signal.SIGTERM)
            if not self._settle(lambda: self._deadline):
                with self._lock:
                    runners = list(self.runners)
                for runner in runners:
                    runner.kill(signal.SIGKILL)
                self._settle(lambda: time.monotonic() + 5.0)
            self._write()
            current = self.kubelet.store.get_raw("pods", self.namespace, self.name)
            if current is not None and current["metadata"].get("uid") == self.uid \
                    and not self.kubelet.stopped:
                self.kubelet.store.delete("pods", self.namespace, self.name)
        except Exception:
            log_exception(f"deleting pod {self.namespace}/{self.name}")
        finally:
            self.kubelet.forget_worker(self)

    def _settle(self, deadline: Callable[[], float]) -> bool:
        """Wait until the pod thread and every container are done, or the (moving) deadline
        passes; True if they are done. Containers started meanwhile count too."""
        with self._finished:
            while True:
                with self._lock:
                    runners = list(self.runners)
                if self._main_done.is_set() and all(r.done.is_set() for r in runners):
                    return True
                remaining = deadline() - time.monotonic()
                if remaining <= 0:
                    return False
                self._finished.wait(min(remaining, 0.5))

    def evict(self) -> None:
        with self._lock:
            self._terminating = True
            self._frozen = True
            runners = list(self.runners)
        self.stopping.set()
        usage = self.kubelet.monitor.usage({r.process.pid for r in runners if r.process})
        per_container = {r.name: usage.get(r.process.pid, 0) for r in runners if r.process}
        for runner in runners:
            if runner.running():
                self.kubelet.recorder.record(
                    self.pod_snapshot(), "Pod", "Normal", "Killing",
                    f"Stopping container {runner.name}", component="kubelet", host=self.node,
                    field_path=runner.field_path)
            runner.kill(signal.SIGKILL)
        evict_status(self.kubelet.store, self.kubelet.recorder, self.pod_snapshot(),
                     usage=per_container, host=self.node)

    def freeze(self) -> None:
        """No more writes, starts or restarts; kill every process now."""
        with self._lock:
            self._frozen = True
            runners = list(self.runners)
        self.stopping.set()
        for runner in runners:
            runner.kill(signal.SIGKILL)

    def forget(self) -> None:
        """The pod is gone from the Store: kill, drop its logs, clean its directories."""
        with self._lock:
            if self._forgotten:
                return
            self._forgotten = True
        self.freeze()
        for runner in list(self.runners):
            runner.close_log()
        self.kubelet.logbook.remove(self.namespace, self.name)
        threading.Thread(target=self._cleanup, name=f"kubesim-cleanup-{self.name}",
                         daemon=True).start()

    def _cleanup(self) -> None:
        self.join(10.0)
        with self._lock:
            paths = set(self._scratch)
        for path in paths:
            with contextlib.suppress(OSError):
                shutil.rmtree(path, ignore_errors=True)
