"""A lost node: the node controller's mark on a pod (podstate.lost_node), what a Node says
(nodeloss.describe_node), and the clock that ends the wait for completion after the bound
unless the node comes back (nodeloss.NodeClock); a drained node named."""

from __future__ import annotations

import io
from typing import Any

import pytest

from kubectl_squarepeg.cluster import podstate
from kubectl_squarepeg.run import nodeloss
from kubectl_squarepeg.terminal.console import Console

NODE = "localkube-node-2"


def pod(ready: dict[str, Any], containers_ready: str = "True",
        state: str = "running") -> dict[str, Any]:
    """A running pod on NODE with the given Ready condition (as the real API server had it
    in a run on localkube's kubelet node)."""
    states = {"running": {"startedAt": "2026-12-07T08:00:01Z"},
              "terminated": {"exitCode": 0, "reason": "Completed"}}
    return {
        "metadata": {"name": "p", "uid": "u-1"},
        "spec": {"nodeName": NODE},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "ContainersReady", "status": containers_ready},
                {"type": "Ready", **ready},
            ],
            "containerStatuses": [{"name": "main", "ready": True,
                                   "state": {state: states[state]}}],
        },
    }


# What MarkPodsNotReady leaves: Ready False without a reason, nothing else changed.
MARKED = {"status": "False", "lastTransitionTime": "2026-12-07T08:00:30Z"}
READY = {"status": "True"}


def test_the_node_controllers_mark_names_the_node() -> None:
    assert podstate.lost_node(pod(MARKED)) == NODE
    assert podstate.lost_node(pod(READY)) is None


@pytest.mark.parametrize("reason", ["ContainersNotReady", "ReadinessGatesNotReady",
                                    "PodCompleted"])
def test_the_kubelets_own_not_ready_is_not_a_lost_node(reason: str) -> None:
    assert podstate.lost_node(pod({"status": "False", "reason": reason})) is None


def test_containers_not_ready_or_ended_is_not_a_lost_node() -> None:
    assert podstate.lost_node(pod(MARKED, containers_ready="False")) is None
    assert podstate.lost_node(pod(MARKED, state="terminated")) is None
    deleting = pod(MARKED)
    deleting["metadata"]["deletionTimestamp"] = "2026-12-07T08:01:00Z"
    assert podstate.lost_node(deleting) is None
    unbound = pod(MARKED)
    del unbound["spec"]["nodeName"]
    assert podstate.lost_node(unbound) is None


def test_a_drained_pod_names_its_node() -> None:
    drained = pod({"status": "False"}, state="terminated")
    drained["metadata"]["deletionTimestamp"] = "2026-12-07T08:01:00Z"
    drained["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
         "message": "Eviction API: evicting"})
    assert podstate.outcome(drained).message == (
        f"pod p was evicted through the Eviction API (node {NODE}) before its container "
        "finished: Eviction API: evicting")


def test_a_silent_node_as_its_object_says() -> None:
    node = {
        "spec": {"taints": [
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
            {"key": "example.com/mine", "effect": "NoSchedule"}]},
        "status": {"conditions": [
            {"type": "MemoryPressure", "status": "Unknown"},
            {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
             "message": "Kubelet stopped posting node status."}]},
    }
    assert nodeloss.describe_node(node) == (
        "Ready Unknown (NodeStatusUnknown: Kubelet stopped posting node status.), "
        "tainted node.kubernetes.io/unreachable")
    assert nodeloss.describe_node({}) is None


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_run_ends_once_the_node_stayed_lost_for_the_bound() -> None:
    clock, shown = Clock(), io.StringIO()
    asked: list[str] = []

    def facts(node: str) -> str:
        asked.append(node)
        return "Ready Unknown"

    watch = nodeloss.NodeClock(Console(shown), facts, bound=30, clock=clock)
    watch.see(pod(READY))
    watch.check()
    watch.see(pod(MARKED))
    assert f"node {NODE} of pod p stopped answering" in shown.getvalue()
    clock.now += 29.9
    watch.see(pod(MARKED))  # the same mark again starts no new clock
    watch.check()
    clock.now += 0.2
    with pytest.raises(nodeloss.NodeLost) as raised:
        watch.check()
    assert raised.value.node == NODE and raised.value.exit_code == 125
    assert asked == [NODE]
    assert raised.value.message == (
        f"node {NODE} of pod p stopped answering and did not come back within 30s "
        "(Ready Unknown): container main was last seen running, running since "
        "2026-12-07T08:00:01Z; its exit code and any output not shown are unknown")


def test_a_node_back_within_the_bound_lets_the_run_go_on() -> None:
    clock, shown = Clock(), io.StringIO()
    watch = nodeloss.NodeClock(Console(shown), None, bound=30, clock=clock)
    watch.see(pod(MARKED))
    clock.now += 20
    watch.see(pod(READY))
    assert f"node {NODE} answers again; the run goes on" in shown.getvalue()
    clock.now += 60
    watch.check()  # no longer lost
    watch.see(pod(MARKED))  # lost again: a new bound from now
    clock.now += 29
    watch.check()
    clock.now += 1
    with pytest.raises(nodeloss.NodeLost):
        watch.check()
