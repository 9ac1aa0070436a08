"""Pure reading of Pod and Job JSON: where a run stands and what its exit code is.

Owns the meaning of a status: the phase, the fail-fast waiting reasons (but not a
create or start error that is only the runtime's connection breaking), the main
container's status (found by its name, never by its position: passthrough config or a
mutating webhook may add sidecars), its exit code, and the cases where the container never
terminated on its own (evicted by the kubelet or through the Eviction API, preempted,
deleted, node lost: the DisruptionTarget condition names which), which are squarepeg's 125
rather than a code the container chose. Also the timestamps the orphan sweep judges age by.

Does no I/O and imports nothing of the package but names (errors.py's codes, plan/labels.py's
annotation): every function takes the dicts kubectl printed and returns plain values. A pod
that `stop` stopped (decision 0370) has the container's own code, not the deadline's 124.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubectl_squarepeg.errors import DEADLINE_EXCEEDED
from kubectl_squarepeg.plan.labels import STOPPED_AT_ANNOTATION

MAIN = "main"
RUNNER_FAILED = 125
OOM_EXIT_CODE = 137
# The pod status reason of a pod past its activeDeadlineSeconds (the kubelet's), and the
# Job condition reason of a Job past its own.
DEADLINE_REASON = "DeadlineExceeded"

# The waiting reasons after which a container will not start without a change from the
# user (lifecycle spec, step 4); the kubelet keeps retrying them forever.
FAIL_FAST_REASONS = frozenset(
    {
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "CrashLoopBackOff",
        # `--pull never` and the image is not on the node: the kubelet will not pull it,
        # however long it waits.
        "ErrImageNeverPull",
    }
)
# A CreateContainerError or RunContainerError whose message is the kubelet's connection to
# the runtime breaking (containerd restarting) is not the user's to fix: the kubelet tries
# the container again once the runtime answers (a container never created, or created and
# not started, is always started again, whatever the restartPolicy). Seen on the real node
# across a containerd restart: 8 of 100 soak runs gave up on these (decision 0211).
_RUNTIME_CONNECTION_REASONS = frozenset({"CreateContainerError", "RunContainerError"})
_RUNTIME_CONNECTION_WORDS = (
    "error reading from server",
    "transport: error while dialing",
    "connection reset by peer",
    "connection refused",
    "containerd.sock: connect: no such file or directory",
    "rpc error: code = unavailable",
)
# The kubelet's own image pull rate limit (registryPullQPS, 5 a second by default): a pull
# it refused is tried again after a back-off. Seen on the real node when 20 runs' pods of a
# `:latest` image (pulled every time) started right after a kubelet restart: 2 of 100 runs
# gave up on `ErrImagePull: pull QPS exceeded`.
_PULL_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff"})
_PULL_RATE_WORDS = "pull qps exceeded"
# Reasons a kubelet writes into a terminated state that it made up itself, because the
# container's real end was never observed (an evicted pod, a lost node).
_UNOBSERVED_END_REASONS = frozenset({"ContainerStatusUnknown"})
# containerd's terminated reason (and made-up exit code) for a container that ended while
# containerd was down: on its restart it finds the process gone and its exit status lost.
# Seen on the real node (`sh -c 'sleep 4; exit 55'` ended 255 across a containerd restart);
# the 255 is not the container's (decision 0211).
_LOST_EXIT_REASON, _LOST_EXIT_CODE = "Unknown", 255
# Terminated reasons of a container whose command never ran: the runtime could not start
# it (containerd: StartError; dockershim: ContainerCannotRun).
_START_FAILURE_REASONS = frozenset({"StartError", "ContainerCannotRun"})
# docker run's codes for a command that cannot run (their meaning follows docker's).
COMMAND_NOT_FOUND = 127
COMMAND_NOT_INVOKABLE = 126
# Words of the runtime's message for each (runc, crun and docker word them alike).
_NOT_FOUND_WORDS = ("executable file not found", "no such file or directory", "not found")
_NOT_INVOKABLE_WORDS = ("permission denied", "is a directory", "exec format error")
# Waiting reasons that only mean "the kubelet is getting there".
PROGRESS_REASONS = frozenset({"ContainerCreating", "PodInitializing"})

_EMPTY: Mapping[str, Any] = {}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else _EMPTY


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as Kubernetes writes it ("2026-12-02T19:00:00Z"), or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(obj.get("status"))


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(obj.get("metadata"))


def name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def uid(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("uid") or "")


def phase(pod: Mapping[str, Any]) -> str:
    """The pod's phase ("Pending", "Running", ...), or "" before the API has set one."""
    return str(_status(pod).get("phase") or "")


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def deletion_deadline(obj: Mapping[str, Any]) -> datetime | None:
    """When an object being deleted is due to go: a pod's `deletionTimestamp` is the end of
    its grace period (the time of the delete plus the grace period), when the kubelet kills
    whatever still runs; None when it is not being deleted."""
    return parse_time(_meta(obj).get("deletionTimestamp"))


def grace_period(pod: Mapping[str, Any]) -> int | None:
    """The pod's terminationGracePeriodSeconds (`--stop-timeout`; the API server's default
    is 30), or None when the object does not say."""
    value = _map(pod.get("spec")).get("terminationGracePeriodSeconds")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _container_statuses(pod: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    status = _status(pod)
    for key in ("initContainerStatuses", "containerStatuses"):
        for item in status.get(key) or ():
            if isinstance(item, Mapping):
                yield item


def container_status(pod: Mapping[str, Any], container: str = MAIN) -> Mapping[str, Any] | None:
    """The status of the container named `container`, wherever it is in the list."""
    for item in _map(pod.get("status")).get("containerStatuses") or ():
        if isinstance(item, Mapping) and item.get("name") == container:
            return item
    return None


def _state(status: Mapping[str, Any] | None, which: str) -> Mapping[str, Any] | None:
    if status is None:
        return None
    state = _map(status.get("state")).get(which)
    return state if isinstance(state, Mapping) else None


@dataclass(frozen=True)
class Waiting:
    """A container stuck on a fail-fast reason."""

    container: str
    reason: str
    message: str


def fail_fast(pod: Mapping[str, Any]) -> Waiting | None:
    """The first container (init containers included) waiting on a fail-fast reason.

    Any container counts, not only main: a sidecar that cannot pull keeps the pod from
    ever running, just as main would.
    """
    for status in _container_statuses(pod):
        waiting = _state(status, "waiting")
        if (
            waiting
            and waiting.get("reason") in FAIL_FAST_REASONS
            and not runtime_connection_broke(waiting)
        ):
            return Waiting(
                str(status.get("name") or ""),
                str(waiting["reason"]),
                str(waiting.get("message") or ""),
            )
    return None


def runtime_connection_broke(waiting: Mapping[str, Any]) -> bool:
    """A container's waiting state says the kubelet lost its connection to the runtime
    while creating or starting it, or was held by its own image pull rate limit: a moment's
    fault the kubelet recovers from by itself."""
    message = str(waiting.get("message") or "").lower()
    if waiting.get("reason") in _PULL_REASONS and _PULL_RATE_WORDS in message:
        return True
    if waiting.get("reason") not in _RUNTIME_CONNECTION_REASONS:
        return False
    return any(words in message for words in _RUNTIME_CONNECTION_WORDS)


def fail_fast_reason(pod: Mapping[str, Any]) -> str | None:
    """Just the reason of `fail_fast`, for the orphan sweep's "stuck" category."""
    found = fail_fast(pod)
    return found.reason if found else None


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in _status(obj).get("conditions") or ():
        if isinstance(cond, Mapping) and cond.get("type") == kind:
            return cond
    return None


def blocked_reason(pod: Mapping[str, Any]) -> str | None:
    """Why a Pending pod is not getting anywhere by itself, if the status says so.

    Unschedulable (PodScheduled=False), or scheduled with main still waiting on the kubelet
    (ContainerCreating: a volume that does not mount shows up only as events). Such a pod
    is not a failure: it may still start within --timeout, so this only asks for events.
    """
    if phase(pod) not in ("Pending", ""):
        return None
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        return str(scheduled.get("reason") or "Unschedulable")
    waiting = _state(container_status(pod), "waiting")
    if waiting and waiting.get("reason") in PROGRESS_REASONS:
        return str(waiting["reason"])
    return None


def pending_summary(pod: Mapping[str, Any]) -> str:
    """What a pod is waiting for, in a few words, for the startup timeout message."""
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False":
        detail = str(scheduled.get("message") or scheduled.get("reason") or "")
        return f"not scheduled: {detail}" if detail else "not scheduled"
    waiting = _state(container_status(pod), "waiting")
    if waiting:
        reason = str(waiting.get("reason") or "waiting")
        message = str(waiting.get("message") or "")
        return f"{reason}: {message}" if message else reason
    return f"phase {phase(pod) or 'unknown'}"


def has_started(pod: Mapping[str, Any], container: str = MAIN) -> bool:
    """Startup is over: the container is running, or already terminated, or the pod ended."""
    status = container_status(pod, container)
    if _state(status, "running") is not None or _state(status, "terminated") is not None:
        return True
    return phase(pod) in ("Succeeded", "Failed")


def has_finished(pod: Mapping[str, Any], container: str = MAIN) -> bool:
    """The run is over: main terminated (a sidecar may keep the pod running), or the pod ended.

    restartPolicy is Never, so a terminated main container will not come back.
    """
    return _state(container_status(pod, container), "terminated") is not None or phase(pod) in (
        "Succeeded",
        "Failed",
    )


@dataclass(frozen=True)
class Outcome:
    """The exit code squarepeg reports, and the line to print on stderr, if any."""

    exit_code: int
    message: str | None = None
    # False when the code is squarepeg's own (the container never ran its command to an
    # end: 125 when it never ended on its own, 126/127 when its command could not start).
    from_container: bool = True
    # The container's command could not be started (the run failed to start, not ran).
    start_failure: bool = False
    # Someone else deleted the pod: its log goes with it, and nothing is left to read.
    pod_deleted: bool = False


def outcome(pod: Mapping[str, Any], container: str = MAIN) -> Outcome:
    """The exit code of a finished pod's main container (lifecycle spec, step 6)."""
    pod_name = name(pod)
    status = _status(pod)
    if status.get("reason") == "Evicted":
        detail = str(status.get("message") or "evicted by the kubelet")
        return Outcome(RUNNER_FAILED, f"pod {pod_name} was evicted: {detail}", False)
    if status.get("reason") == DEADLINE_REASON and not stopped(pod):
        return deadline_outcome(pod_name, pod)
    if is_deleting(pod):
        # Outcomes are read before squarepeg's own delete: someone else deleted it, and a
        # code from the SIGTERM that followed is not one the container chose.
        return deleted_outcome(pod_name, pod)
    terminated = _state(container_status(pod, container), "terminated")
    if terminated is None:
        return Outcome(
            RUNNER_FAILED,
            f"container {container} of pod {pod_name} never terminated "
            f"(pod phase {phase(pod) or 'unknown'})",
            False,
        )
    reason = str(terminated.get("reason") or "")
    if reason in _UNOBSERVED_END_REASONS:
        detail = str(terminated.get("message") or reason)
        return Outcome(
            RUNNER_FAILED,
            f"container {container} of pod {pod_name} was lost before it finished: {detail}",
            False,
        )
    if reason == _LOST_EXIT_REASON and terminated.get("exitCode") == _LOST_EXIT_CODE:
        return Outcome(
            RUNNER_FAILED,
            f"container {container} of pod {pod_name} ended, but the runtime lost its exit "
            f"code (reason {reason}, reported as {_LOST_EXIT_CODE}: the runtime was "
            "restarted as it ended)",
            False,
        )
    if reason in _START_FAILURE_REASONS:
        return start_failure(pod_name, container, str(terminated.get("message") or reason))
    code = terminated.get("exitCode")
    if not isinstance(code, int) or isinstance(code, bool):
        return Outcome(
            RUNNER_FAILED, f"container {container} of pod {pod_name} has no exit code", False
        )
    if reason == "OOMKilled":
        return Outcome(code, oom_message(pod_name, container, code))
    return Outcome(code)


def stopped(pod: Mapping[str, Any]) -> bool:
    """Whether `kubectl squarepeg stop` stopped the pod (its deadline was the user's)."""
    annotations = _map(_map(pod.get("metadata")).get("annotations"))
    return bool(annotations.get(STOPPED_AT_ANNOTATION))


def deadline_outcome(pod_name: str, pod: Mapping[str, Any]) -> Outcome:
    """A pod stopped at its active deadline (the kubelet's DeadlineExceeded, or a Job's):
    exit 124, never the 137 of the SIGKILL that may have ended it, which reads as an OOM."""
    seconds = _map(pod.get("spec")).get("activeDeadlineSeconds")
    after = f" of {seconds}s" if seconds is not None else ""
    return Outcome(
        DEADLINE_EXCEEDED,
        f"pod {pod_name} passed its deadline{after} (activeDeadlineSeconds, --max-runtime) "
        f"and was stopped by the cluster (exit code {DEADLINE_EXCEEDED})",
        False,
    )


def job_deadline_outcome(job: Mapping[str, Any]) -> Outcome | None:
    """A Job stopped at its own `spec.activeDeadlineSeconds`: the job controller marks it
    (`FailureTarget`, then `Failed`, reason DeadlineExceeded) and deletes its pod, which the
    run saw as a deletion. Exit 124 as for the pod's own deadline (decisions 0320, 0360)."""
    conditions = _map(job.get("status")).get("conditions") or []
    if not any(
        isinstance(c, Mapping) and c.get("type") in ("FailureTarget", "Failed")
        and c.get("status") == "True" and c.get("reason") == DEADLINE_REASON
        for c in conditions
    ):
        return None
    seconds = _map(job.get("spec")).get("activeDeadlineSeconds")
    after = f" of {seconds}s" if seconds is not None else ""
    return Outcome(
        DEADLINE_EXCEEDED,
        f"job {name(job)} passed its deadline{after} (the Job's activeDeadlineSeconds; "
        f"--max-runtime sets its pod's instead, which keeps the log) and the job controller "
        f"deleted its pod (exit code {DEADLINE_EXCEEDED})",
        False,
        pod_deleted=True,
    )


def oom_message(pod_name: str, container: str, code: int) -> str:
    """The line for a container the runtime reports `OOMKilled`. The runtime says so when
    the kernel killed any process of the container's memory cgroup: the main process
    (exit code 137), or only a child of it while the main process went on and chose its own
    code (`reason: OOMKilled`, exit code 0, phase Succeeded on the real node). The code is
    the container's either way (docs/decisions/0142-oom-killed-child.md)."""
    if code == OOM_EXIT_CODE:
        return f"container {container} of pod {pod_name} was OOMKilled (exit code {code})"
    return (
        f"a process in container {container} of pod {pod_name} was killed for lack of "
        f"memory (OOMKilled); the container's main process went on and exited {code}; "
        "more memory: --memory"
    )


def start_failure(pod_name: str, container: str, message: str) -> Outcome:
    """A container whose command the runtime could not start, with docker's exit code:
    127 not found, 126 found but not executable, 125 anything else."""
    lowered = message.lower()
    if any(word in lowered for word in _NOT_INVOKABLE_WORDS):
        code = COMMAND_NOT_INVOKABLE
    elif any(word in lowered for word in _NOT_FOUND_WORDS):
        code = COMMAND_NOT_FOUND
    else:
        code = RUNNER_FAILED
    return Outcome(
        code,
        f"container {container} of pod {pod_name} could not run its command: "
        f"{_runtime_detail(message)}",
        from_container=False,
        start_failure=True,
    )


def _runtime_detail(message: str) -> str:
    """The part of a runtime's start error that names the problem: runc's long chain
    `failed to create containerd task: ...: exec: "x": not found: unknown` is cut to
    `exec: "x": not found`."""
    start = message.find("exec: ")
    detail = message[start:] if start >= 0 else message
    return detail.removesuffix(": unknown").strip()


# What the control plane writes into a pod's DisruptionTarget condition (reason) before it
# deletes the pod, and how the user is told. An eviction through the Eviction API (`kubectl
# drain`, a descheduler, an autoscaler) is a graceful delete with this condition, not the
# kubelet's `status.reason: Evicted` (a node-pressure eviction, whose pod stays Failed).
_DISRUPTION_WORDS = {
    "EvictionByEvictionAPI": "was evicted through the Eviction API",
    "PreemptionByScheduler": "was preempted by the scheduler",
    "DeletionByTaintManager": "was evicted from its node (a NoExecute taint)",
    "DeletionByPodGC": "was deleted by the pod garbage collector (its node is gone)",
    "TerminationByKubelet": "was stopped by the kubelet",
}


def disruption(pod: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """(reason, message) of a pod's DisruptionTarget condition when it is True, else None."""
    if pod is None:
        return None
    cond = _condition(pod, "DisruptionTarget")
    if cond is None or cond.get("status") != "True":
        return None
    return str(cond.get("reason") or ""), str(cond.get("message") or "")


def deleted_outcome(pod_name: str, pod: Mapping[str, Any] | None = None) -> Outcome:
    """The outcome of a pod deleted (by someone else) before its container finished;
    when the pod's last state has a DisruptionTarget condition, the line names the
    disruption (an eviction through the Eviction API, a preemption, ...) and its message."""
    found = disruption(pod)
    if found is not None:
        reason, message = found
        what = _DISRUPTION_WORDS.get(reason, f"was disrupted ({reason or 'no reason given'})")
        detail = f": {message}" if message else ""
        # A drain, a taint or a lost node is about the node: the user looks there next.
        node = node_name(pod) if pod is not None else ""
        where = f" (node {node})" if node else ""
        return Outcome(
            RUNNER_FAILED,
            f"pod {pod_name} {what}{where} before its container finished{detail}",
            False,
            pod_deleted=True,
        )
    return Outcome(
        RUNNER_FAILED,
        f"pod {pod_name} was deleted before its container finished",
        False,
        pod_deleted=True,
    )


def node_name(pod: Mapping[str, Any]) -> str:
    """The node the pod is bound to, "" while it is not."""
    return str(_map(pod.get("spec")).get("nodeName") or "")


def lost_node(pod: Mapping[str, Any], container: str = MAIN) -> str | None:
    """The node of a pod whose node the node controller has found silent, else None.

    When a node stops renewing its lease for the controller manager's grace (50 s by
    default), the node controller sets each of its pods' Ready condition to False and
    changes nothing else (MarkPodsNotReady): no reason, ContainersReady still True, the
    container still `running`. The kubelet never writes that: its Ready False always comes
    with a reason (ContainersNotReady, ReadinessGatesNotReady, PodCompleted) and, but for
    readiness gates, with ContainersReady False. Once the kubelet answers again it writes
    Ready True back, and this says None again (docs/decisions/0410).
    """
    node = node_name(pod)
    ready = _condition(pod, "Ready")
    containers = _condition(pod, "ContainersReady")
    if not node or ready is None or containers is None or is_deleting(pod):
        return None
    if ready.get("status") != "False" or ready.get("reason"):
        return None
    if containers.get("status") != "True":
        return None
    return node if _state(container_status(pod, container), "running") is not None else None


def running_since(pod: Mapping[str, Any], container: str = MAIN) -> datetime | None:
    """When the container's current run started, as its status says."""
    running = _state(container_status(pod, container), "running")
    return parse_time(running.get("startedAt")) if running is not None else None


def created_at(obj: Mapping[str, Any]) -> datetime | None:
    return parse_time(_meta(obj).get("creationTimestamp"))


def finished_at(pod: Mapping[str, Any]) -> datetime | None:
    """When the last container of a finished pod terminated, or None."""
    times = [
        parse_time(terminated.get("finishedAt"))
        for status in _container_statuses(pod)
        if (terminated := _state(status, "terminated")) is not None
    ]
    found = [t for t in times if t is not None]
    return max(found) if found else None


def job_finished_condition(job: Mapping[str, Any]) -> tuple[str, datetime | None] | None:
    """("Complete" | "Failed", when) once a Job has that condition True, else None."""
    for kind in ("Complete", "Failed"):
        cond = _condition(job, kind)
        if cond is not None and cond.get("status") == "True":
            return kind, parse_time(cond.get("lastTransitionTime"))
    return None
