"""The Job controller: pods for batch/v1 Jobs, and the Job's status.

Owns, for NonIndexed Jobs:
- Pods: `min(parallelism, completions - succeeded)` active pods, each named
  `<job>-<5 random>` (the apiserver's generateName alphabet; the job name cut to 58
  characters), with the template's labels and annotations, the template's spec, and an
  ownerReference (apiVersion batch/v1, kind Job, controller and blockOwnerDeletion true).
  Event SuccessfulCreate `Created pod: NAME`. After a failed pod the next one waits
  `job_backoff_seconds` (scenario option, default 0) doubling per failure; real clusters start
  at 10 s.
- Status: startTime, active (absent when 0), ready, terminating, succeeded and failed (absent
  when 0), uncountedTerminatedPods {}. When enough pods succeeded: condition
  `SuccessCriteriaMet` (CompletionsReached, "Reached expected number of succeeded pods"),
  then, once no pod is left running, `Complete` with completionTime and event Completed.
  When `failed > backoffLimit` (restartPolicy OnFailure: container restarts count, as the
  real controller counts them): `FailureTarget` then `Failed`, reason BackoffLimitExceeded,
  message "Job has reached the specified backoff limit", event BackoffLimitExceeded; the
  same with DeadlineExceeded for activeDeadlineSeconds. Remaining active pods are deleted.
- suspend: no pods while suspended.

Not modelled: Indexed completion mode, podFailurePolicy, successPolicy, the job-tracking
finalizer on pods, backoffLimitPerIndex.

Pods it creates go through the API server's admission when the cluster was given it (the
scenario's mutating and deny rules, quota), as on a real cluster: a refusal is the real
controller's Warning event `FailedCreate` on the Job, "Error creating: " and the API's
message, and the pod is tried again after `CREATE_RETRY_SECONDS` (the real controller backs
off the same way, exponentially). Without admission (unit tests' clusters) they bypass it.
They get the API server's pod defaults.
"""

from __future__ import annotations

import copy
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from tests.kubesim import owners, podstatus
from tests.kubesim.apierrors import ApiError
from tests.kubesim.events import EventRecorder
from tests.kubesim.informer import Controller
from tests.kubesim.logbook import parse_timestamp
from tests.kubesim.scenario import Scenario
from tests.kubesim.store import AlreadyExists, Obj, Store, now_rfc3339

try:  # the API server half's create-time defaults, so controller pods look like API pods
    from tests.kubesim.defaults import pod as default_pod
    from tests.kubesim.defaults import random_suffix
except ImportError:  # pragma: no cover - the server half is not there
    import random

    def default_pod(obj: Obj) -> None:
        obj["status"] = {"phase": "Pending",
                         "qosClass": podstatus.qos_class(obj.get("spec") or {})}

    def random_suffix(length: int = 5) -> str:
        return "".join(random.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(length))

if TYPE_CHECKING:
    from tests.kubesim.admission import Admission

COMPONENT = "job-controller"
# How long after a refused pod create the controller tries again.
CREATE_RETRY_SECONDS = 1.0
MAX_GENERATED_PREFIX = 58
TERMINAL = ("Succeeded", "Failed")
FINISHED = ("Complete", "Failed")

SUCCESS = ("CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")


def condition(job: Obj, type_: str) -> dict[str, Any] | None:
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") == type_ and cond.get("status") == "True":
            return dict(cond)
    return None


def finished_at(job: Obj) -> datetime | None:
    """When the Job finished (its Complete or Failed condition), or None."""
    for type_ in FINISHED:
        cond = condition(job, type_)
        if cond is not None:
            return parse_timestamp(str(cond.get("lastTransitionTime")))
    return None


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


class JobController(Controller):
    """The job controller's worker (see the module docstring)."""

    name = "job-controller"

    def __init__(self, store: Store, scenario: Scenario, recorder: EventRecorder,
                 index: owners.OwnerIndex, admission: Admission | None = None):
        super().__init__()
        self._store = store
        self._admission = admission
        self._recorder = recorder
        self._index = index
        self._backoff = float(scenario.options.get("job_backoff_seconds", 0.0))
        self._failures_seen: dict[str, tuple[int, float]] = {}

    # -- informer handlers -----------------------------------------------------------------

    def on_job(self, kind: str, job: Obj) -> None:
        meta = job.get("metadata", {})
        if kind == "DELETED":
            self._failures_seen.pop(str(meta.get("uid")), None)
            return
        self.queue.add((meta.get("namespace") or "default", meta.get("name", "")))

    def on_pod(self, kind: str, pod: Obj) -> None:
        ref = owners.controller_job(pod)
        if ref is not None:
            self.queue.add((pod["metadata"].get("namespace") or "default", ref.get("name", "")))

    # -- reconcile -------------------------------------------------------------------------

    def reconcile(self, key: Any) -> None:
        namespace, name = key
        job = self._store.get_raw("jobs", namespace, name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return
        uid = str(job["metadata"]["uid"])
        spec = job.get("spec") or {}
        pods = [p for p in (self._store.get_raw("pods", ns, n) for ns, n in self._index.pods(uid))
                if owners.owned_by(p, uid)]
        active = [p for p in pods if (p.get("status") or {}).get("phase") not in TERMINAL
                  and not p["metadata"].get("deletionTimestamp")]
        terminating = [p for p in pods if (p.get("status") or {}).get("phase") not in TERMINAL
                       and p["metadata"].get("deletionTimestamp")]
        succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
        failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
        counts = {"active": len(active), "terminating": len(terminating),
                  "ready": sum(1 for p in active if _ready(p)), "succeeded": succeeded,
                  "failed": failed}
        if finished_at(job) is not None:
            self._write(job, counts)
            return

        target = condition(job, "SuccessCriteriaMet") or condition(job, "FailureTarget")
        if target is None:
            target = self._judge(job, spec, pods, active, succeeded, failed)
            if target is not None:
                job = self._write(job, counts, add=target) or job
        if target is not None:
            for pod in active:
                self._delete(job, pod)
            if not active and not terminating:
                self._finish(job, counts, target)
            else:
                self._write(job, {**counts, "active": 0,
                                  "terminating": len(terminating) + len(active)})
            return
        if spec.get("suspend"):
            for pod in active:
                self._delete(job, pod)
            self._write(job, counts, start=False)
            return
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1) or 0)
        wanted = parallelism if completions is None else min(parallelism,
                                                             int(completions) - succeeded)
        missing = wanted - len(active)
        if missing > 0 and self._backoff > 0 and failed > 0:
            remaining = self._backoff_remaining(uid, failed)
            if remaining > 0:
                self.queue.add_after(key, remaining)
                missing = 0
        for _ in range(max(missing, 0)):
            if not self._create_pod(job):
                self.queue.add_after(key, CREATE_RETRY_SECONDS)
                break
            counts["active"] += 1
        self._write(job, counts)
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None:
            started = self._store.get_raw("jobs", namespace, name)
            start_time = ((started or {}).get("status") or {}).get("startTime")
            if start_time:
                elapsed = time.time() - parse_timestamp(start_time).timestamp()
                self.queue.add_after(key, max(float(deadline) - elapsed, 0.0) + 0.05)

    def _judge(self, job: Obj, spec: Obj, pods: list[Obj], active: list[Obj], succeeded: int,
               failed: int) -> dict[str, Any] | None:
        """The terminal target the Job has reached, as a condition, or None."""
        now = now_rfc3339()
        backoff_limit = int(spec.get("backoffLimit", 6))
        template_spec = (spec.get("template") or {}).get("spec") or {}
        exceeded = failed > backoff_limit
        if template_spec.get("restartPolicy") == "OnFailure":
            restarts = sum(int(s.get("restartCount") or 0) for p in active
                           for s in ((p.get("status") or {}).get("containerStatuses") or [])
                           + ((p.get("status") or {}).get("initContainerStatuses") or []))
            exceeded = exceeded or (restarts > 0 if backoff_limit == 0
                                    else restarts >= backoff_limit)
        if exceeded:
            return _condition("FailureTarget", BACKOFF, now)
        deadline = spec.get("activeDeadlineSeconds")
        start_time = (job.get("status") or {}).get("startTime")
        if deadline is not None and start_time and \
                time.time() - parse_timestamp(start_time).timestamp() >= float(deadline):
            return _condition("FailureTarget", DEADLINE, now)
        completions = spec.get("completions")
        if (completions is not None and succeeded >= int(completions)) or (
                completions is None and succeeded > 0 and not active):
            return _condition("SuccessCriteriaMet", SUCCESS, now)
        return None

    def _backoff_remaining(self, uid: str, failed: int) -> float:
        seen, since = self._failures_seen.get(uid, (0, 0.0))
        if failed != seen:
            seen, since = failed, time.monotonic()
            self._failures_seen[uid] = (seen, since)
        delay = min(self._backoff * 2.0 ** (failed - 1), 360.0)
        return since + delay - time.monotonic()

    def _finish(self, job: Obj, counts: dict[str, int], target: dict[str, Any]) -> None:
        now = now_rfc3339()
        if target["type"] == "SuccessCriteriaMet":
            final = _condition("Complete", (target["reason"], target["message"]), now)
            updated = self._write(job, counts, add=final, completion=now)
            if updated is not None:
                self._recorder.record(updated, "Job", "Normal", "Completed", "Job completed",
                                      component=COMPONENT)
        else:
            final = _condition("Failed", (target["reason"], target["message"]), now)
            updated = self._write(job, counts, add=final)
            if updated is not None:
                self._recorder.record(updated, "Job", "Warning", target["reason"],
                                      target["message"], component=COMPONENT)

    # -- writes ----------------------------------------------------------------------------

    def _write(self, job: Obj, counts: dict[str, int], *, add: dict[str, Any] | None = None,
               completion: str | None = None, start: bool = True) -> Obj | None:
        """Store the Job's status when it changes; returns the stored Job."""
        uid = job["metadata"]["uid"]
        now = now_rfc3339()

        def status_of(old: Obj) -> Obj:
            status = copy.deepcopy(old.get("status") or {})
            if start:
                status.setdefault("startTime", now)
            for field in ("active", "succeeded", "failed"):
                if counts[field]:
                    status[field] = counts[field]
                else:
                    status.pop(field, None)
            status["ready"] = counts["ready"]
            status["terminating"] = counts["terminating"]
            status["uncountedTerminatedPods"] = {}
            if add is not None and condition(old, add["type"]) is None:
                status["conditions"] = [*(status.get("conditions") or []), add]
            if completion is not None:
                status.setdefault("completionTime", completion)
            return status

        current = self._store.get_raw("jobs", job["metadata"].get("namespace"),
                                      job["metadata"]["name"])
        if current is None or current["metadata"].get("uid") != uid:
            return None
        if status_of(current) == (current.get("status") or {}):
            return current

        def mutate(obj: Obj) -> None:
            if obj["metadata"].get("uid") == uid:
                obj["status"] = status_of(obj)

        return self._store.update("jobs", job["metadata"].get("namespace"),
                                  job["metadata"]["name"], mutate)

    def _create_pod(self, job: Obj) -> bool:
        """Create one pod of the Job; False when admission refused it (said as an event)."""
        meta = job["metadata"]
        namespace = meta.get("namespace") or "default"
        template = (job.get("spec") or {}).get("template") or {}
        tmeta = template.get("metadata") or {}
        prefix = f"{meta['name']}-"[:MAX_GENERATED_PREFIX]
        pod: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": prefix,
                "namespace": namespace,
                "labels": dict(tmeta.get("labels") or {}),
                "ownerReferences": [{
                    "apiVersion": "batch/v1", "kind": "Job", "name": meta["name"],
                    "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True,
                }],
            },
            "spec": copy.deepcopy(template.get("spec") or {}),
        }
        if tmeta.get("annotations"):
            pod["metadata"]["annotations"] = dict(tmeta["annotations"])
        if self._admission is not None:
            self._admission.mutate("pods", pod, namespace)
        default_pod(pod)
        for _ in range(10):
            pod["metadata"]["name"] = prefix + random_suffix()
            try:
                created = self._admitted_create(pod, namespace)
            except AlreadyExists:
                continue
            except ApiError as refused:
                self._recorder.record(job, "Job", "Warning", "FailedCreate",
                                      f"Error creating: {refused.message}", component=COMPONENT)
                return False
            self._index.add(str(meta["uid"]), namespace, created["metadata"]["name"])
            self._recorder.record(job, "Job", "Normal", "SuccessfulCreate",
                                  f"Created pod: {created['metadata']['name']}",
                                  component=COMPONENT)
            return True
        return True

    def _admitted_create(self, pod: Obj, namespace: str) -> Obj:
        if self._admission is None:
            return self._store.create("pods", pod)
        with self._admission.lock:
            self._admission.admit("pods", pod, namespace)
            return self._store.create("pods", pod)

    def _delete(self, job: Obj, pod: Obj) -> None:
        meta = pod["metadata"]
        if owners.delete_pod(self._store, meta.get("namespace") or "default", meta["name"],
                             meta.get("uid")):
            self._recorder.record(job, "Job", "Normal", "SuccessfulDelete",
                                  f"Deleted pod: {meta['name']}", component=COMPONENT)


def _condition(type_: str, why: tuple[str, str], now: str) -> dict[str, Any]:
    return {"type": type_, "status": "True", "lastProbeTime": now, "lastTransitionTime": now,
            "reason": why[0], "message": why[1]}


def ttl_expiry(job: Obj) -> float | None:
    """Seconds from now until a finished Job's ttlSecondsAfterFinished runs out (<= 0: it
    has), or None when it has no TTL or has not finished."""
    ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
    done = finished_at(job)
    if ttl is None or done is None:
        return None
    return done.timestamp() + float(ttl) - datetime.now(timezone.utc).timestamp()
