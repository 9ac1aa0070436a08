"""`--max-runtime` (decision 0360): the pod's `activeDeadlineSeconds` (a Job's: its pod
template's), kept by the cluster, so that a run nobody watches any more still ends; a run
past it exits 124 with a line that says deadline and names the flag (decision 0320).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Squarepeg, names, wait_until

# main ignores SIGTERM, as a hung process may: the kubelet's SIGKILL after --stop-timeout
# ends it with 137, which must not be reported as an OOM kill.
HANGS = ("alpine", "sh", "-c", "trap '' TERM; echo started; sleep 120")


@pytest.mark.parametrize("mode", ["pod", "job"])
def test_a_run_past_max_runtime_exits_124_with_a_line_that_says_deadline(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    done = squarepeg("run", "--mode", mode, "--max-runtime", "3s", "--stop-timeout", "1",
                     *HANGS)
    assert done.code == 124, done.stderr
    assert done.has_line("passed its deadline of 3s", "--max-runtime"), done.lines
    assert not done.has_line("OOM"), done.lines
    assert done.stdout == b"started\n"
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the run's resource to go")


def test_max_runtime_is_the_pod_templates_deadline_in_job_mode(
    squarepeg: Squarepeg, tmp_path: Path
) -> None:
    config = tmp_path / "runtime.yaml"
    # The key, and a passthrough the flag's claim wins over.
    config.write_text("max_runtime: 90s\nkubernetes:\n  spec:\n    activeDeadlineSeconds: 7\n")
    done = squarepeg("run", "--mode", "job", "--config", str(config), "--max-runtime", "1m0.5s",
                     "--dry-run", "alpine", "true")
    assert done.code == 0, done.stderr
    text = done.stdout.decode()
    assert "activeDeadlineSeconds: 61\n" in text  # rounded up, never early
    assert text.count("activeDeadlineSeconds") == 1  # the template's, not the Job's own
    keyed_config = tmp_path / "keyed.yaml"
    keyed_config.write_text("max_runtime: 90s\n")
    keyed = squarepeg("run", "--config", str(keyed_config), "--dry-run", "alpine", "true")
    assert "activeDeadlineSeconds: 90\n" in keyed.stdout.decode(), keyed.stderr


def test_a_bad_max_runtime_is_one_line_and_exit_125(squarepeg: Squarepeg, kubesim: Any,
                                                    namespace: str) -> None:
    done = squarepeg("run", "--max-runtime", "soon", "alpine", "true")
    assert done.code == 125
    [line] = done.lines
    assert line.startswith("squarepeg: error:") and "--max-runtime" in line, line
    assert names(kubesim, namespace) == []


def test_a_detached_run_is_stopped_at_its_max_runtime_too(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    started = squarepeg("run", "-d", "--name", "bounded", "--max-runtime", "3",
                        "--stop-timeout", "1", *HANGS)
    assert started.code == 0, started.stderr

    def stopped() -> bool:
        pod = json.loads(kubesim.kubectl("get", "pod", "bounded", "-n", namespace,
                                         "-o", "json").stdout)
        return pod["status"].get("reason") == "DeadlineExceeded"

    wait_until(stopped, 60, "the detached pod to pass its deadline")
    # `wait` prints only a code the container chose; this one it did not (decision 0162).
    waited = squarepeg("wait", "bounded")
    assert (waited.code, waited.stdout) == (125, b""), waited.lines
    assert waited.has_line("passed its deadline of 3s", "--max-runtime"), waited.lines
    assert squarepeg("rm", "bounded").code == 0
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the detached pod to go")


def test_a_jobs_own_deadline_is_said_as_a_deadline_too(squarepeg: Squarepeg, kubesim: Any,
                                                       namespace: str, tmp_path: Path) -> None:
    """The Job's own activeDeadlineSeconds (set through a patch, not --max-runtime): the job
    controller deletes the pod, and the run says deadline and 124, not a deletion's 125."""
    config = tmp_path / "job-deadline.yaml"
    config.write_text("kubernetes:\n  patches:\n  - op: add\n"
                      "    path: /spec/activeDeadlineSeconds\n    value: 3\n")
    done = squarepeg("run", "--mode", "job", "--config", str(config), "--stop-timeout", "1",
                     *HANGS)
    assert done.code == 124, done.stderr
    assert done.has_line("job ", "passed its deadline of 3s", "the Job's"), done.lines
    assert not done.has_line("OOM"), done.lines
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the run's resource to go")
