"""The orphan sweep end to end: what it deletes, what it never touches, and what it costs.

Orphans are made the way a crashed run leaves them: Pods and Jobs carrying squarepeg's
labels, created straight through kubectl, left to finish or to get stuck. The finished ones
are then made to look older than the sweep's floor (`age_the_finish`), which no
`orphan_sweep_min_age` lowers.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_squarepeg.run import orphans
from tests.e2e.conftest import (
    Squarepeg,
    age_the_finish,
    counting_kubectl,
    names,
    skip_where_the_kubelet_owns_pod_status,
    wait_until,
)
from tests.helpers import pod_manifest

USER = "tester"
# How much earlier the finished orphans are made to have finished: past the sweep's floor.
PAST_THE_FLOOR = orphans.FINISHED_FLOOR_SECONDS + 60
LABELS = {"app.kubernetes.io/managed-by": "squarepeg", "squarepeg.io/created-by": USER}


def labels(*, user: str = USER, keep: bool = False) -> dict[str, str]:
    run_id = str(uuid.uuid4())  # every run has its own, and the sweep relies on it
    found = {**LABELS, "squarepeg.io/created-by": user, "squarepeg.io/run-id": run_id}
    if keep:
        found["squarepeg.io/keep"] = "true"
    return found


def pod(name: str, *, image: str = "alpine", script: str = "true", **label_args: Any) -> Any:
    return pod_manifest(name, image=image, args=["sh", "-c", script],
                        labels=labels(**label_args))


def job(name: str, *, image: str = "alpine", script: str = "true") -> Any:
    template = pod(name, image=image, script=script)
    run = labels()  # the Job and its pod template carry the same, as squarepeg writes them
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": run},
        "spec": {
            "backoffLimit": 0,
            "template": {"metadata": {"labels": dict(run)}, "spec": template["spec"]},
        },
    }


def create(kubesim: Any, namespace: str, *objects: Any) -> None:
    stream = yaml.safe_dump_all(objects)
    done = kubesim.kubectl("create", "-n", namespace, "-f", "-", input=stream.encode())
    assert done.returncode == 0, done.stderr


def status_of(kubesim: Any, namespace: str, ref: str, path: str) -> str:
    done = kubesim.kubectl("get", ref, "-n", namespace, "-o", f"jsonpath={path}")
    return done.stdout.decode() if done.returncode == 0 else ""


def waiting_reason(kubesim: Any, namespace: str, ref: str) -> str:
    return status_of(kubesim, namespace, ref, "{.status.containerStatuses[0].state.waiting.reason}")


def job_pod(kubesim: Any, namespace: str, job_name: str) -> str:
    done = kubesim.kubectl("get", "pods", "-n", namespace, "-l", f"job-name={job_name}",
                           "-o", "name")
    return done.stdout.decode().strip()


def fast_sweep_config(tmp_path: Path, min_age: int = 1) -> str:
    path = tmp_path / f"sweep-{min_age}.yaml"
    path.write_text(f"orphan_sweep_min_age: {min_age}\n")
    return str(path)


def make_the_orphans(kubesim: Any, namespace: str) -> None:
    skip_where_the_kubelet_owns_pod_status(kubesim)
    create(
        kubesim, namespace,
        pod("finished-ok"),
        pod("finished-failed", script="exit 1"),
        pod("stuck-image", image="no-such-image-xyz:1"),
        pod("kept-finished", keep=True),
        pod("still-running", script="sleep 120"),
        pod("someone-elses", user="someone-else"),
        job("job-complete"),
        job("job-stuck", image="no-such-image-xyz:2"),
    )
    ns = namespace
    wait_until(lambda: status_of(kubesim, ns, "pod/finished-ok", "{.status.phase}")
               == "Succeeded", 30, "finished-ok")
    wait_until(lambda: status_of(kubesim, ns, "pod/finished-failed", "{.status.phase}")
               == "Failed", 30, "finished-failed")
    wait_until(lambda: waiting_reason(kubesim, ns, "pod/stuck-image") in
               ("ErrImagePull", "ImagePullBackOff"), 30, "stuck-image to be stuck")
    wait_until(lambda: status_of(kubesim, ns, "pod/still-running", "{.status.phase}")
               == "Running", 30, "still-running")
    wait_until(lambda: status_of(kubesim, ns, "pod/someone-elses", "{.status.phase}")
               == "Succeeded", 30, "someone-elses")
    wait_until(lambda: "Complete" in status_of(kubesim, ns, "job/job-complete",
               "{.status.conditions[*].type}"), 30, "job-complete")
    wait_until(lambda: (p := job_pod(kubesim, ns, "job-stuck")) and waiting_reason(
        kubesim, ns, p) in ("ErrImagePull", "ImagePullBackOff"), 30, "job-stuck's pod")
    for ref in ("pod/finished-ok", "pod/finished-failed", "pod/kept-finished",
                "pod/someone-elses", "job/job-complete"):
        age_the_finish(kubesim, ns, ref, PAST_THE_FLOOR)


@pytest.mark.smoke("sweep")
def test_sweep_deletes_both_categories_and_nothing_else(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    make_the_orphans(kubesim, namespace)
    job_pods = {job_pod(kubesim, namespace, j) for j in ("job-complete", "job-stuck")}
    young = squarepeg("sweep", "--dry-run", "--config", fast_sweep_config(tmp_path, 3600))
    assert young.code == 0, young.stderr
    assert not young.has_line("would delete"), young.lines  # all too young

    preview = wait_until(
        lambda: (p := squarepeg("sweep", "--dry-run", "--config", fast_sweep_config(tmp_path)))
        .stderr.count("would delete") == 5 and p,
        20, "every orphan to be old enough",
    )
    for ref, category in (
        ("pod/finished-ok", "finished"), ("pod/finished-failed", "finished"),
        ("pod/stuck-image", "stuck"), ("job/job-complete", "finished"),
        ("job/job-stuck", "stuck"),
    ):
        assert preview.has_line("would delete", ref, category), preview.lines
    assert len(names(kubesim, namespace, "pods")) == 8  # a dry run deletes nothing

    try:
        done = squarepeg("run", "--config", fast_sweep_config(tmp_path), "alpine", "true")
        assert done.code == 0, done.stderr
        assert done.has_line("orphan sweep", "deleted 5"), done.lines
        exempt = {"pod/kept-finished", "pod/still-running", "pod/someone-elses"}
        wait_until(lambda: set(names(kubesim, namespace)) == exempt, 30,
                   "only the exempt resources to remain")
        assert not any(p in done.stderr for p in job_pods)  # never deleted directly
    finally:
        for name in ("kept-finished", "still-running", "someone-elses"):
            # --grace-period: `sleep` as PID 1 ignores the SIGTERM (kubesim and a real node)
            kubesim.kubectl("delete", "pod", name, "-n", namespace, "--wait=false",
                            "--grace-period=1")


def test_300_orphans_cost_the_same_kubectl_calls_as_3(
    kubesim_factory: Any, tmp_path: Path
) -> None:
    # A node that takes 400 pods: the default one, like a real node, takes 110.
    cluster = kubesim_factory({"nodes": [{"name": "big", "pods": 400}]})
    squarepeg = Squarepeg(cluster, "default", tmp_path)
    calls = []
    for count in (3, 300):
        create(cluster, "default", *(pod(f"stuck-{count}-{i}", image="no-such-image-xyz:3")
                                     for i in range(count)))
        config = fast_sweep_config(tmp_path)
        wait_until(lambda c=count, cfg=config: squarepeg(  # type: ignore[misc]
            "sweep", "--dry-run", "--config", cfg).stderr.count("would delete") == c,
            60, f"{count} orphans stuck and old enough")
        env, log = counting_kubectl(tmp_path)
        log.write_text("")
        done = squarepeg("sweep", "--config", config, env=env)
        assert done.code == 0, done.stderr
        assert sum("deleted pod/" in line for line in done.lines) == count, done.lines
        # What reaches the cluster; the local `config view` may be answered from a cache.
        calls.append([c for c in log.read_text().splitlines() if "config view" not in c])
        wait_until(lambda: names(cluster, "default") == [], 30, f"{count} orphans gone")
    squarepeg.close()
    assert [len(c) for c in calls] == [2, 2], calls  # one list, one delete, either way


def test_at_age_0_a_pod_that_just_finished_waits_for_the_floor_and_sweep_says_so(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    skip_where_the_kubelet_owns_pod_status(kubesim)
    create(kubesim, namespace, pod("just-finished"))
    wait_until(lambda: status_of(kubesim, namespace, "pod/just-finished", "{.status.phase}")
               == "Succeeded", 30, "the orphan to finish")
    held = squarepeg("sweep", "--config", fast_sweep_config(tmp_path, 0))
    assert held.code == 0, held.stderr
    assert held.has_line("no orphaned resources old enough to sweep"), held.lines
    assert held.has_line(
        f"left 1 finished resource that finished less than {orphans.FINISHED_FLOOR_SECONDS:g}s "
        "ago, the sweep's floor whatever orphan_sweep_min_age (0s) says"), held.lines
    assert not held.has_line("younger than orphan_sweep_min_age"), held.lines
    assert names(kubesim, namespace) == ["pod/just-finished"]

    age_the_finish(kubesim, namespace, "pod/just-finished", PAST_THE_FLOOR)
    swept = squarepeg("sweep", "--config", fast_sweep_config(tmp_path, 0))
    assert swept.code == 0, swept.stderr
    assert swept.has_line("deleted pod/just-finished (finished: Succeeded 4m ago)"), swept.lines
    assert not swept.has_line("floor"), swept.lines
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the orphan to go")
