"""The kubelet half of kubesim driven through the Store: exit codes, signals, logs, memory
limits, images, configuration errors, restarts, deletion, eviction, sidecars and scale."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.kubesim.cluster_testkit import (
    Sim,
    container,
    live_groups,
    pod_object,
    wait_until,
)
from tests.kubesim.process import MAX_RECORD

PY = sys.executable
TIMESTAMP = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z $")


# -- exit codes and signals ----------------------------------------------------------------


@pytest.mark.parametrize(("code", "reason", "phase"), [
    (0, "Completed", "Succeeded"), (3, "Error", "Failed"), (255, "Error", "Failed")])
def test_exit_code_is_verbatim(sim: Sim, code: int, reason: str, phase: str) -> None:
    sim.run("p", "sh", "-c", f"exit {code}")
    assert sim.wait_phase("p", "Succeeded", "Failed") == phase
    terminated = sim.state("p")[1]
    assert terminated["exitCode"] == code
    assert terminated["reason"] == reason
    assert terminated["containerID"].startswith("containerd://")
    assert terminated["startedAt"] <= terminated["finishedAt"]
    status = sim.container_status("p")
    assert status["ready"] is False and status["started"] is False
    assert status["image"] == "docker.io/library/alpine:latest"
    assert status["imageID"].startswith("docker.io/library/alpine@sha256:")


def test_running_pod_status_is_complete_and_fast(sim: Sim) -> None:
    created = time.monotonic()
    sim.run("p", "sleep", "30")
    sim.wait_phase("p", "Running", seconds=5)
    took = time.monotonic() - created
    pod = sim.pod("p")
    status = pod["status"]
    assert took < 1.0, f"Running after {took:.3f}s"
    assert pod["spec"]["nodeName"] == "kubesim-node"
    assert status["hostIP"] == status["hostIPs"][0]["ip"]
    assert status["podIP"].startswith("10.244.") and status["startTime"].endswith("Z")
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"PodReadyToStartContainers": "True", "Initialized": "True",
                          "Ready": "True", "ContainersReady": "True", "PodScheduled": "True"}
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    kind, running = sim.state("p")
    assert kind == "running" and running["startedAt"].endswith("Z")
    assert sim.container_status("p")["ready"] is True
    assert sim.reasons("p")[:1] == ["Scheduled"]
    assert {"Pulled", "Created", "Started"} <= set(sim.reasons("p"))


def test_graceful_deletion_sends_sigterm_and_records_143(sim: Sim) -> None:
    sim.run("p", "sh", "-c", "trap 'exit 143' TERM; echo ready; while :; do sleep 0.1; done")
    # Once the handler is in place: a SIGTERM before that would be dropped, as on a node.
    wait_until(lambda: b"ready" in sim.logs("p"), 5, "the handler to be in place")
    pod_seen = []
    watch = sim.store.watch("pods", "default", field_selector="metadata.name=p")
    sim.store.update("pods", "default", "p", lambda o: o["metadata"].update(
        deletionTimestamp="2030-01-01T00:00:00Z", deletionGracePeriodSeconds=30))
    sim.wait_gone("pods", "p", seconds=5)
    for kind, obj in watch:
        pod_seen.append((kind, obj))
        if kind == "DELETED":
            break
    watch.close()
    last = pod_seen[-1][1]
    terminated = last["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 143 and terminated["reason"] == "Error"
    assert last["status"]["phase"] == "Failed"
    assert "Killing" in sim.reasons("p")


def test_a_pid_1_without_a_sigterm_handler_lasts_its_grace_period(sim: Sim) -> None:
    # As on the real node (31.4 s with the default 30 s): the shell as PID 1 has no handler,
    # so the kernel drops the SIGTERM, and `sleep` never gets one.
    sim.run("p", "sh", "-c", "echo ready; sleep 30")
    wait_until(lambda: b"ready" in sim.logs("p"), 5, "the shell to start")
    started = time.monotonic()
    sim.store.update("pods", "default", "p", lambda o: o["metadata"].update(
        deletionTimestamp="2030-01-01T00:00:00Z", deletionGracePeriodSeconds=2))
    sim.wait_gone("pods", "p", seconds=8)
    took = time.monotonic() - started
    assert 2.0 <= took < 5.0, f"deleted after {took:.2f}s with a 2s grace period"


def test_graceful_deletion_kills_after_the_grace_period(sim: Sim) -> None:
    sim.run("p", "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done")
    wait_until(lambda: b"ready" in sim.logs("p"), 5, "the TERM-ignoring script to start")
    watch = sim.store.watch("pods", "default", field_selector="metadata.name=p")
    started = time.monotonic()
    sim.store.update("pods", "default", "p", lambda o: o["metadata"].update(
        deletionTimestamp="2030-01-01T00:00:00Z", deletionGracePeriodSeconds=1))
    sim.wait_gone("pods", "p", seconds=6)
    took = time.monotonic() - started
    final = None
    for kind, obj in watch:
        if kind == "DELETED":
            final = obj
            break
    watch.close()
    assert 1.0 <= took < 4.0, f"deleted after {took:.2f}s with a 1s grace period"
    assert final is not None
    assert final["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137


def test_a_shorter_grace_period_cuts_a_running_deletion_short(sim: Sim) -> None:
    sim.run("p", "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done")
    wait_until(lambda: b"ready" in sim.logs("p"), 5, "the TERM-ignoring script to start")
    sim.store.update("pods", "default", "p", lambda o: o["metadata"].update(
        deletionTimestamp="2030-01-01T00:00:00Z", deletionGracePeriodSeconds=60))
    wait_until(lambda: "Killing" in sim.reasons("p"), 5, "the Killing event")
    started = time.monotonic()
    sim.store.update("pods", "default", "p", lambda o: o["metadata"].update(
        deletionGracePeriodSeconds=1))
    sim.wait_gone("pods", "p", seconds=6)
    assert time.monotonic() - started < 4.0


def test_pod_deleted_from_the_store_is_killed_and_forgotten(sim: Sim) -> None:
    sim.run("p", "sh", "-c", "echo up; sleep 30")
    wait_until(lambda: b"up" in sim.logs("p"), 5, "output")
    groups = sim.started_groups()
    sim.store.delete("pods", "default", "p")
    wait_until(lambda: not live_groups(groups), 5, "the container process to die")
    wait_until(lambda: not sim.logbook.has_records("default", "p", "main"), 5, "logs dropped")
    # A new pod of the same name starts with a log of its own.
    sim.run("p", "sh", "-c", "echo second")
    sim.wait_phase("p", "Succeeded")
    assert sim.logs("p") == b"second\n"


# -- logs ------------------------------------------------------------------------------------


def test_logs_are_byte_exact(sim: Sim) -> None:
    payload = (bytes(range(256)) + b"\x1b[1;31mred\x1b[0m 50%\r100%\r\n"
               + "ünïcödé\n".encode() + b"no newline at the end")
    script = f"import sys; sys.stdout.buffer.write({payload!r}); sys.stdout.flush()"
    sim.run("p", PY, "-c", script)
    sim.wait_phase("p", "Succeeded")
    assert sim.logs("p") == payload
    with_ts = sim.logs("p", timestamps=True)
    lines = with_ts.split(b"\n")
    assert all(TIMESTAMP.match(line[:31]) for line in lines), lines[:3]
    assert b"".join(line[31:] + b"\n" for line in lines)[:-1] == payload


def test_stdout_and_stderr_both_reach_the_log(sim: Sim) -> None:
    sim.run("p", "sh", "-c", "echo out; sleep 0.05; echo err >&2; sleep 0.05; echo out2")
    sim.wait_phase("p", "Succeeded")
    assert sim.logs("p") == b"out\nerr\nout2\n"


def test_long_line_is_split_into_16k_records_that_read_back_joined(sim: Sim) -> None:
    line = b"x" * (40 * 1024) + b"\n"
    sim.run("p", PY, "-c", f"import sys; sys.stdout.buffer.write({line!r} + b'tail\\n')")
    sim.wait_phase("p", "Succeeded")
    stream = sim.logbook._streams[("default", "p", "main")]
    sizes = [len(r.data) for r in stream.records]
    assert sizes[:3] == [MAX_RECORD, MAX_RECORD, 40 * 1024 - 2 * MAX_RECORD + 1], sizes
    assert sim.logs("p") == line + b"tail\n"
    with_ts = sim.logs("p", timestamps=True)
    assert with_ts.count(b"Z x") == 1 and with_ts.count(b"\n") == 2


def test_large_output_flows_completely(sim: Sim) -> None:
    size = 20_000_000
    script = ("import sys\nline = b'0123456789' * 9 + b'abcdefghi\\n'\n"
              f"for _ in range({size} // 100): sys.stdout.buffer.write(line)\n")
    sim.run("p", PY, "-c", script)
    sim.wait_phase("p", "Succeeded", seconds=60)
    data = sim.logs("p")
    assert len(data) == size and data.count(b"\n") == size // 100
    assert sim.logs("p", tail_lines=2) == b"0123456789" * 9 + b"abcdefghi\n" \
        + b"0123456789" * 9 + b"abcdefghi\n"


def test_termination_message_falls_back_to_the_log(sim: Sim) -> None:
    sim.run("p", "sh", "-c", "echo something broke; exit 2",
            container_fields={"terminationMessagePolicy": "FallbackToLogsOnError"})
    sim.wait_phase("p", "Failed")
    assert sim.state("p")[1]["message"] == "something broke\n"


# -- memory ----------------------------------------------------------------------------------


def test_memory_limit_is_enforced_as_oomkilled(sim: Sim) -> None:
    script = "import time\nx = b'a' * (200 << 20)\ntime.sleep(30)\n"
    sim.run("p", PY, "-c", script,
            container_fields={"resources": {"limits": {"memory": "64Mi"},
                                            "requests": {"memory": "64Mi"}}})
    terminated = sim.wait_terminated("p", seconds=15)
    assert terminated["exitCode"] == 137
    assert terminated["reason"] == "OOMKilled"
    assert sim.wait_phase("p", "Failed") == "Failed"


# -- images and configuration -----------------------------------------------------------------


def test_unknown_image_is_err_image_pull_then_image_pull_back_off(sim: Sim) -> None:
    started = time.monotonic()
    sim.run("p", "true", image="nosuchimage:1.0")
    pulled = sim.wait_waiting("p", "ErrImagePull", seconds=3)
    assert time.monotonic() - started < 1.0
    assert 'failed to pull and unpack image "docker.io/library/nosuchimage:1.0"' in \
        pulled["message"]
    backoff = sim.wait_waiting("p", "ImagePullBackOff", seconds=3)
    assert backoff["message"] == 'Back-off pulling image "nosuchimage:1.0"'
    assert sim.phase("p") == "Pending"
    messages = [(e["reason"], e["message"]) for e in sim.events("p")]
    assert ("Failed", "Error: ErrImagePull") in messages
    assert ("Failed", "Error: ImagePullBackOff") in messages
    assert ("BackOff", 'Back-off pulling image "nosuchimage:1.0"') in messages
    # It keeps retrying: ErrImagePull again after the back-off.
    wait_until(lambda: any(e["reason"] == "Pulling" and e["count"] >= 2
                           for e in sim.events("p")), 5, "a second pull")


def test_malformed_reference_is_invalid_image_name(sim: Sim) -> None:
    sim.run("p", "true", image="Alpine:Latest")
    waiting = sim.wait_waiting("p", "InvalidImageName", seconds=3)
    assert waiting["message"] == (
        'Failed to apply default image tag "Alpine:Latest": couldn\'t parse image name '
        '"Alpine:Latest": invalid reference format: repository name (library/Alpine) must be '
        "lowercase")
    assert "InspectFailed" in sim.reasons("p")


def test_missing_secret_and_configmap_are_create_container_config_error(sim: Sim) -> None:
    env = [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}]
    sim.run("p", "true", container_fields={"env": env})
    waiting = sim.wait_waiting("p", "CreateContainerConfigError", seconds=3)
    assert waiting["message"] == 'secret "db" not found'
    env = [{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "m"}}}]
    sim.run("q", "true", container_fields={"env": env})
    assert sim.wait_waiting("q", "CreateContainerConfigError", seconds=3)["message"] == \
        'configmap "settings" not found'
    assert ("Failed", 'Error: configmap "settings" not found') in [
        (e["reason"], e["message"]) for e in sim.events("q")]


def test_env_sources_and_expansion(sim_with: Callable[..., Sim]) -> None:
    sim = sim_with(secrets={"default": {"db": {"pw": "s3cret"}}},
                   configmaps={"default": ["settings"]})
    env = [{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}},
           {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "m"}}},
           {"name": "GREETING", "value": "hi $(PASSWORD) $$(NOPE)"},
           {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "x", "key": "y",
                                                         "optional": True}}}]
    sim.run("p", "sh", "-c", 'echo "$PASSWORD|$MODE|$GREETING|$POD|${OPT-unset}|$(echo x)"',
            container_fields={"env": env})
    sim.wait_phase("p", "Succeeded")
    assert sim.logs("p") == b"s3cret||hi s3cret $(NOPE)|p|unset|x\n"


def test_pull_delay_keeps_container_creating_then_runs(sim_with: Callable[..., Sim]) -> None:
    sim = sim_with(images={"slowimg": {"entrypoint": ["sh", "-c"],
                                       "cmd": ["echo pulled"], "pull_seconds": 0.6}})
    started = time.monotonic()
    sim.create_pod(pod_object("p", [container(image="slowimg:2")]))
    sim.wait_waiting("p", "ContainerCreating", seconds=3)
    sim.wait_phase("p", "Succeeded", seconds=5)
    assert time.monotonic() - started >= 0.6
    assert sim.logs("p") == b"pulled\n"
    pulled = [e["message"] for e in sim.events("p") if e["reason"] == "Pulled"]
    assert pulled and pulled[0].startswith('Successfully pulled image "slowimg:2" in ')
    # IfNotPresent: the second pod finds the image on the node.
    sim.create_pod(pod_object("q", [container(image="slowimg:2")]))
    sim.wait_phase("q", "Succeeded", seconds=5)
    assert [e["message"] for e in sim.events("q") if e["reason"] == "Pulled"] == [
        'Container image "slowimg:2" already present on machine']


def test_command_and_args_resolve_against_the_image(sim_with: Callable[..., Sim]) -> None:
    sim = sim_with(images={"tool": {"entrypoint": ["echo", "entry"],
                                    "cmd": ["default-cmd"]}})
    cases: dict[str, dict[str, Any]] = {
        "image-defaults": {},
        "args-only": {"args": ["given-args"]},
        "command-only": {"command": ["echo", "cmd"]},
        "both": {"command": ["echo", "cmd"], "args": ["and-args"]},
    }
    for name, fields in cases.items():
        sim.create_pod(pod_object(name, [container(image="tool", **fields)]))
    # alpine has no ENTRYPOINT and CMD [sh]: args alone run as the whole command.
    sim.create_pod(pod_object("alpine-args", [container(args=["sh", "-c", "echo hi"])]))
    for name in [*cases, "alpine-args"]:
        sim.wait_phase(name, "Succeeded")
    assert sim.logs("image-defaults") == b"entry default-cmd\n"
    assert sim.logs("args-only") == b"entry given-args\n"
    assert sim.logs("command-only") == b"cmd\n"
    assert sim.logs("both") == b"cmd and-args\n"
    assert sim.logs("alpine-args") == b"hi\n"


def test_working_directory(sim: Sim, tmp_path: Path) -> None:
    sim.run("here", "pwd", container_fields={"workingDir": str(tmp_path)})
    sim.run("scratch", "pwd", container_fields={"workingDir": "/no/such/dir"})
    sim.wait_phase("here", "Succeeded")
    sim.wait_phase("scratch", "Succeeded")
    assert sim.logs("here") == f"{tmp_path}\n".encode()
    assert sim.logs("scratch").startswith(sim.cluster.kubelet.scratch_root.encode())


def test_never_pull_and_empty_command(sim_with: Callable[..., Sim]) -> None:
    sim = sim_with(images={"bare": {"entrypoint": [], "cmd": []},
                           "remote": {"cmd": ["sh"], "pull_seconds": 5}})
    sim.create_pod(pod_object("never", [container(image="remote:1", imagePullPolicy="Never")]))
    assert sim.wait_waiting("never", "ErrImageNeverPull", seconds=3)["message"] == \
        'Container image "remote:1" is not present with pull policy of Never'
    sim.create_pod(pod_object("empty", [container(image="bare:1")]))
    message = sim.wait_waiting("empty", "CreateContainerError", seconds=3)["message"]
    assert message.endswith("no command specified")


def test_command_that_cannot_start_is_start_error(sim: Sim) -> None:
    sim.run("p", "no-such-command-here")
    assert sim.wait_phase("p", "Failed") == "Failed"
    terminated = sim.state("p")[1]
    assert terminated["exitCode"] == 128 and terminated["reason"] == "StartError"
    assert 'exec: "no-such-command-here": executable file not found in $PATH' in \
        terminated["message"]


# -- restarts, init containers, sidecars ----------------------------------------------------


def test_restart_policy_always_goes_into_crash_loop_back_off(sim: Sim) -> None:
    sim.run("p", "sh", "-c", "echo attempt; exit 1", restartPolicy="Always")
    waiting = sim.wait_waiting("p", "CrashLoopBackOff", seconds=5)
    assert waiting["message"].startswith("back-off ")
    status = sim.container_status("p")
    assert status["restartCount"] >= 1
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert sim.phase("p") == "Running"
    wait_until(lambda: sim.container_status("p")["restartCount"] >= 2, 5, "another restart")
    assert sim.logs("p") in (b"", b"attempt\n")  # each restart starts a fresh log
    assert "BackOff" in sim.reasons("p")


def test_restart_policy_on_failure_stops_after_success(sim: Sim, tmp_path: Path) -> None:
    marker = f"{tmp_path}/once"
    sim.run("p", "sh", "-c", f"if [ -e {marker} ]; then exit 0; fi; touch {marker}; exit 4",
            restartPolicy="OnFailure")
    assert sim.wait_phase("p", "Succeeded") == "Succeeded"
    status = sim.container_status("p")
    assert status["restartCount"] == 1
    assert status["lastState"]["terminated"]["exitCode"] == 4


def test_init_containers_run_first_and_a_failing_one_fails_the_pod(sim: Sim) -> None:
    pod = pod_object("ok", [container(command=["sh", "-c", "echo main"])],
                     initContainers=[container("setup", command=["sh", "-c", "echo init"])])
    sim.create_pod(pod)
    sim.wait_phase("ok", "Succeeded")
    assert sim.state("ok", "setup", init=True)[1]["exitCode"] == 0
    assert sim.logs("ok", "setup") == b"init\n" and sim.logs("ok") == b"main\n"
    bad = pod_object("bad", [container(command=["sh", "-c", "echo main"])],
                     initContainers=[container("setup", command=["sh", "-c", "exit 9"])])
    sim.create_pod(bad)
    assert sim.wait_phase("bad", "Failed") == "Failed"
    assert sim.state("bad", "main") == ("waiting", {"reason": "PodInitializing"})
    assert not sim.logbook.has_records("default", "bad", "main")


def test_sidecar_keeps_running_while_main_has_ended(sim: Sim) -> None:
    pod = pod_object("p", [container("main", command=["sh", "-c", "sleep 0.2; exit 3"]),
                           container("proxy", command=["sleep", "30"])])
    sim.create_pod(pod)
    terminated = sim.wait_terminated("p", "main", seconds=5)
    assert terminated["exitCode"] == 3
    assert sim.state("p", "proxy")[0] == "running"
    assert sim.phase("p") == "Running"
    ready = next(c for c in sim.pod("p")["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"
    assert ready["message"] == "containers with unready status: [main]"


# -- eviction -------------------------------------------------------------------------------


def test_eviction_shape(sim: Sim) -> None:
    sim.run("p", "sleep", "30")
    sim.wait_phase("p", "Running")
    assert sim.cluster.evict("default", "p") is True
    assert sim.cluster.evict("default", "nope") is False
    sim.wait_phase("p", "Failed")
    status = sim.pod("p")["status"]
    assert status["reason"] == "Evicted"
    assert status["message"].startswith("The node was low on resource: memory. ")
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert terminated == {"exitCode": 137, "reason": "ContainerStatusUnknown",
                          "message": "The container could not be located when the pod was "
                                     "terminated"}
    disruption = next(c for c in status["conditions"] if c["type"] == "DisruptionTarget")
    assert disruption["reason"] == "TerminationByKubelet"
    assert "Evicted" in sim.reasons("p")
    groups = sim.started_groups()
    wait_until(lambda: not live_groups(groups), 5, "the evicted container to die")
    wait_until(lambda: sim.containers_done("p"), 5, "the kubelet to be done with the pod")
    # Its container thread ended after the eviction and did not overwrite the status.
    assert sim.state("p")[1]["reason"] == "ContainerStatusUnknown"


# -- scale and shutdown ----------------------------------------------------------------------


def test_fifty_pods_run_at_once(sim: Sim) -> None:
    for i in range(50):
        sim.run(f"p{i}", "sleep", "30")
    wait_until(lambda: all(sim.phase(f"p{i}") == "Running" for i in range(50)), 30,
               "50 pods Running")
    assert len(live_groups(sim.started_groups())) == 50


def test_stop_leaves_no_process(sim_with: Callable[..., Sim]) -> None:
    sim = sim_with()
    sim.run("p", "sh", "-c", "sleep 60 & sleep 60 & echo started; wait")
    sim.run("q", "sh", "-c", "trap '' TERM; sleep 60")
    wait_until(lambda: b"started" in sim.logs("p") and sim.phase("q") == "Running", 5,
               "containers with children")
    groups = sim.started_groups()
    assert live_groups(groups) == groups
    sim.cluster.stop()
    sim.cluster.stop()  # idempotent
    wait_until(lambda: not live_groups(groups), 5, "every process group gone")


def test_watches_dropped_by_the_fault_are_resumed(sim: Sim) -> None:
    sim.store.drop_watches()
    sim.run("p", "sh", "-c", "echo after the drop")
    sim.wait_phase("p", "Succeeded", seconds=5)
    assert sim.logs("p") == b"after the drop\n"


def test_a_deadline_lowered_on_a_running_pod_stops_it_and_keeps_its_log(sim: Sim) -> None:
    # squarepeg's `stop` (decision 0370), as the real kubelet answered it on localkube: the
    # trap runs at once, its code is the container's, the phase is Failed/DeadlineExceeded
    # only with the container's end, and the log stays.
    sim.run("p", "sh", "-c", "trap 'echo got TERM; exit 7' TERM; echo ready; "
            "while :; do sleep 0.1; done")
    wait_until(lambda: b"ready" in sim.logs("p"), 5, "the handler to be in place")
    assert sim.pod("p")["status"]["phase"] == "Running"
    sim.store.update("pods", "default", "p",
                     lambda o: o["spec"].update(activeDeadlineSeconds=1))
    sim.wait_phase("p", "Failed", seconds=5)
    final = sim.pod("p")
    assert final["status"]["reason"] == "DeadlineExceeded"
    assert final["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 7
    assert sim.logs("p") == b"ready\ngot TERM\n"
