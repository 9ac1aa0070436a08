"""Runs against a cluster with policy: slow images, quotas, admission rules, limited RBAC.

Each test starts a simulator of its own with SCENARIO (kubesim_factory), so the rules of one
test never leak into another.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Squarepeg, counting_kubectl, names, wait_until, watched_pod
from tests.helpers import pod_manifest, processes

SCENARIO: dict[str, Any] = {
    "images": {"slowimage": {"entrypoint": [], "cmd": ["sh"], "pull_seconds": 3},
               "glacial": {"entrypoint": [], "cmd": ["sh"], "pull_seconds": 600}},
    "namespaces": ["sidecars", "quota-ns"],
    "quotas": [{"namespace": "quota-ns", "name": "compute", "hard": {"pods": "0"}}],
    "admission": [
        {"type": "deny", "name": "policy.example.com", "image_pattern": "*:latest",
         "message": "images must be pinned"},
        {"type": "add-label", "name": "labeler.example.com", "labels": {"team": "blue"}},
        {"type": "add-sidecar", "name": "sidecar.example.com", "namespaces": ["sidecars"],
         # It stops on SIGTERM: as PID 1, a bare `sleep` would ignore it (on a node and in
         # kubesim) and keep the deleted pod for its whole grace period.
         "container": {"name": "proxy", "image": "busybox",
                       "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]}},
    ],
    "tokens": {
        "limited-token": {
            "user": "limited",
            "rules": [
                {"verbs": ["create", "get", "watch", "delete"], "resources": ["pods", "pods/log"]},
                {"verbs": ["list"], "resources": ["events"]},
            ],
        }
    },
}


@pytest.fixture
def cluster(kubesim_factory: Any) -> Any:
    return kubesim_factory(SCENARIO)


@pytest.fixture
def run_in(cluster: Any, tmp_path: Path) -> Iterator[Any]:
    """`run_in(NAMESPACE)`: a Squarepeg bound to that namespace of the scenario's cluster;
    every namespace used must be empty at the end."""
    used: dict[str, Squarepeg] = {}

    def bind(namespace: str) -> Squarepeg:
        if namespace not in used:
            home = tmp_path / namespace
            home.mkdir()
            used[namespace] = Squarepeg(cluster, namespace, home)
        return used[namespace]

    yield bind
    for namespace, runner in used.items():
        runner.close()
        wait_until(lambda ns=namespace: names(cluster, ns) == [], 20,  # type: ignore[misc]
                   f"namespace {namespace} to be empty")


def test_a_slow_pull_that_finishes_inside_the_timeout(run_in: Any) -> None:
    began = time.monotonic()
    done = run_in("default")("run", "--timeout", "30", "slowimage", "sh", "-c", "echo pulled")
    assert done.code == 0, done.stderr
    assert done.stdout == b"pulled\n"
    assert time.monotonic() - began >= 3  # it did wait for the pull


def test_a_sidecar_does_not_steal_the_exit_code(run_in: Any) -> None:
    done = run_in("sidecars")("run", "alpine", "sh", "-c", "echo main; exit 3")
    assert done.code == 3, done.stderr
    assert done.stdout == b"main\n"


def test_a_quota_rejection_is_125_with_the_reason(run_in: Any) -> None:
    done = run_in("quota-ns")("run", "alpine", "true")
    assert done.code == 125
    assert done.has_line("error:", "exceeded quota"), done.lines
    assert done.has_line("resourcequota"), done.lines  # the hint says where to look
    assert done.stdout == b""


def test_a_webhook_denial_is_125_with_the_reason(run_in: Any) -> None:
    done = run_in("default")("run", "alpine:latest", "true")
    assert done.code == 125
    assert done.has_line(
        "error:", 'admission webhook "policy.example.com" denied the request: '
        "images must be pinned"
    ), done.lines


def test_a_dry_run_server_denial_does_not_suggest_dry_run_server(run_in: Any) -> None:
    done = run_in("default")("run", "--dry-run-server", "alpine:latest", "true")
    assert done.code == 125
    assert done.has_line("error:", "images must be pinned"), done.lines
    assert done.has_line("admission webhook", "refused the pod"), done.lines
    assert "--dry-run-server" not in done.stderr, done.stderr  # it is what the user just ran
    assert done.stdout == b""
    plain = run_in("default")("run", "alpine:latest", "true")  # the hint a real run gets
    assert plain.code == 125 and "--dry-run-server" in plain.stderr, plain.stderr


def kubectl_watches_of(pods: list[str]) -> list[str]:
    """Command lines of live kubectl processes watching any of these pods."""
    found = []
    for _, (cmdline,) in processes("cmdline"):
        argv = cmdline.decode(errors="replace").replace("\0", " ")
        if watched_pod(argv) in pods:
            found.append(argv)
    return found


def test_rejections_leave_no_watch_running(run_in: Any, cluster: Any, tmp_path: Path) -> None:
    # The watch starts while the create is in flight; the create is then refused.
    env, log = counting_kubectl(tmp_path)
    quota = run_in("quota-ns")("run", "alpine", "true", env=env)
    denied = run_in("default")("run", "alpine:latest", "true", env=env)
    assert (quota.code, denied.code) == (125, 125)
    assert quota.has_line("error:", "exceeded quota"), quota.lines
    assert denied.has_line("error:", "denied the request: images must be pinned"), denied.lines
    watches = [watched_pod(line) for line in log.read_text().splitlines()]
    pods = [pod for pod in watches if pod is not None]
    assert len(pods) == 2, log.read_text()  # each run started its watch
    assert kubectl_watches_of(pods) == []
    assert names(cluster, "quota-ns") == names(cluster, "default") == []


def test_dry_run_server_shows_what_the_apiserver_added(run_in: Any, cluster: Any) -> None:
    done = run_in("sidecars")("run", "--dry-run-server", "--name", "preview", "alpine", "true")
    assert done.code == 0, done.stderr
    pod = yaml.safe_load(done.stdout)
    assert pod["kind"] == "Pod"
    assert pod["metadata"]["namespace"] == "sidecars"
    assert pod["metadata"]["labels"]["team"] == "blue"  # the mutating rule's label
    assert [c["name"] for c in pod["spec"]["containers"]] == ["main", "proxy"]
    assert pod["spec"]["dnsPolicy"] == "ClusterFirst"  # defaulted by the apiserver
    assert done.has_line("kubesim", "sidecars")  # the banner, on stderr
    assert names(cluster, "sidecars") == []  # nothing was created


@pytest.mark.parametrize(
    ("namespace", "image", "reason"),
    [("quota-ns", "alpine", "exceeded quota"),
     ("default", "alpine:latest", "denied the request: images must be pinned")],
)
def test_dry_run_server_rejections_are_125(
    run_in: Any, cluster: Any, namespace: str, image: str, reason: str
) -> None:
    done = run_in(namespace)("run", "--dry-run-server", image, "true")
    assert done.code == 125
    assert done.has_line("error:", reason), done.lines
    assert done.stdout == b""
    assert names(cluster, namespace) == []


def limited_kubeconfig(cluster: Any, tmp_path: Path) -> str:
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    for user in config["users"]:
        user["user"] = {"token": "limited-token"}
    path = tmp_path / "limited.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_an_rbac_denied_sweep_does_not_change_the_exit_code(
    run_in: Any, tmp_path: Path
) -> None:
    kubeconfig = limited_kubeconfig(run_in("default").kubesim, tmp_path)
    done = run_in("default")("run", "--kubeconfig", kubeconfig, "alpine", "sh", "-c", "exit 5")
    assert done.code == 5, done.stderr
    assert done.has_line("warning:", "orphan sweep", "forbidden"), done.lines


def test_a_slow_pulling_pod_is_never_swept(run_in: Any, cluster: Any, tmp_path: Path) -> None:
    labels = {"app.kubernetes.io/managed-by": "squarepeg", "squarepeg.io/created-by": "tester"}
    pod = pod_manifest("pulling", image="glacial", args=["true"], labels=labels)
    created_at = time.monotonic()
    created = cluster.kubectl("create", "-n", "default", "-f", "-",
                              input=yaml.safe_dump(pod).encode())
    assert created.returncode == 0, created.stderr
    config = tmp_path / "fast.yaml"
    config.write_text("orphan_sweep_min_age: 1\n")
    try:
        wait_until(lambda: cluster.kubectl(
            "get", "pod", "pulling", "-n", "default", "-o",
            "jsonpath={.status.containerStatuses[0].state.waiting.reason}",
        ).stdout == b"ContainerCreating", 20, "the pull to begin")
        # Older than the minimum age, and still never a candidate.
        wait_until(lambda: time.monotonic() - created_at > 1.5, 5, "the pod to age")
        check = run_in("default")("sweep", "--dry-run", "--config", str(config))
        assert check.code == 0, check.stderr
        assert not check.has_line("would delete"), check.lines
        assert names(cluster, "default") == ["pod/pulling"]
    finally:
        cluster.kubectl("delete", "pod", "pulling", "-n", "default", "--wait=false")
