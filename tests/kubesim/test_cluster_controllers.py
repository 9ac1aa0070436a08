"""The scheduler, the job controller, the garbage collector and the TTL controller of
kubesim, driven through the Store."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from tests.kubesim.cluster_testkit import (
    Sim,
    container,
    live_groups,
    pod_object,
    wait_until,
)

NODE = {"name": "n1", "cpu": "2", "memory": "1Gi", "pods": 10, "labels": {"disk": "ssd"}}

# A container that stops on SIGTERM: on a node its command is PID 1, which the kernel
# shields from any signal it has no handler for (process.py), so a plain `sleep` would
# ignore a graceful stop and last its whole grace period.
# It says `ready` once the handler is in place: a SIGTERM before that is dropped too.
STOPS_ON_SIGTERM = ["sh", "-c", "trap 'exit 143' TERM; echo ready; while :; do sleep 0.1; done"]


def ready_job_pod(sim: Sim, job: str) -> dict[str, Any]:
    """The Job's pod once its command handles SIGTERM."""
    return wait_until(lambda: [p for p in sim.pods_of_job(job)
                               if b"ready" in sim.logs(p["metadata"]["name"])], 5,
                      "a pod whose command handles SIGTERM")[0]


def failed_scheduling(sim: Sim, name: str) -> str:
    def message() -> str | None:
        for event in sim.events(name):
            if event["reason"] == "FailedScheduling":
                assert event["type"] == "Warning"
                assert event["source"]["component"] == "default-scheduler"
                return str(event["message"])
        return None
    return str(wait_until(message, 5, f"FailedScheduling for {name}"))


def scheduled_condition(sim: Sim, name: str) -> dict[str, str]:
    conditions = sim.pod(name)["status"].get("conditions") or []
    return next(c for c in conditions if c["type"] == "PodScheduled")


# -- scheduler --------------------------------------------------------------------------------


def test_insufficient_memory_is_unschedulable_with_the_real_message(
        sim_with: Callable[..., Sim]) -> None:
    sim = sim_with(nodes=[NODE])
    big = container(command=["true"], resources={"requests": {"memory": "2Gi"}})
    sim.create_pod(pod_object("big", [big]))
    expected = ("0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are "
                "available: 1 No preemption victims found for incoming pod.")
    assert failed_scheduling(sim, "big") == expected
    condition = scheduled_condition(sim, "big")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False", "Unschedulable", expected)
    assert sim.phase("big") == "Pending" and not sim.pod("big")["spec"].get("nodeName")


def test_node_selector_taint_and_missing_claim_messages(sim_with: Callable[..., Sim]) -> None:
    tainted = {"name": "n2", "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}
    sim = sim_with(nodes=[NODE, tainted], persistentvolumeclaims={"default": ["data"]})
    sim.create_pod(pod_object("picky", [container(command=["true"])],
                              nodeSelector={"disk": "nvme"}))
    assert failed_scheduling(sim, "picky") == (
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 "
        "node(s) had untolerated taint {gpu: yes}. preemption: 0/2 nodes are available: 2 "
        "Preemption is not helpful for scheduling.")
    claim = {"name": "v", "persistentVolumeClaim": {"claimName": "missing"}}
    sim.create_pod(pod_object("claims", [container(command=["true"])], volumes=[claim]))
    assert failed_scheduling(sim, "claims") == (
        '0/2 nodes are available: persistentvolumeclaim "missing" not found. preemption: 0/2 '
        "nodes are available: 2 Preemption is not helpful for scheduling.")
    present = {"name": "v", "persistentVolumeClaim": {"claimName": "data"}}
    sim.create_pod(pod_object("fine", [container(command=["true"])], volumes=[present],
                              tolerations=[{"key": "gpu", "operator": "Exists"}]))
    sim.wait_phase("fine", "Succeeded")


def test_pod_is_scheduled_once_capacity_frees(sim_with: Callable[..., Sim]) -> None:
    sim = sim_with(nodes=[NODE])
    half = {"requests": {"memory": "700Mi", "cpu": "500m"}}
    sim.create_pod(pod_object("first", [container(command=["sleep", "30"], resources=half)]))
    sim.wait_phase("first", "Running")
    sim.create_pod(pod_object("second", [container(command=["true"], resources=half)]))
    assert "Insufficient memory" in failed_scheduling(sim, "second")
    sim.store.delete("pods", "default", "first")
    sim.wait_phase("second", "Succeeded", seconds=5)
    assert scheduled_condition(sim, "second")["status"] == "True"
    assert "Scheduled" in sim.reasons("second")


def test_pods_spread_over_nodes_that_fit(sim_with: Callable[..., Sim]) -> None:
    sim = sim_with(nodes=[{"name": "a", "memory": "1Gi"}, {"name": "b", "memory": "1Gi"}])
    request = {"requests": {"memory": "600Mi"}}
    for name in ("x", "y"):
        sim.create_pod(pod_object(name, [container(command=["sleep", "30"], resources=request)]))
    for name in ("x", "y"):
        sim.wait_phase(name, "Running")
    assert {sim.pod("x")["spec"]["nodeName"], sim.pod("y")["spec"]["nodeName"]} == {"a", "b"}
    nodes, _ = sim.store.list("nodes")
    assert [n["metadata"]["name"] for n in nodes] == ["a", "b"]
    assert nodes[0]["status"]["allocatable"]["memory"] == "1Gi"
    assert nodes[0]["metadata"]["labels"]["kubernetes.io/hostname"] == "a"


# -- jobs -------------------------------------------------------------------------------------

POD_NAME = re.compile(r"^work-[bcdfghjklmnpqrstvwxz2456789]{5}$")


def condition_types(job: dict[str, Any] | None) -> list[str]:
    status = (job or {}).get("status") or {}
    return [c["type"] for c in status.get("conditions") or []]


def wait_condition(sim: Sim, job: str, type_: str, seconds: float = 10) -> dict[str, Any]:
    """The Job once it has condition `type_`."""
    return dict(wait_until(lambda: type_ in condition_types(sim.job(job)) and sim.job(job),
                           seconds, f"job {job} to have condition {type_}"))


def test_job_success(sim: Sim) -> None:
    sim.create_job("work", [container(command=["sh", "-c", "echo done"])])
    job = wait_condition(sim, "work", "Complete")
    assert condition_types(job) == ["SuccessCriteriaMet", "Complete"]
    complete = job["status"]["conditions"][1]
    assert (complete["reason"], complete["message"]) == (
        "CompletionsReached", "Reached expected number of succeeded pods")
    status = job["status"]
    assert status["succeeded"] == 1 and "active" not in status and "failed" not in status
    assert status["ready"] == 0 and status["terminating"] == 0
    assert status["startTime"] <= status["completionTime"]
    pods = sim.pods_of_job("work")
    assert len(pods) == 1
    pod = pods[0]
    assert POD_NAME.match(pod["metadata"]["name"]), pod["metadata"]["name"]
    assert pod["metadata"]["generateName"] == "work-"
    assert pod["metadata"]["ownerReferences"] == [{
        "apiVersion": "batch/v1", "kind": "Job", "name": "work",
        "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "work"
    assert pod["status"]["phase"] == "Succeeded"
    assert sim.logs(pod["metadata"]["name"]) == b"done\n"
    assert [e["reason"] for e in sim.events("work")] == ["SuccessfulCreate", "Completed"]


def test_job_active_while_running(sim: Sim) -> None:
    sim.create_job("work", [container(command=["sleep", "30"])])
    job = wait_until(lambda: (sim.job("work") or {}).get("status", {}).get("ready") == 1
                     and sim.job("work"), 5, "a ready pod")
    assert job["status"]["active"] == 1 and not condition_types(job)


def test_job_failure_with_backoff_limit_zero(sim: Sim) -> None:
    sim.create_job("work", [container(command=["sh", "-c", "exit 7"])])
    job = wait_condition(sim, "work", "Failed")
    assert condition_types(job) == ["FailureTarget", "Failed"]
    failed = job["status"]["conditions"][1]
    assert (failed["reason"], failed["message"]) == (
        "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert job["status"]["failed"] == 1 and "completionTime" not in job["status"]
    assert len(sim.pods_of_job("work")) == 1
    assert "BackoffLimitExceeded" in sim.reasons("work")


def test_job_retries_up_to_its_backoff_limit(sim: Sim) -> None:
    sim.create_job("work", [container(command=["sh", "-c", "exit 1"])], backoffLimit=2)
    job = wait_condition(sim, "work", "Failed", seconds=15)
    assert job["status"]["failed"] == 3
    assert len(sim.pods_of_job("work")) == 3


def test_job_active_deadline_fails_it_and_stops_its_pod(sim: Sim) -> None:
    sim.create_job("work", [container(command=STOPS_ON_SIGTERM)], activeDeadlineSeconds=1)
    job = wait_condition(sim, "work", "Failed", seconds=10)
    failed = job["status"]["conditions"][-1]
    assert (failed["reason"], failed["message"]) == (
        "DeadlineExceeded", "Job was active longer than specified deadline")
    wait_until(lambda: not sim.pods_of_job("work"), 10, "the job's pod to be deleted")
    assert "SuccessfulDelete" in sim.reasons("work")


def test_job_ttl_after_finished_deletes_job_and_pods(sim: Sim) -> None:
    sim.create_job("work", [container(command=["true"])], ttlSecondsAfterFinished=1)
    wait_condition(sim, "work", "Complete")
    pod_name = sim.pods_of_job("work")[0]["metadata"]["name"]
    finished = time.monotonic()
    sim.wait_gone("jobs", "work", seconds=5)
    assert time.monotonic() - finished <= 3.0
    sim.wait_gone("pods", pod_name, seconds=5)


# -- garbage collection -------------------------------------------------------------------------


def test_background_deletion_collects_the_pods(sim: Sim) -> None:
    sim.create_job("work", [container(command=STOPS_ON_SIGTERM)])
    pod = ready_job_pod(sim, "work")
    name = pod["metadata"]["name"]
    groups = sim.started_groups()
    sim.store.delete("jobs", "default", "work")
    sim.wait_gone("pods", name, seconds=5)
    wait_until(lambda: not live_groups(groups), 5, "its process to end")


def test_foreground_deletion_deletes_pods_then_the_job(sim: Sim) -> None:
    sim.create_job("work", [container(command=STOPS_ON_SIGTERM)])
    pod = ready_job_pod(sim, "work")
    name = pod["metadata"]["name"]
    pod_watch = sim.store.watch("pods", "default", field_selector=f"metadata.name={name}")
    job_watch = sim.store.watch("jobs", "default", field_selector="metadata.name=work")

    def deleting(job: dict[str, Any]) -> None:
        job["metadata"].update(deletionTimestamp="2030-01-01T00:00:00Z",
                               deletionGracePeriodSeconds=0, finalizers=["foregroundDeletion"])

    sim.store.update("jobs", "default", "work", deleting)
    sim.wait_gone("jobs", "work", seconds=5)
    deleted_at = {}
    for watch, what in ((pod_watch, "pod"), (job_watch, "job")):
        for kind, obj in watch:
            if kind == "DELETED":
                deleted_at[what] = int(obj["metadata"]["resourceVersion"])
                break
        watch.close()
    assert deleted_at["pod"] < deleted_at["job"]


def test_orphaned_pod_of_a_missing_job_is_collected(sim: Sim) -> None:
    pod = pod_object("stray", [container(command=["sleep", "30"])])
    pod["spec"]["terminationGracePeriodSeconds"] = 1  # `sleep` as PID 1 ignores the SIGTERM
    pod["metadata"]["ownerReferences"] = [{"apiVersion": "batch/v1", "kind": "Job",
                                          "name": "gone", "uid": "no-such-uid",
                                          "controller": True, "blockOwnerDeletion": True}]
    sim.create_pod(pod)
    sim.wait_gone("pods", "stray", seconds=5)
    other = pod_object("kept", [container(command=["true"])])
    other["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                            "name": "rs", "uid": "x"}]
    sim.create_pod(other)
    sim.wait_phase("kept", "Succeeded")
