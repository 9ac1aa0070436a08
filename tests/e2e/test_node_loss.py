"""A run's node lost, back in time, drained; capacity that arrives (issue 34), on the real
nodes of a 2-node localkube (tests/e2e/conftest.py's `several_nodes`, node grace 8 s).

The tests share the one cluster, in order; each leaves both nodes schedulable but the last,
which stops node 2 for good (the cluster's stop takes it down with the rest). Each run is
pinned to node 2 by its hostname label, so that node 1 keeps the cluster's own pods. On
kubesim they are skipped: it has one simulated node and no node controller.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Localkube
from tests.e2e import background
from tests.e2e.conftest import Squarepeg, names, several_nodes, wait_until

GRACE = 8.0  # the node controller's grace here (node-monitor-grace-period)
BOUND = 30.0  # squarepeg's own (run/nodeloss.py BOUND_SECONDS)
# NotReady comes at most one monitor period (GRACE/5) after the grace; the rest is this
# busy machine's slack (kubectl starts, the watch's event, the force delete).
WITHIN = GRACE + GRACE / 5 + BOUND + 40.0
NODE = "localkube-node-2"
ON_NODE = ("--node-selector", f"kubernetes.io/hostname={NODE}")


@pytest.fixture(scope="module")
def kubesim(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Localkube]:
    yield from several_nodes(request, tmp_path_factory, nodes=2, node_grace=GRACE)





def test_a_drain_of_the_runs_node_ends_it_naming_the_eviction_and_the_node(
        kubesim: Localkube, squarepeg: Squarepeg, namespace: str, tmp_path: Path) -> None:
    process, out, err = background.start(squarepeg, tmp_path, "--name", "drained", "--stop-timeout",
                               "1", *ON_NODE, "busybox", "sh", "-c", "echo up; exec sleep 600")
    try:
        wait_until(lambda: out.read_bytes() == b"up\n", 120, "the container's first line")
        kubesim.ctl("drain", NODE)
        done = background.finish(squarepeg, process, out, err, 120)
    finally:
        kubesim.kubectl("uncordon", NODE, check=True)
    assert done.code == 125, done.stderr
    assert done.has_line("error: pod drained was evicted through the Eviction API "
                         f"(node {NODE}) before its container finished"), done.stderr
    assert done.stdout == b"up\n"


def test_a_run_waits_for_capacity_and_starts_once_it_arrives(
        kubesim: Localkube, squarepeg: Squarepeg, namespace: str, tmp_path: Path) -> None:
    # A cordoned node made schedulable again is capacity arriving, as an autoscaler's new
    # node is (test_node_loss_default_grace.py waits for a node ctl add-node brings).
    kubesim.kubectl("cordon", NODE, check=True)
    try:
        process, out, err = background.start(squarepeg, tmp_path, "--name", "waits", "--timeout",
                                   "180", *ON_NODE, "busybox", "echo", "arrived")
        wait_until(lambda: "FailedScheduling" in err.read_text(errors="replace"), 90,
                   "the FailedScheduling reason on stderr")
    finally:
        kubesim.kubectl("uncordon", NODE, check=True)
    done = background.finish(squarepeg, process, out, err, 120)
    assert (done.code, done.stdout) == (0, b"arrived\n"), done.stderr
    shown = [line for line in done.lines if "FailedScheduling" in line]
    assert len(shown) == 1 and "unschedulable" in shown[0], done.stderr


def test_a_node_back_within_the_bound_loses_nothing(
        kubesim: Localkube, squarepeg: Squarepeg, namespace: str, tmp_path: Path) -> None:
    lines = 45
    script = f"i=1; while [ $i -le {lines} ]; do echo line $i; i=$((i+1)); sleep 1; done"
    process, out, err = background.start(squarepeg, tmp_path, "--name", "back", *ON_NODE, "busybox",
                               "sh", "-c", script)
    wait_until(lambda: out.read_bytes().startswith(b"line 1\n"), 120, "the first line")
    # The kubelet down longer than the grace (the node marked lost) and back well within
    # the bound; its containers run on under their shims meanwhile.
    kubesim.ctl("restart-kubelet", "--node", NODE, "--down", str(GRACE * 2))
    done = background.finish(squarepeg, process, out, err, 180)
    expected = b"".join(b"line %d\n" % i for i in range(1, lines + 1))
    assert (done.code, done.stdout) == (0, expected), done.stderr
    assert done.has_line(f"node {NODE} of pod back stopped answering"), done.stderr
    assert done.has_line(f"node {NODE} answers again; the run goes on"), done.stderr


def test_a_run_whose_node_stops_exits_125_naming_the_node_within_the_bound(
        kubesim: Localkube, squarepeg: Squarepeg, namespace: str, tmp_path: Path) -> None:
    # A Pod, a Job and a kept Pod on the node at once: one stop for all three (the Job's pod
    # has a name of its controller's making, and its own force delete before the Job's).
    runs = background.start_on_node(squarepeg, tmp_path, NODE, (
        ("lost", "pod"), ("lostjob", "job"), ("kept", "pod", "--keep")))
    began = time.monotonic()
    kubesim.ctl("stop-node", NODE)  # for good: the last test of the module
    ended = {name: background.finish(squarepeg, *run, WITHIN + 60) for name, run in runs.items()}
    took = time.monotonic() - began
    for name, done in ended.items():
        background.assert_ended_by_the_lost_node(name, done, NODE, BOUND, forced=name != "kept")
        assert done.has_line("the pod is kept as it was") == (name == "kept"), done.stderr
    assert took < WITHIN, f"ended {took:.1f}s after stop-node"
    # Not left Terminating, as a graceful delete would leave them while the node is off.
    wait_until(lambda: not [ref for ref in names(kubesim, namespace) if "/lost" in ref], 30,
               "the runs' pods and Job to be gone")
    assert "pod/kept" in names(kubesim, namespace)  # --keep: left as it was, for the user
    kubesim.kubectl("delete", "pod", "kept", "-n", namespace, "--grace-period=0", "--force",
                    check=True)
    print(f"node lost: the three runs exit 125 {took:.1f}s after stop-node (grace {GRACE:g}s, "
          f"bound {BOUND:g}s)")
