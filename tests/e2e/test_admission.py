"""Admission refusals of the run's pod, in pod and in job mode: said at once (exit 125 in
seconds, not at --timeout), the policy's own reason, its fix in docker's words, and never
called a permission problem (issue 33, decision 0300).

In job mode the Job is admitted and its controller's pod is refused: the reason is in the
Job's FailedCreate events. The objects are made with kubectl as a cluster admin would, so
the tests run on localkube's real API server too; PodSecurity and ValidatingAdmissionPolicy
are the real API server's alone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Finished, Squarepeg, names, wait_until

MODES = pytest.mark.parametrize("mode", ["pod", "job"])
# The bound the issue sets; a run that waits for its --timeout (60 s here) cannot meet it.
SAID_WITHIN_SECONDS = 10.0


def timed_run(squarepeg: Squarepeg, mode: str, *args: str) -> tuple[Finished, float]:
    began = time.monotonic()
    done = squarepeg("run", "--mode", mode, "--timeout", "60", *args)
    return done, time.monotonic() - began


def assert_refused_at_once(done: Finished, seconds: float, *reason: str) -> None:
    assert done.code == 125, done.lines
    assert seconds < SAID_WITHIN_SECONDS, (seconds, done.lines)
    assert done.has_line("error:", *reason), done.lines
    assert not done.has_line("permission"), done.lines  # RBAC's words, not admission's
    assert done.stdout == b""


def quota_hard_pods(kubesim: Any, namespace: str, name: str) -> str:
    done = kubesim.kubectl("get", "resourcequota", name, "-n", namespace, "-o",
                           "jsonpath={.status.hard.pods}")
    return done.stdout.decode() if done.returncode == 0 else ""


def make_quota(kubesim: Any, namespace: str, hard: str, settled: str) -> None:
    made = kubesim.kubectl("create", "quota", "compute", f"--hard={hard}", "-n", namespace)
    assert made.returncode == 0, made.stderr
    # The quota admits nothing until the quota controller has written its status.
    wait_until(lambda: quota_hard_pods(kubesim, namespace, "compute") == settled, 30,
               "the quota's status")


@MODES
def test_an_exhausted_quota_is_said_at_once_in_either_mode(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    make_quota(kubesim, namespace, "pods=0", "0")
    done, seconds = timed_run(squarepeg, mode, "alpine", "true")
    assert_refused_at_once(done, seconds, "exceeded quota", "compute")
    assert done.has_line("--cpus"), done.lines
    assert done.has_line("resourcequota"), done.lines


@MODES
def test_a_quota_that_needs_limits_names_cpus_and_memory(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    make_quota(kubesim, namespace, "pods=5,limits.cpu=2,limits.memory=1Gi", "5")
    done, seconds = timed_run(squarepeg, mode, "alpine", "true")
    assert_refused_at_once(done, seconds, "must specify", "limits")
    assert done.has_line("--cpus", "--memory"), done.lines
    given = squarepeg("run", "--mode", mode, "--cpus", "0.1", "-m", "64m", "alpine", "true")
    assert given.code == 0, given.lines


@pytest.mark.localkube_only("kubesim has no Pod Security admission")
@MODES
def test_pod_security_enforce_is_said_with_the_flags_that_satisfy_it(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    labelled = kubesim.kubectl("label", "namespace", namespace,
                               "pod-security.kubernetes.io/enforce=restricted")
    assert labelled.returncode == 0, labelled.stderr
    done, seconds = timed_run(squarepeg, mode, "alpine", "true")
    assert_refused_at_once(done, seconds, "violates PodSecurity", "restricted")
    assert done.has_line("--cap-drop ALL", "--security-opt no-new-privileges"), done.lines


# What `restricted` asks, in docker's words (decision 0420); seccomp is docker's default.
RESTRICTED_FLAGS = ("--user", "1000", "--cap-drop", "ALL", "--security-opt", "no-new-privileges")


@pytest.mark.localkube_only("kubesim has no Pod Security admission")
@MODES
def test_docker_flags_reach_a_restricted_namespace_with_files_in_and_out(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str, tmp_path: Path
) -> None:
    labelled = kubesim.kubectl("label", "namespace", namespace,
                               "pod-security.kubernetes.io/enforce=restricted")
    assert labelled.returncode == 0, labelled.stderr
    done = squarepeg("run", "--mode", mode, *RESTRICTED_FLAGS, "alpine", "id", "-u")
    assert (done.code, done.stdout) == (0, b"1000\n"), done.lines
    # -v: the upload and copy-back helpers comply too, as the user given.
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "greeting").write_text("hello\n")
    (tmp_path / "out").mkdir()
    helper = tmp_path / "helper.yaml"  # the node's busybox, as tests/e2e/test_files.py's
    helper.write_text("files_helper_image: busybox\n")
    with_files = squarepeg(
        "run", "--mode", mode, "--config", str(helper), *RESTRICTED_FLAGS,
        "-v", f"{tmp_path / 'in'}:/in:ro", "-v", f"{tmp_path / 'out'}:/out", "alpine", "sh",
        "-c", "id -u; cat /in/greeting; id -u > /out/uid")
    assert (with_files.code, with_files.stdout) == (0, b"1000\nhello\n"), with_files.lines
    assert (tmp_path / "out" / "uid").read_text() == "1000\n"



def test_dry_run_server_in_job_mode_checks_the_pod_the_job_would_make(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    make_quota(kubesim, namespace, "pods=0", "0")
    done = squarepeg("run", "--dry-run-server", "--mode", "job", "alpine", "true")
    assert (done.code, done.stdout) == (125, b""), done.lines
    assert done.has_line("error:", "its controller's pod would be refused", "exceeded quota"), \
        done.lines
    assert not done.has_line("permission"), done.lines
    assert names(kubesim, namespace) == []
    # A pod the quota admits: the Job's YAML, as the API server would make it.
    assert kubesim.kubectl("delete", "resourcequota", "compute", "-n", namespace).returncode == 0
    wait_until(lambda: squarepeg("run", "--dry-run-server", "--mode", "job", "alpine",
                                 "true").code == 0, 30, "the quota's deletion to show")


@pytest.mark.localkube_only("kubesim has no Pod Security admission")
@MODES
def test_pod_security_warnings_are_shown_once_and_the_run_goes_on(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    labelled = kubesim.kubectl("label", "namespace", namespace,
                               "pod-security.kubernetes.io/warn=restricted")
    assert labelled.returncode == 0, labelled.stderr
    done = squarepeg("run", "--mode", mode, "alpine", "echo", "ran")
    assert (done.code, done.stdout) == (0, b"ran\n"), done.lines
    warned = [line for line in done.lines if "would violate PodSecurity" in line]
    assert len(warned) == 1 and warned[0].startswith("squarepeg: warning: "), done.lines


def make_limit_range(kubesim: Any, namespace: str, limits: dict[str, Any]) -> None:
    made = kubesim.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bounds"},
        "spec": {"limits": [{"type": "Container", **limits}]},
    }).encode())
    assert made.returncode == 0, made.stderr


@pytest.mark.localkube_only("kubesim has no LimitRange admission")
@MODES
def test_a_limit_range_maximum_names_cpus_and_its_defaults_satisfy_a_quota(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    make_limit_range(kubesim, namespace, {"max": {"cpu": "200m"},
                                          "default": {"cpu": "100m", "memory": "64Mi"}})
    done, seconds = timed_run(squarepeg, mode, "--cpus", "1", "alpine", "true")
    assert_refused_at_once(done, seconds, "maximum cpu usage per Container")
    assert done.has_line("--cpus", "limitrange"), done.lines
    # A quota that needs limits, met by the LimitRange's defaults: no flag needed.
    make_quota(kubesim, namespace, "pods=5,limits.cpu=2,limits.memory=1Gi", "5")
    ran = squarepeg("run", "--mode", mode, "alpine", "echo", "within")
    assert (ran.code, ran.stdout) == (0, b"within\n"), ran.lines
