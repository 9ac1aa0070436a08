"""Helpers for the cluster half's own tests (test_cluster*.py): a Store, a LogBook and a
started Cluster without any HTTP, objects shaped as the API server stores them, and waits
that poll a condition with a deadline.

The fixtures `sim` (a started cluster) and `sim_with` (a factory taking scenario keys) are
defined here and offered to every test in tests/kubesim by its conftest.py. Both stop their
clusters after the test and fail it if any process group the kubelet started is still alive.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests import helpers
from tests.kubesim.cluster import Cluster
from tests.kubesim.logbook import LogBook
from tests.kubesim.process import scan_processes
from tests.kubesim.scenario import Scenario, scenario_from_dict
from tests.kubesim.store import Obj, Store

T = Any


def wait_until(condition: Callable[[], T], seconds: float, what: str) -> T:
    """Poll `condition` (every 10 ms) until it returns something truthy; fail after
    `seconds`."""
    return helpers.wait_until(condition, seconds, what, interval=0.01)


def live_groups(pgids: set[int]) -> set[int]:
    """The process groups among `pgids` that still have a (non-zombie) member."""
    return {pgrp for pgrp, state, _ in scan_processes() if state != "Z" and pgrp in pgids}


def container(name: str = "main", image: str = "alpine", **fields: Any) -> Obj:
    """A container as the API server defaults it."""
    return {"name": name, "image": image, "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent", **fields}


def pod_object(name: str, containers: list[Obj], namespace: str = "default",
               labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    """A pod as the API server stores it after defaulting."""
    body: Obj = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 30,
                 "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
                 "containers": containers, **spec}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": body, "status": {"phase": "Pending", "qosClass": "BestEffort"}}


class Sim:
    """A started cluster over an in-memory Store, and ways to look at it."""

    def __init__(self, scenario: Scenario):
        self.store = Store()
        self.logbook = LogBook()
        self.cluster = Cluster(self.store, self.logbook, scenario)
        self.cluster.start()

    # -- objects ---------------------------------------------------------------------------

    def run(self, name: str, *argv: str, image: str = "alpine", namespace: str = "default",
            container_fields: dict[str, Any] | None = None, **spec: Any) -> Obj:
        """Create a one-container pod running `argv` (as `command`)."""
        fields = dict(container_fields or {})
        if argv:
            fields["command"] = list(argv)
        return self.create_pod(pod_object(name, [container(image=image, **fields)],
                                          namespace=namespace, **spec))

    def create_pod(self, pod: Obj) -> Obj:
        return self.store.create("pods", pod)

    def create_job(self, name: str, containers: list[Obj], namespace: str = "default",
                   **spec: Any) -> Obj:
        uid_label = f"uid-of-{name}"
        labels = {"batch.kubernetes.io/controller-uid": uid_label,
                  "batch.kubernetes.io/job-name": name, "controller-uid": uid_label,
                  "job-name": name}
        body = {"backoffLimit": 0, "completions": 1, "parallelism": 1,
                "completionMode": "NonIndexed", "suspend": False,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid_label}},
                "template": {"metadata": {"labels": labels},
                             "spec": {"restartPolicy": "Never",
                                      "terminationGracePeriodSeconds": 30,
                                      "containers": containers}}, **spec}
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": namespace}, "spec": body, "status": {}}
        return self.store.create("jobs", copy.deepcopy(job))

    def pod(self, name: str, namespace: str = "default") -> Obj:
        pod = self.store.get("pods", namespace, name)
        assert pod is not None, f"pod {namespace}/{name} does not exist"
        return pod

    def phase(self, name: str, namespace: str = "default") -> str | None:
        pod = self.store.get_raw("pods", namespace, name)
        return None if pod is None else (pod.get("status") or {}).get("phase")

    def container_status(self, name: str, container_name: str = "main",
                         namespace: str = "default", init: bool = False) -> Obj:
        pod = self.store.get_raw("pods", namespace, name) or {}
        field = "initContainerStatuses" if init else "containerStatuses"
        for status in (pod.get("status") or {}).get(field) or []:
            if status.get("name") == container_name:
                return dict(status)
        return {}

    def state(self, name: str, container_name: str = "main", **kw: Any) -> tuple[str, Obj]:
        """("running" | "terminated" | "waiting" | "", details) of a container."""
        state = self.container_status(name, container_name, **kw).get("state") or {}
        for kind in ("terminated", "running", "waiting"):
            if kind in state:
                return kind, state[kind]
        return "", {}

    def wait_phase(self, name: str, *phases: str, seconds: float = 10.0,
                   namespace: str = "default") -> str:
        return str(wait_until(lambda: self.phase(name, namespace) in phases and self.phase(
            name, namespace), seconds, f"pod {name} in phase {phases} (is {self.phase(name)})"))

    def wait_terminated(self, name: str, container_name: str = "main",
                        seconds: float = 10.0) -> Obj:
        return dict(wait_until(
            lambda: self.state(name, container_name)[0] == "terminated"
            and self.state(name, container_name)[1], seconds,
            f"container {container_name} of {name} terminated"))

    def wait_waiting(self, name: str, reason: str, container_name: str = "main",
                     seconds: float = 10.0) -> Obj:
        def check() -> Obj | None:
            kind, details = self.state(name, container_name)
            return details if kind == "waiting" and details.get("reason") == reason else None
        return dict(wait_until(check, seconds, f"{name}/{container_name} waiting {reason} "
                                               f"(is {self.state(name, container_name)})"))

    def wait_gone(self, resource: str, name: str, seconds: float = 10.0,
                  namespace: str = "default") -> None:
        wait_until(lambda: self.store.get_raw(resource, namespace, name) is None, seconds,
                   f"{resource} {name} deleted")

    def events(self, name: str, namespace: str = "default") -> list[Obj]:
        items, _ = self.store.list("events", namespace,
                                   field_selector=f"involvedObject.name={name}")
        return items

    def reasons(self, name: str, namespace: str = "default") -> list[str]:
        return [e["reason"] for e in self.events(name, namespace)]

    def logs(self, name: str, container_name: str = "main", namespace: str = "default",
             **kw: Any) -> bytes:
        return b"".join(self.logbook.read(namespace, name, container_name, **kw))

    def containers_done(self, name: str, namespace: str = "default") -> bool:
        """Whether every container thread of the pod's kubelet worker has finished."""
        worker = self.cluster.kubelet._workers.get((namespace, name))
        return worker is not None and bool(worker.runners) and all(
            runner.done.is_set() for runner in worker.runners)

    def pods_of_job(self, job: str, namespace: str = "default") -> list[Obj]:
        items, _ = self.store.list("pods", namespace, label_selector=f"job-name={job}")
        return items

    def job(self, name: str, namespace: str = "default") -> Obj | None:
        return self.store.get("jobs", namespace, name)

    # -- the end ---------------------------------------------------------------------------

    def started_groups(self) -> set[int]:
        return set(self.cluster.kubelet.registry.started)

    def stop(self) -> None:
        started = self.started_groups()
        self.cluster.stop()
        left = wait_until(lambda: not live_groups(started), 5.0, "no container process left") \
            if started else True
        assert left


def make_sim(options: dict[str, Any] | None = None, **scenario: Any) -> Sim:
    data = dict(scenario)
    data["options"] = {"crash_backoff_seconds": 0.3, "crash_backoff_max_seconds": 1.0,
                       "image_pull_backoff_seconds": 0.5, "err_image_pull_seconds": 0.2,
                       "config_retry_seconds": 0.3, "scheduler_retry_seconds": 1.0,
                       **(options or {})}
    return Sim(scenario_from_dict(data))


@pytest.fixture(name="sim")
def sim_fixture() -> Iterator[Sim]:
    """A started cluster with the default scenario (and short back-offs)."""
    simulator = make_sim()
    try:
        yield simulator
    finally:
        simulator.stop()


@pytest.fixture(name="sim_with")
def sim_with_fixture() -> Iterator[Callable[..., Sim]]:
    """A factory of started clusters with a scenario of one's own: sim_with(nodes=[...])."""
    made: list[Sim] = []

    def factory(**scenario: Any) -> Sim:
        made.append(make_sim(**scenario))
        return made[-1]

    try:
        yield factory
    finally:
        for simulator in made:
            simulator.stop()
