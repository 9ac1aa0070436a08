"""The scheduler: binds pending pods to nodes, or says why it cannot.

Owns the fit of a pod on the scenario's nodes, in the default scheduler's filter order: a
PVC volume whose claim does not exist (PreFilter: no node is even tried), a cordoned node
(`spec.unschedulable`), untolerated NoSchedule/NoExecute taints, nodeSelector and required
node affinity, then resources (pod count, and the pod's cpu and memory requests, the sum over
its containers or the largest init container, limits standing in for absent requests)
against each node's allocatable minus what its bound, unfinished pods request.

Binding sets spec.nodeName and the condition PodScheduled=True and records `Scheduled`. A pod
that fits nowhere stays Pending with PodScheduled=False reason Unschedulable and a Warning
`FailedScheduling` whose message is worded like the real one, e.g.
`0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No
preemption victims found for incoming pod.` It is tried again when capacity frees (a pod
finishes or goes away), when a node changes, and every `scheduler_retry_seconds` (scenario
option, default 10; the real scheduler waits up to 5 minutes without a cluster event).
Among the nodes that fit, the least requested one wins (ties: by name).

Not modelled: preemption, priorities, pod (anti-)affinity, topology spread, ports, volume
topology, scheduler names other than the default one.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.kubesim.events import EventRecorder
from tests.kubesim.informer import Controller, object_key
from tests.kubesim.quantities import QuantityError, parse_cpu, parse_memory
from tests.kubesim.scenario import Scenario
from tests.kubesim.store import Obj, Store, now_rfc3339

DEFAULT_SCHEDULER = "default-scheduler"
TERMINAL = ("Succeeded", "Failed")

Key = tuple[str, str]


@dataclass(frozen=True)
class Request:
    cpu: float = 0.0
    memory: int = 0


def _quantity(values: Mapping[str, Any] | None, name: str) -> str | None:
    value = (values or {}).get(name)
    return None if value is None else str(value)


def container_request(container: Obj) -> Request:
    resources = container.get("resources") or {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits") or {}
    cpu = _quantity(requests, "cpu") or _quantity(limits, "cpu")
    memory = _quantity(requests, "memory") or _quantity(limits, "memory")
    try:
        return Request(parse_cpu(cpu) if cpu else 0.0, parse_memory(memory) if memory else 0)
    except QuantityError:
        return Request()


def pod_request(spec: Obj) -> Request:
    """What the pod asks for: the sum over containers, or the largest init container."""
    containers = [container_request(c) for c in spec.get("containers") or []]
    inits = [container_request(c) for c in spec.get("initContainers") or []]
    cpu = sum(r.cpu for r in containers)
    memory = sum(r.memory for r in containers)
    for init in inits:
        cpu, memory = max(cpu, init.cpu), max(memory, init.memory)
    return Request(cpu, memory)


def tolerates(tolerations: list[Obj] | None, taint: Obj) -> bool:
    for toleration in tolerations or []:
        effect = toleration.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        operator = toleration.get("operator") or "Equal"
        key = toleration.get("key")
        if operator == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and (toleration.get("value") or "") == (
                taint.get("value") or ""):
            return True
    return False


def _expression_matches(expr: Obj, labels: Mapping[str, str]) -> bool:
    key, operator = expr.get("key", ""), expr.get("operator", "")
    values = [str(v) for v in expr.get("values") or []]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def affinity_matches(spec: Obj, node: Obj) -> bool:
    """nodeSelector and required node affinity against a node's labels (and name)."""
    labels = node.get("metadata", {}).get("labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution")) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    fields = {"metadata.name": node.get("metadata", {}).get("name", "")}
    for term in terms:
        expressions = term.get("matchExpressions") or []
        field_expressions = term.get("matchFields") or []
        if not expressions and not field_expressions:
            continue
        if all(_expression_matches(e, labels) for e in expressions) and all(
                _expression_matches(e, fields) for e in field_expressions):
            return True
    return False


@dataclass
class NodeFit:
    """The outcome for one node: reasons it does not fit, and whether preemption could help."""

    reasons: list[str]
    resolvable: bool = True


def missing_claim(spec: Obj, namespace: str, scenario: Scenario) -> str | None:
    claims = set(scenario.persistentvolumeclaims.get(namespace, []))
    for volume in spec.get("volumes") or []:
        claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if claim and claim not in claims:
            return str(claim)
    return None


def fit_on_node(spec: Obj, request: Request, node: Obj, used: Request,
                pods_on_node: int) -> NodeFit:
    node_spec = node.get("spec") or {}
    tolerations = spec.get("tolerations")
    if node_spec.get("unschedulable") and not tolerates(
            tolerations, {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}):
        return NodeFit(["node(s) were unschedulable"], resolvable=False)
    for taint in node_spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations,
                                                                                taint):
            return NodeFit(
                [f"node(s) had untolerated taint {{{taint.get('key', '')}: "
                 f"{taint.get('value', '')}}}"], resolvable=False)
    if not affinity_matches(spec, node):
        return NodeFit(["node(s) didn't match Pod's node affinity/selector"], resolvable=False)
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    reasons = []
    try:
        max_pods = int(str(allocatable.get("pods", "110")))
        cpu = parse_cpu(str(allocatable.get("cpu", "0")))
        memory = parse_memory(str(allocatable.get("memory", "0")))
    except (QuantityError, ValueError):
        return NodeFit(["node(s) had invalid allocatable resources"], resolvable=False)
    if pods_on_node + 1 > max_pods:
        reasons.append("Too many pods")
    if request.cpu > 0 and used.cpu + request.cpu > cpu + 1e-9:
        reasons.append("Insufficient cpu")
    if request.memory > 0 and used.memory + request.memory > memory:
        reasons.append("Insufficient memory")
    return NodeFit(reasons)


def _histogram(counts: dict[str, int]) -> str:
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def fit_error(total: int, fits: list[NodeFit], prefilter: str | None = None) -> str:
    """The scheduler's FitError text for a pod that fits on none of `total` nodes."""
    message = f"0/{total} nodes are available:"
    preemption: dict[str, int] = {}
    if prefilter is not None:
        message += f" {prefilter}."
        if total:
            preemption["Preemption is not helpful for scheduling"] = total
    else:
        reasons: dict[str, int] = {}
        for fit in fits:
            for reason in fit.reasons:
                reasons[reason] = reasons.get(reason, 0) + 1
            verdict = ("No preemption victims found for incoming pod" if fit.resolvable
                       else "Preemption is not helpful for scheduling")
            preemption[verdict] = preemption.get(verdict, 0) + 1
        if reasons:
            message += f" {_histogram(reasons)}."
    if preemption:
        message += f" preemption: 0/{total} nodes are available: {_histogram(preemption)}."
    return message


class Scheduler(Controller):
    """The scheduler's worker (see the module docstring)."""

    name = "scheduler"

    def __init__(self, store: Store, scenario: Scenario, recorder: EventRecorder):
        super().__init__()
        self._store = store
        self._scenario = scenario
        self._recorder = recorder
        self._retry = float(scenario.options.get("scheduler_retry_seconds", 10.0))
        self._lock = threading.Lock()
        self._bound: dict[Key, tuple[str, Request]] = {}
        self._unschedulable: set[Key] = set()

    # -- informer handlers -----------------------------------------------------------------

    def on_pod(self, kind: str, pod: Obj) -> None:
        key = object_key(pod)
        spec = pod.get("spec") or {}
        if kind == "DELETED":
            with self._lock:
                freed = self._bound.pop(key, None) is not None
                self._unschedulable.discard(key)
            if freed:
                self._retry_unschedulable()
            return
        node = spec.get("nodeName")
        if node:
            finished = (pod.get("status") or {}).get("phase") in TERMINAL
            with self._lock:
                self._unschedulable.discard(key)
                if finished:
                    freed = self._bound.pop(key, None) is not None
                else:
                    freed = False
                    if key not in self._bound:
                        self._bound[key] = (node, pod_request(spec))
            if freed:
                self._retry_unschedulable()
            return
        if spec.get("schedulerName", DEFAULT_SCHEDULER) != DEFAULT_SCHEDULER:
            return
        if pod.get("metadata", {}).get("deletionTimestamp"):
            return
        with self._lock:
            known = key in self._unschedulable
        if not known:
            self.queue.add(key)

    def on_node(self, kind: str, node: Obj) -> None:
        self._retry_unschedulable()

    def _retry_unschedulable(self) -> None:
        with self._lock:
            keys = list(self._unschedulable)
        for key in keys:
            self.queue.add(key)

    # -- scheduling ------------------------------------------------------------------------

    def _usage(self) -> tuple[dict[str, Request], dict[str, int]]:
        used: dict[str, Request] = {}
        counts: dict[str, int] = {}
        with self._lock:
            for node, request in self._bound.values():
                before = used.get(node, Request())
                used[node] = Request(before.cpu + request.cpu, before.memory + request.memory)
                counts[node] = counts.get(node, 0) + 1
        return used, counts

    def reconcile(self, key: Any) -> None:
        namespace, name = key
        pod = self._store.get_raw("pods", namespace, name)
        if pod is None or (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get(
                "deletionTimestamp"):
            with self._lock:
                self._unschedulable.discard(key)
            return
        spec = pod.get("spec") or {}
        nodes, _ = self._store.list_raw("nodes")
        claim = missing_claim(spec, namespace, self._scenario)
        if claim is not None:
            self._unschedulable_pod(pod, fit_error(
                len(nodes), [], f'persistentvolumeclaim "{claim}" not found'))
            return
        request = pod_request(spec)
        used, counts = self._usage()
        fits: list[NodeFit] = []
        candidates = []
        for node in nodes:
            node_name = node["metadata"]["name"]
            fit = fit_on_node(spec, request, node, used.get(node_name, Request()),
                              counts.get(node_name, 0))
            fits.append(fit)
            if not fit.reasons:
                candidates.append((self._score(node, used.get(node_name, Request())), node_name))
        if not candidates:
            self._unschedulable_pod(pod, fit_error(len(nodes), fits))
            return
        candidates.sort()
        self._bind(pod, candidates[0][1], request)

    @staticmethod
    def _score(node: Obj, used: Request) -> float:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        try:
            cpu = parse_cpu(str(allocatable.get("cpu", "1"))) or 1.0
            memory = parse_memory(str(allocatable.get("memory", "1"))) or 1
        except QuantityError:
            return 1.0
        return used.cpu / cpu + used.memory / memory

    def _bind(self, pod: Obj, node: str, request: Request) -> None:
        key = object_key(pod)
        uid = pod["metadata"]["uid"]
        now = now_rfc3339()

        def mutate(obj: Obj) -> None:
            if obj["metadata"].get("uid") != uid or obj.get("spec", {}).get("nodeName"):
                raise _Stale()
            obj.setdefault("spec", {})["nodeName"] = node
            status = obj.setdefault("status", {})
            status.setdefault("phase", "Pending")
            conditions = [c for c in status.get("conditions") or []
                          if c.get("type") != "PodScheduled"]
            conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                               "lastTransitionTime": now})
            status["conditions"] = conditions

        with self._lock:
            self._bound[key] = (node, request)
            self._unschedulable.discard(key)
        try:
            bound = self._store.update("pods", key[0], key[1], mutate)
        except _Stale:
            bound = None
        if bound is None:
            with self._lock:
                if self._bound.get(key, ("", None))[0] == node:
                    self._bound.pop(key, None)
            return
        self._recorder.record(bound, "Pod", "Normal", "Scheduled",
                              f"Successfully assigned {key[0]}/{key[1]} to {node}",
                              component=DEFAULT_SCHEDULER)

    def _unschedulable_pod(self, pod: Obj, message: str) -> None:
        key = object_key(pod)
        uid = pod["metadata"]["uid"]
        with self._lock:
            self._unschedulable.add(key)
        now = now_rfc3339()
        current = next((c for c in (pod.get("status") or {}).get("conditions") or []
                        if c.get("type") == "PodScheduled"), None)
        updated: Obj | None = pod
        if current is None or current.get("status") != "False" or current.get(
                "message") != message:
            def mutate(obj: Obj) -> None:
                if obj["metadata"].get("uid") != uid or obj.get("spec", {}).get("nodeName"):
                    raise _Stale()
                status = obj.setdefault("status", {})
                status.setdefault("phase", "Pending")
                conditions = [c for c in status.get("conditions") or []
                              if c.get("type") != "PodScheduled"]
                conditions.append({"type": "PodScheduled", "status": "False",
                                   "lastProbeTime": None, "lastTransitionTime": now,
                                   "reason": "Unschedulable", "message": message})
                status["conditions"] = conditions
            try:
                updated = self._store.update("pods", key[0], key[1], mutate)
            except _Stale:
                updated = None
        if updated is None:
            return
        self._recorder.record(updated, "Pod", "Warning", "FailedScheduling", message,
                              component=DEFAULT_SCHEDULER)
        self.queue.add_after(key, self._retry)


class _Stale(Exception):
    """The pod changed under us (another uid, already bound): skip the write."""
