"""podstate: phases, fail-fast reasons, the main container by name, and the exit code table."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kubectl_squarepeg.cluster import podstate
from kubectl_squarepeg.cluster.podstate import Outcome


def pod(
    *statuses: dict[str, Any],
    phase: str = "Running",
    name: str = "p",
    **status: Any,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": "u-1", "creationTimestamp": "2026-12-02T19:00:00Z"},
        "status": {"phase": phase, "containerStatuses": list(statuses), **status},
    }


def terminated(name: str = "main", code: int = 0, reason: str = "Completed", **extra: Any) -> Any:
    return {"name": name, "state": {"terminated": {"exitCode": code, "reason": reason, **extra}}}


def waiting(reason: str, name: str = "main", message: str = "") -> dict[str, Any]:
    return {"name": name, "state": {"waiting": {"reason": reason, "message": message}}}


def running(name: str = "main") -> dict[str, Any]:
    return {"name": name, "state": {"running": {"startedAt": "2026-12-02T19:00:01Z"}}}


@pytest.mark.parametrize("reason", sorted(podstate.FAIL_FAST_REASONS))
def test_each_fail_fast_reason_is_recognized(reason: str) -> None:
    found = podstate.fail_fast(pod(waiting(reason, message="why"), phase="Pending"))
    assert found == podstate.Waiting("main", reason, "why")
    assert podstate.fail_fast_reason(pod(waiting(reason), phase="Pending")) == reason


def test_the_seven_reasons_and_err_image_never_pull_exactly() -> None:
    assert {
        "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CreateContainerConfigError",
        "CreateContainerError", "RunContainerError", "CrashLoopBackOff", "ErrImageNeverPull",
    } == podstate.FAIL_FAST_REASONS


def _start_error(message: str) -> dict[str, object]:
    terminated = {"exitCode": 128, "reason": "StartError", "message": message}
    return pod({"name": "main", "state": {"terminated": terminated}}, phase="Failed")


RUNC = (
    "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
    "runc create failed: unable to start container process: {}: unknown"
)


@pytest.mark.parametrize(
    ("detail", "code"),
    [
        ('exec: "nosuchcmd": executable file not found in $PATH', 127),
        ('exec: "/bin/x": stat /bin/x: no such file or directory', 127),
        ('exec: "/etc/passwd": permission denied', 126),
        ("error setting cgroup config for procHooks process: bpf_prog_query failed", 125),
    ],
)
def test_a_command_that_cannot_start_exits_as_docker_says(detail: str, code: int) -> None:
    found = podstate.outcome(_start_error(RUNC.format(detail)))
    assert found.exit_code == code
    assert found.start_failure and not found.from_container
    assert found.message is not None and found.message.endswith(detail)


def test_dockershims_container_cannot_run_is_a_start_failure_too() -> None:
    said = ('OCI runtime create failed: container_linux.go:380: starting container process '
            'caused: exec: "nosuchcmd": executable file not found in $PATH: unknown')
    terminated = {"exitCode": 128, "reason": "ContainerCannotRun", "message": said}
    found = podstate.outcome(pod({"name": "main", "state": {"terminated": terminated}},
                                 phase="Failed"))
    assert (found.exit_code, found.start_failure, found.from_container) == (127, True, False)
    assert found.message is not None and found.message.endswith(
        'could not run its command: exec: "nosuchcmd": executable file not found in $PATH')
    # No message at all: the reason is said, and the code is docker's 125.
    bare = {"exitCode": 128, "reason": "ContainerCannotRun"}
    found = podstate.outcome(pod({"name": "main", "state": {"terminated": bare}},
                                 phase="Failed"))
    assert found.exit_code == 125 and found.message is not None
    assert found.message.endswith("could not run its command: ContainerCannotRun")


@pytest.mark.parametrize("reason", ["ContainerCreating", "PodInitializing", "SomethingElse"])
def test_other_waiting_reasons_do_not_fail_fast(reason: str) -> None:
    assert podstate.fail_fast(pod(waiting(reason), phase="Pending")) is None


def test_a_sidecar_stuck_on_its_image_fails_fast_too() -> None:
    p = pod(waiting("ContainerCreating"), waiting("ErrImagePull", name="proxy"), phase="Pending")
    assert podstate.fail_fast(p) == podstate.Waiting("proxy", "ErrImagePull", "")


def test_an_init_container_stuck_fails_fast() -> None:
    p = pod(phase="Pending", initContainerStatuses=[waiting("CrashLoopBackOff", name="init")])
    assert podstate.fail_fast_reason(p) == "CrashLoopBackOff"


def test_main_is_found_by_name_not_position() -> None:
    p = pod(terminated("sidecar", 0), terminated("main", 3, "Error"), phase="Failed")
    assert podstate.outcome(p) == Outcome(3)


@pytest.mark.parametrize("code", [0, 1, 3, 255])
def test_exit_code_verbatim(code: int) -> None:
    reason = "Completed" if code == 0 else "Error"
    phase = "Succeeded" if code == 0 else "Failed"
    assert podstate.outcome(pod(terminated(code=code, reason=reason), phase=phase)) == Outcome(code)


def test_oom_is_137_with_the_reason() -> None:
    p = pod(terminated(code=137, reason="OOMKilled"), phase="Failed", name="big")
    assert podstate.outcome(p) == Outcome(
        137, "container main of pod big was OOMKilled (exit code 137)"
    )


def test_eviction_is_125_not_the_made_up_137() -> None:
    p = pod(
        terminated(code=137, reason="ContainerStatusUnknown"),
        phase="Failed",
        name="ev",
        reason="Evicted",
        message="The node was low on resource: memory.",
    )
    assert podstate.outcome(p) == Outcome(
        125, "pod ev was evicted: The node was low on resource: memory.", False
    )


@pytest.mark.parametrize("main", [running(), terminated(code=137, reason="Error")])
def test_a_pod_past_its_deadline_is_124_and_said_never_an_oom(main: dict[str, Any]) -> None:
    # The kubelet marks the pod Failed/DeadlineExceeded at once, while main may still be
    # running; main then ends with the 137 of the SIGKILL, which must not read as an OOM.
    p = pod(main, phase="Failed", name="slow", reason="DeadlineExceeded",
            message="Pod was active on the node longer than the specified deadline")
    p["spec"] = {"activeDeadlineSeconds": 5}
    result = podstate.outcome(p)
    assert result.exit_code == 124 and not result.from_container
    assert result.message == (
        "pod slow passed its deadline of 5s (activeDeadlineSeconds, --max-runtime) and was "
        "stopped by the cluster (exit code 124)"
    )
    assert podstate.has_finished(p)


def test_an_exit_code_containerd_lost_is_125_not_its_made_up_255() -> None:
    # The real node's status of `sh -c 'sleep 4; exit 55'` that ended while containerd was
    # restarted (4 December).
    p = pod(terminated(code=255, reason="Unknown"), phase="Failed", name="x55")
    result = podstate.outcome(p)
    assert result.exit_code == 125 and not result.from_container
    assert result.message and "lost its exit code" in result.message
    # A container's own 255 stays its own.
    assert podstate.outcome(pod(terminated(code=255, reason="Error"), phase="Failed")) == (
        Outcome(255))


def test_container_status_unknown_without_eviction_is_125() -> None:
    p = pod(terminated(code=137, reason="ContainerStatusUnknown", message="node lost"),
            phase="Failed", name="n")
    assert podstate.outcome(p) == Outcome(
        125, "container main of pod n was lost before it finished: node lost", False
    )


def test_never_terminated_is_125() -> None:
    p = pod(running(), phase="Failed", name="x")
    assert podstate.outcome(p) == Outcome(
        125, "container main of pod x never terminated (pod phase Failed)", False
    )


def test_deleted_by_someone_else_is_125_even_with_a_sigterm_code() -> None:
    p = pod(terminated(code=143, reason="Error"), phase="Failed", name="d")
    p["metadata"]["deletionTimestamp"] = "2026-12-02T19:00:05Z"
    assert podstate.outcome(p) == Outcome(
        125, "pod d was deleted before its container finished", False, pod_deleted=True
    )


@pytest.mark.parametrize("reason, message", [
    # The kubelet's words on the real node while containerd restarted (4 December).
    ("RunContainerError", "error reading from server: read unix @->/tmp/l/containerd.sock: "
                          "read: connection reset by peer"),
    ("CreateContainerError", 'connection error: desc = "transport: Error while dialing: dial '
                             "unix /tmp/l/containerd.sock: connect: no such file or "
                             'directory"'),
    ("RunContainerError", "error reading from server: EOF"),
    ("ErrImagePull", "pull QPS exceeded"),
])
def test_a_runtime_connection_that_broke_is_not_fail_fast(reason: str, message: str) -> None:
    assert podstate.fail_fast(pod(waiting(reason, message=message), phase="Pending")) is None


def test_a_create_error_of_the_users_own_is_still_fail_fast() -> None:
    message = 'secret "nope" not found'
    found = podstate.fail_fast(pod(waiting("CreateContainerConfigError", message=message),
                                   phase="Pending"))
    assert found is not None and found.reason == "CreateContainerConfigError"
    message = "failed to create containerd task: exec: \"nope\": not found"
    assert podstate.fail_fast(pod(waiting("RunContainerError", message=message),
                                  phase="Pending")) is not None


def test_an_eviction_through_the_api_is_named_not_just_deleted() -> None:
    # What the real API server wrote into a pod evicted with POST pods/NAME/eviction
    # (localkube, kubelet node, 4 December): the condition, then a graceful delete.
    p = pod(terminated(code=137, reason="Error"), phase="Failed", name="v")
    p["metadata"]["deletionTimestamp"] = "2026-12-04T20:36:47Z"
    p["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
         "message": "Eviction API: evicting"},
        {"type": "Ready", "status": "False"},
    ]
    assert podstate.outcome(p) == Outcome(
        125,
        "pod v was evicted through the Eviction API before its container finished: "
        "Eviction API: evicting",
        False,
        pod_deleted=True,
    )
    # The watch's DELETED event carries the same last state.
    assert podstate.deleted_outcome("v", p) == podstate.outcome(p)
    p["status"]["conditions"][0]["status"] = "False"
    assert podstate.outcome(p).message == "pod v was deleted before its container finished"


def test_started_and_finished() -> None:
    assert not podstate.has_started(pod(waiting("ContainerCreating"), phase="Pending"))
    assert podstate.has_started(pod(running()))
    assert podstate.has_started(pod(terminated(), phase="Succeeded"))
    assert not podstate.has_finished(pod(running()))
    # main done while a sidecar runs on: the run is over, the pod is still Running
    assert podstate.has_finished(pod(terminated(), running("sidecar")))
    assert podstate.has_finished(pod(phase="Failed"))


def test_blocked_reason() -> None:
    unscheduled = pod(
        phase="Pending",
        conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/1 nodes are available: 1 Insufficient memory."}],
    )
    assert podstate.blocked_reason(unscheduled) == "Unschedulable"
    assert podstate.pending_summary(unscheduled) == (
        "not scheduled: 0/1 nodes are available: 1 Insufficient memory."
    )
    assert podstate.blocked_reason(pod(waiting("ContainerCreating"), phase="Pending")) == (
        "ContainerCreating"
    )
    assert podstate.blocked_reason(pod(running())) is None


def test_times() -> None:
    p = pod(
        terminated("main", finishedAt="2026-12-02T19:00:09Z"),
        terminated("side", finishedAt="2026-12-02T19:00:10Z"),
        phase="Succeeded",
    )
    assert podstate.created_at(p) == datetime(2026, 12, 2, 19, 0, 0, tzinfo=UTC)
    assert podstate.finished_at(p) == datetime(2026, 12, 2, 19, 0, 10, tzinfo=UTC)
    assert podstate.finished_at(pod(running())) is None
    assert podstate.parse_time("garbage") is None
    assert podstate.parse_time(None) is None


def test_job_finished_condition() -> None:
    job = {"status": {"conditions": [
        {"type": "SuccessCriteriaMet", "status": "True"},
        {"type": "Complete", "status": "True", "lastTransitionTime": "2026-12-02T19:01:00Z"},
    ]}}
    assert podstate.job_finished_condition(job) == (
        "Complete", datetime(2026, 12, 2, 19, 1, tzinfo=UTC)
    )
    assert podstate.job_finished_condition({"status": {}}) is None
    failed = {"status": {"conditions": [{"type": "Failed", "status": "False"}]}}
    assert podstate.job_finished_condition(failed) is None


def test_a_child_oom_killed_keeps_the_main_processs_code_and_says_so() -> None:
    # The real node: a child killed by the cgroup's OOM killer, the shell went on: the
    # kubelet reports `reason: OOMKilled`, exit code 0, phase Succeeded.
    p = pod(terminated(code=0, reason="OOMKilled"), phase="Succeeded", name="big")
    assert podstate.outcome(p) == Outcome(
        0,
        "a process in container main of pod big was killed for lack of memory (OOMKilled); "
        "the container's main process went on and exited 0; more memory: --memory",
    )


def test_the_deletion_deadline_and_the_grace_period_are_read_from_the_object() -> None:
    p = {"metadata": {"deletionTimestamp": "2026-12-04T16:45:12Z"},
         "spec": {"terminationGracePeriodSeconds": 30}}
    deadline = podstate.deletion_deadline(p)
    assert deadline is not None and deadline.isoformat() == "2026-12-04T16:45:12+00:00"
    assert podstate.grace_period(p) == 30
    assert podstate.deletion_deadline({}) is None and podstate.grace_period({}) is None


@pytest.mark.parametrize("code", [7, 143, 137])
def test_a_pod_stopped_by_stop_has_its_containers_own_code(code: int) -> None:
    # `stop` (decision 0370) annotates the pod, then lowers its deadline: the real kubelet
    # then reports Failed/DeadlineExceeded with the container's own end (a trap's 7, 137).
    p = pod(terminated(code=code, reason="Error"), phase="Failed", reason="DeadlineExceeded",
            message="Pod was active on the node longer than the specified deadline")
    p["spec"] = {"activeDeadlineSeconds": 1}
    assert podstate.outcome(p).exit_code == 124
    p["metadata"]["annotations"] = {"squarepeg.io/stopped-at": "2026-12-07T08:13:14Z"}
    assert podstate.stopped(p)
    result = podstate.outcome(p)
    assert (result.exit_code, result.from_container, result.message) == (code, True, None)
def test_a_jobs_own_deadline_is_124_and_other_job_failures_are_not() -> None:
    job = {"metadata": {"name": "j"}, "spec": {"activeDeadlineSeconds": 3},
           "status": {"conditions": [{"type": "FailureTarget", "status": "True",
                                      "reason": "DeadlineExceeded"}]}}
    result = podstate.job_deadline_outcome(job)
    assert result is not None and result.exit_code == 124 and result.pod_deleted
    assert result.message is not None and result.message.startswith(
        "job j passed its deadline of 3s (the Job's activeDeadlineSeconds; --max-runtime")
    job["status"]["conditions"][0]["reason"] = "BackoffLimitExceeded"
    assert podstate.job_deadline_outcome(job) is None
    assert podstate.job_deadline_outcome({"metadata": {"name": "j"}}) is None
