"""The pod status rules of the kubelet, as pure functions over a pod dict.

Owns how a pod's phase and its conditions (PodReadyToStartContainers, Initialized, Ready,
ContainersReady; PodScheduled is the scheduler's) follow from its container statuses, the way
the kubelet's getPhase and status generators do:

- Pending while an init container has not completed or a container has not started yet;
  Running while any container runs; once all have stopped: Succeeded if all exited 0, else
  Failed (restartPolicy Never), Running while they will be restarted (Always, OnFailure).
- A pod the kubelet is terminating (deleted, evicted) ends Succeeded or Failed whatever its
  restartPolicy.
- Restartable init containers (native sidecars) count as initialized once started; they
  decide the phase only by keeping a pod whose main containers ended Running until they have
  stopped (what lets squarepeg's copy-back exec into one, docs/decisions/0180).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

CONDITION_ORDER = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                   "PodScheduled", "DisruptionTarget")


def is_sidecar(container: Obj) -> bool:
    return container.get("restartPolicy") == "Always"


def _by_name(statuses: list[Obj] | None) -> dict[str, Obj]:
    return {s.get("name", ""): s for s in statuses or []}


def _state(status: Obj | None) -> str:
    """"running", "terminated", "waiting" or "" for a container status."""
    state = (status or {}).get("state") or {}
    for kind in ("running", "terminated", "waiting"):
        if kind in state:
            return kind
    return ""


def init_pending(pod: Obj) -> list[str]:
    """The init containers that keep the pod from being initialized, in spec order."""
    spec = pod.get("spec", {})
    statuses = _by_name(pod.get("status", {}).get("initContainerStatuses"))
    pending = []
    for container in spec.get("initContainers") or []:
        status = statuses.get(container["name"])
        if is_sidecar(container):
            if not (status or {}).get("started"):
                pending.append(container["name"])
            continue
        terminated = ((status or {}).get("state") or {}).get("terminated")
        if not terminated or terminated.get("exitCode") != 0:
            pending.append(container["name"])
    return pending


def init_failed(pod: Obj) -> bool:
    """An init container failed and will not be retried (restartPolicy Never)."""
    if pod.get("spec", {}).get("restartPolicy") != "Never":
        return False
    for status in pod.get("status", {}).get("initContainerStatuses") or []:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated and terminated.get("exitCode") != 0:
            return True
    return False


def phase(pod: Obj, *, terminating: bool = False) -> str:
    """The phase the kubelet reports for `pod` (see the module docstring)."""
    spec = pod.get("spec", {})
    policy = spec.get("restartPolicy") or "Always"
    statuses = _by_name(pod.get("status", {}).get("containerStatuses"))
    if init_failed(pod):
        return "Failed"
    running = waiting = stopped = succeeded = unknown = 0
    for container in spec.get("containers") or []:
        status = statuses.get(container["name"])
        kind = _state(status)
        if status is None or not kind:
            unknown += 1
        elif kind == "running":
            running += 1
        elif kind == "terminated":
            stopped += 1
            if status["state"]["terminated"].get("exitCode") == 0:
                succeeded += 1
        elif (status.get("lastState") or {}).get("terminated"):
            stopped += 1
        else:
            waiting += 1
    if init_pending(pod) and not terminating:
        return "Pending"
    if terminating and running == 0 and waiting + unknown + stopped > 0:
        return "Succeeded" if succeeded == len(spec.get("containers") or []) else "Failed"
    if waiting > 0 or (unknown > 0 and running == 0 and stopped == 0):
        return "Pending"
    if running > 0:
        return "Running"
    if stopped > 0 and unknown == 0:
        if policy == "Always" or _sidecar_running(pod):
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def _sidecar_running(pod: Obj) -> bool:
    """A native sidecar still runs (the kubelet stops them after the main containers ended,
    each within the pod's grace period): the pod is Running until they have stopped."""
    statuses = _by_name(pod.get("status", {}).get("initContainerStatuses"))
    return any(is_sidecar(c) and _state(statuses.get(c["name"])) == "running"
               for c in pod.get("spec", {}).get("initContainers") or [])


def _names(names: list[str]) -> str:
    """Go's %s of a []string."""
    return "[" + " ".join(names) + "]"


def _condition(type_: str, ok: bool, reason: str | None = None,
               message: str | None = None) -> Obj:
    condition: Obj = {"type": type_, "status": "True" if ok else "False",
                      "lastProbeTime": None}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def conditions(pod: Obj, pod_phase: str, *, sandbox: bool) -> list[Obj]:
    """The kubelet's conditions for `pod` in `pod_phase` (without transition times)."""
    spec = pod.get("spec", {})
    status = pod.get("status", {})
    pending_init = init_pending(pod)
    result = [_condition("PodReadyToStartContainers", sandbox)]
    if not spec.get("initContainers") or not pending_init:
        result.append(_condition("Initialized", True))
    else:
        result.append(_condition("Initialized", False, "ContainersNotInitialized",
                                 f"containers with incomplete status: {_names(pending_init)}"))
    statuses = _by_name(status.get("containerStatuses"))
    init_statuses = _by_name(status.get("initContainerStatuses"))
    unready = [c["name"] for c in spec.get("initContainers") or []
               if is_sidecar(c) and not (init_statuses.get(c["name"]) or {}).get("ready")]
    unknown = []
    for container in spec.get("containers") or []:
        container_status = statuses.get(container["name"])
        if container_status is None:
            unknown.append(container["name"])
        elif not container_status.get("ready"):
            unready.append(container["name"])
    if pod_phase in ("Succeeded", "Failed"):
        reason = "PodCompleted" if pod_phase == "Succeeded" else "PodFailed"
        ready = [_condition("Ready", False, reason), _condition("ContainersReady", False, reason)]
    elif unknown or unready:
        parts = []
        if unknown:
            parts.append(f"containers with unknown status: {_names(unknown)}")
        if unready:
            parts.append(f"containers with unready status: {_names(unready)}")
        message = ", ".join(parts)
        ready = [_condition("Ready", False, "ContainersNotReady", message),
                 _condition("ContainersReady", False, "ContainersNotReady", message)]
    else:
        ready = [_condition("Ready", True), _condition("ContainersReady", True)]
    return result + ready


def merge_conditions(previous: list[Obj] | None, fresh: list[Obj], now: str) -> list[Obj]:
    """`fresh` conditions over `previous` ones: a condition keeps its lastTransitionTime while
    its status stays; conditions `fresh` does not mention (PodScheduled, DisruptionTarget)
    are kept. Sorted as the kubelet writes them."""
    old = {c.get("type"): c for c in previous or []}
    merged = dict(old)
    for condition in fresh:
        before = old.get(condition["type"])
        transition = before.get("lastTransitionTime") if (
            before is not None and before.get("status") == condition["status"]) else now
        merged[condition["type"]] = {**condition, "lastTransitionTime": transition}
    order = {t: i for i, t in enumerate(CONDITION_ORDER)}
    return sorted(merged.values(), key=lambda c: order.get(c.get("type", ""), len(order)))


def qos_class(spec: Obj) -> str:
    """Guaranteed, Burstable or BestEffort from the containers' requests and limits."""
    containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") or {}
        requests = resources.get("requests") or {}
        limits = resources.get("limits") or {}
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in limits or requests.get(name, limits[name]) != limits[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
