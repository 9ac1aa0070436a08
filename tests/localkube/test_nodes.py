"""Several kubelet nodes (`scripts/localkube serve --nodes 2`, issue 34's test bed): both
Ready, each in network and mount namespaces of its own, a pod on each (its logs read, through
the API server and the node's own /logs/), pods that reach each other across the fabric, a
node that loses power (`ctl stop-node`: NotReady within the short grace) and boots again
(`ctl start-node`), a drain through the Eviction API, and a node added (`ctl add-node`);
then `kubectl squarepeg run --node-selector`, `--toleration`, `--platform` and `--gpus`
placing their pod where asked (a label, a taint, the nodes' own os/arch labels, a fake
`nvidia.com/gpu` advertised by a status patch).

One localkube of the module's own, started with `--node-grace` GRACE (the release's 50 s
would make the stop test a minute long; the default is tried by hand, see
tests/localkube/README.md). The tests share it in order, each leaving every node running
and schedulable. Runs with `--cluster localkube` (tests/conftest.py skips tests/localkube
otherwise), only on the kubelet node.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Localkube, localkube_default_node
from tests.helpers import pod_manifest, wait_until
from tests.kubesim.launcher import descendants
from tests.localkube.commands import ip_json, squarepeg

GRACE = 8  # seconds: the controller manager's node-monitor-grace-period here
# A stopped node is NotReady once the grace has passed since its last lease renewal, seen
# at the controller's next check (every GRACE/5 s); the rest is this busy machine's slack.
NOT_READY_SECONDS = GRACE + 30
CTL_SECONDS = 330.0  # add-node pushes the images, waits for Ready and runs a canary


class TwoNodes(Localkube):
    """A localkube with two kubelet nodes and a short node grace."""

    ready_seconds = 300.0
    ctl_seconds = CTL_SECONDS

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, node="kubelet")

    def serve_argv(self) -> list[str]:
        return ["--node", "kubelet", "--nodes", "2", "--node-grace", str(GRACE)]

    def answer(self, *args: str) -> dict[str, Any]:
        return json.loads(self.ctl(*args))  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def kubesim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoNodes]:
    """The name the shared fixtures (`namespace`) ask for."""
    if localkube_default_node() != "kubelet":
        pytest.skip("several nodes are kubelet nodes (LOCALKUBE_NODE=agent)")
    cluster = TwoNodes(tmp_path_factory.mktemp("localkube-nodes"))
    launcher = cluster.process.pid
    try:
        yield cluster
    finally:
        cluster.stop()  # fails if a process started under it outlived it
    links = {link["ifname"] for link in ip_json("link")}
    assert not [name for name in links if name.startswith(f"lkh{launcher}")], links
    assert not list(Path("/sys/fs/cgroup").glob(f"*/localkube-{launcher}*"))


def _nodes(cluster: TwoNodes) -> dict[str, dict[str, Any]]:
    items = json.loads(cluster.kubectl("get", "nodes", "-o", "json", check=True).stdout)
    return {node["metadata"]["name"]: node for node in items["items"]}


def _ready(node: dict[str, Any]) -> str:
    conditions = {c["type"]: c["status"] for c in node["status"].get("conditions") or []}
    return str(conditions.get("Ready"))


def _node_ready(cluster: TwoNodes, name: str) -> str:
    done = cluster.kubectl("get", "node", name, "-o",
                           "jsonpath={.status.conditions[?(@.type=='Ready')].status}")
    return done.stdout.decode()


def _pod(cluster: TwoNodes, namespace: str, name: str, node: str, script: str,
         grace: int = 30) -> None:
    """A busybox pod on `node` (a nodeSelector on its hostname: the scheduler places it)."""
    manifest = pod_manifest(name, ["sh", "-c", script], image="busybox", grace=grace,
                            nodeSelector={"kubernetes.io/hostname": node})
    done = cluster.kubectl("apply", "-n", namespace, "-f", "-",
                           input=json.dumps(manifest).encode())
    assert done.returncode == 0, done.stderr


def _pod_field(cluster: TwoNodes, namespace: str, name: str, path: str) -> str:
    done = cluster.kubectl("get", "pod", name, "-n", namespace, "-o", f"jsonpath={path}")
    return done.stdout.decode()


def _wait_phase(cluster: TwoNodes, namespace: str, name: str, phases: tuple[str, ...],
                seconds: float = 120) -> str:
    return wait_until(lambda: (phase := _pod_field(cluster, namespace, name,
                                                   "{.status.phase}")) in phases and phase,
                      seconds, f"pod {name} to be {' or '.join(phases)}", interval=0.5)


def _delete(cluster: TwoNodes, namespace: str, *names: str, force: bool = False) -> None:
    extra = ["--grace-period=0", "--force"] if force else []
    cluster.kubectl("delete", "pod", *names, "-n", namespace, "--wait=false", *extra)


def _kubelets(cluster: TwoNodes) -> dict[int, str]:
    """The pid of each kubelet under the launcher, by the node's state directory's name."""
    found = {}
    for pid, _ in descendants(cluster.process.pid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"/kubelet"):
            config = next(a for a in argv if a.startswith(b"--config="))
            found[pid] = Path(config.decode()).parent.name
    return {pid: name for pid, name in found.items()}


def test_two_nodes_are_ready_each_in_namespaces_of_its_own(kubesim: TwoNodes) -> None:
    nodes = _nodes(kubesim)
    assert set(nodes) == {"localkube-node-1", "localkube-node-2"}
    assert all(_ready(node) == "True" for node in nodes.values()), nodes
    facts = {node["name"]: node for node in kubesim.answer("nodes")["nodes"]}
    assert {facts[name]["state"] for name in nodes} == {"running"}
    internal = {name: [a["address"] for a in node["status"]["addresses"]
                       if a["type"] == "InternalIP"] for name, node in nodes.items()}
    assert [internal[name] for name in sorted(nodes)] == [
        [facts[name]["address"]] for name in sorted(nodes)]
    assert len({facts[name]["podCIDR"] for name in nodes}) == 2
    assert len({facts[name]["stateDirectory"] for name in nodes}) == 2
    # Each kubelet in network and mount namespaces of its own, neither the machine's.
    kubelets = _kubelets(kubesim)
    assert sorted(kubelets.values()) == ["node", "node-2"]
    for kind in ("net", "mnt"):
        spaces = {os.readlink(f"/proc/{pid}/ns/{kind}") for pid in kubelets}
        assert len(spaces) == 2 and os.readlink(f"/proc/self/ns/{kind}") not in spaces
    links = {link["ifname"] for link in ip_json("link")}
    assert {facts[name]["hostLink"] for name in nodes} <= links


def test_a_pod_on_each_node_runs_and_its_logs_are_read(kubesim: TwoNodes,
                                                       namespace: str) -> None:
    names = {"localkube-node-1": "on-one", "localkube-node-2": "on-two"}
    for node, pod in names.items():
        _pod(kubesim, namespace, pod, node, f"echo hello from {pod}")
    for node, pod in names.items():
        assert _wait_phase(kubesim, namespace, pod, ("Succeeded", "Failed")) == "Succeeded"
        assert _pod_field(kubesim, namespace, pod, "{.spec.nodeName}") == node
        logs = kubesim.kubectl("logs", pod, "-n", namespace, check=True)
        assert logs.stdout == f"hello from {pod}\n".encode()
        # The node's own /logs/ (nodes/proxy) lists its pods' logs and only its own.
        listing = kubesim.kubectl("get", "--raw", f"/api/v1/nodes/{node}/proxy/logs/pods/",
                                  check=True).stdout.decode()
        others = [p for p in names.values() if p != pod]
        assert f"{namespace}_{pod}_" in listing, listing
        assert not any(f"{namespace}_{other}_" in listing for other in others), listing
    _delete(kubesim, namespace, *names.values())


def test_pods_on_two_nodes_reach_each_other_and_exec_reaches_both(kubesim: TwoNodes,
                                                                  namespace: str) -> None:
    _pod(kubesim, namespace, "server", "localkube-node-2",
         "mkdir /tmp/w && echo across > /tmp/w/x && exec httpd -f -p 8080 -h /tmp/w", grace=1)
    _pod(kubesim, namespace, "idle", "localkube-node-1", "exec sleep 600", grace=1)
    try:
        for pod in ("server", "idle"):
            _wait_phase(kubesim, namespace, pod, ("Running",))
        address = _pod_field(kubesim, namespace, "server", "{.status.podIP}")
        for pod, node in (("server", "localkube-node-2"), ("idle", "localkube-node-1")):
            done = kubesim.kubectl("exec", pod, "-n", namespace, "--", "hostname")
            assert (done.returncode, done.stdout) == (0, f"{pod}\n".encode()), (node, done)
        # From node 1's pod to node 2's, through the fabric (busybox's nc: this static
        # busybox's wget dies of SIGSEGV, 139, even on 127.0.0.1).
        request = f"printf 'GET /x HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {address} 8080"
        fetched = wait_until(lambda: (done := kubesim.kubectl(
            "exec", "idle", "-n", namespace, "--", "sh", "-c", request)).returncode == 0
            and b"200 OK" in done.stdout and done, 60,
            "node 1's pod to fetch from node 2's", interval=1)
        assert fetched.stdout.endswith(b"\r\n\r\nacross\n"), fetched.stdout
    finally:
        _delete(kubesim, namespace, "server", "idle")


def test_a_stopped_node_is_not_ready_within_the_grace_and_boots_again(
        kubesim: TwoNodes, namespace: str) -> None:
    node = "localkube-node-2"
    _pod(kubesim, namespace, "lost", node, "echo up; exec sleep 600", grace=1)
    _wait_phase(kubesim, namespace, "lost", ("Running",))
    before = set(_kubelets(kubesim).values())
    began = time.monotonic()
    answer = kubesim.answer("stop-node", node)
    assert answer["stopped"] == node
    assert _node_ready(kubesim, node) == "True"  # nothing told the API
    assert set(_kubelets(kubesim).values()) == before - {"node-2"}  # killed at once
    facts = {n["name"]: n for n in kubesim.answer("nodes")["nodes"]}
    assert facts[node]["state"] == "stopped" and "kubelet" not in facts[node]["memoryKiB"]
    # Nothing told the API: the node is Ready until the controller misses its lease.
    wait_until(lambda: _node_ready(kubesim, node) not in ("True", ""), NOT_READY_SECONDS,
               f"{node} to be NotReady", interval=0.5)
    lost_in = time.monotonic() - began
    assert _node_ready(kubesim, "localkube-node-1") == "True"
    # The pod is still bound there, as on a real cluster (tolerations of 300 s).
    assert _pod_field(kubesim, namespace, "lost", "{.spec.nodeName}") == node
    refused = kubesim.ctl_run("stop-node", node, timeout=60)
    assert refused.returncode == 1 and b"is stopped" in refused.stderr, refused
    assert kubesim.answer("start-node", node)["started"] == node
    wait_until(lambda: _node_ready(kubesim, node) == "True", 120, f"{node} Ready again",
               interval=0.5)
    # Its pod's container died with the power: the kubelet back says so, not Running.
    _wait_phase(kubesim, namespace, "lost", ("Failed", "Succeeded"), 120)
    _pod(kubesim, namespace, "after", node, "echo back")
    assert _wait_phase(kubesim, namespace, "after", ("Succeeded", "Failed")) == "Succeeded"
    assert kubesim.kubectl("logs", "after", "-n", namespace, check=True).stdout == b"back\n"
    _delete(kubesim, namespace, "lost", "after")
    print(f"NotReady {lost_in:.1f}s after stop-node (grace {GRACE}s)")


def test_a_drain_cordons_and_evicts_through_the_eviction_api(kubesim: TwoNodes,
                                                             namespace: str) -> None:
    node = "localkube-node-1"
    _pod(kubesim, namespace, "drained", node, "exec sleep 600", grace=1)
    _wait_phase(kubesim, namespace, "drained", ("Running",))
    try:
        answer = kubesim.answer("drain", node)
        assert answer["cordoned"] is True
        assert f"{namespace}/drained" in answer["evicted"], answer
        spec = _nodes(kubesim)[node]["spec"]
        assert spec.get("unschedulable") is True
        wait_until(lambda: kubesim.kubectl("get", "pod", "drained", "-n", namespace
                                           ).returncode != 0, 60, "the evicted pod to go")
        # A new pod for that node waits: the node is cordoned.
        _pod(kubesim, namespace, "waits", node, "echo placed")
        wait_until(lambda: "Unschedulable" in _pod_field(
            kubesim, namespace, "waits", "{.status.conditions[*].reason}"), 60,
            "the scheduler to refuse the cordoned node", interval=0.5)
    finally:
        kubesim.answer("uncordon", node)
    assert not _nodes(kubesim)[node]["spec"].get("unschedulable")
    assert _wait_phase(kubesim, namespace, "waits", ("Succeeded", "Failed")) == "Succeeded"
    _delete(kubesim, namespace, "waits")


def test_an_added_node_joins_ready_and_runs_pods(kubesim: TwoNodes, namespace: str) -> None:
    answer = kubesim.answer("add-node")
    assert answer["added"] == "localkube-node-3", answer
    assert _node_ready(kubesim, "localkube-node-3") == "True"
    _pod(kubesim, namespace, "on-three", "localkube-node-3", "echo new capacity")
    assert _wait_phase(kubesim, namespace, "on-three", ("Succeeded", "Failed")) == "Succeeded"
    assert kubesim.kubectl("logs", "on-three", "-n", namespace, check=True
                           ).stdout == b"new capacity\n"
    _delete(kubesim, namespace, "on-three")
    memory = {n["name"]: n["memoryKiB"] for n in kubesim.answer("nodes")["nodes"]}
    assert all(m.get("kubelet") and m.get("containerd") for m in memory.values()), memory
    print(f"add-node in {answer['in']}s; resident memory (KiB): {memory}")


def test_an_unknown_node_is_refused_with_the_known_ones(kubesim: TwoNodes) -> None:
    done = kubesim.ctl_run("stop-node", "nowhere", timeout=60)
    assert done.returncode == 1
    assert re.search(rb'node "nowhere" is not one of .*localkube-node-1', done.stderr), done


def _squarepeg(cluster: TwoNodes, namespace: str, name: str,
               *args: str) -> subprocess.CompletedProcess[bytes]:
    """`kubectl squarepeg run --keep --name NAME ARGS` (kept: the test reads where it ran)."""
    return squarepeg(cluster.env, "run", "-n", namespace, "--name", name, "--keep", *args,
                     timeout=180)


def _placed(cluster: TwoNodes, namespace: str, name: str,
            done: subprocess.CompletedProcess[bytes]) -> str:
    assert (done.returncode, done.stdout) == (0, b"placed\n"), done.stderr
    node = _pod_field(cluster, namespace, name, "{.spec.nodeName}")
    _delete(cluster, namespace, name)
    return node


def test_squarepeg_node_selector_places_the_pod_on_the_labelled_node(
        kubesim: TwoNodes, namespace: str) -> None:
    for node in ("localkube-node-2", "localkube-node-1"):
        kubesim.kubectl("label", "node", node, "squarepeg-test=here", check=True)
        try:
            done = _squarepeg(kubesim, namespace, f"sel-{node[-1]}", "--node-selector",
                              "squarepeg-test=here", "busybox", "echo", "placed")
            assert _placed(kubesim, namespace, f"sel-{node[-1]}", done) == node
        finally:
            kubesim.kubectl("label", "node", node, "squarepeg-test-", check=True)


def test_squarepeg_toleration_lets_the_pod_onto_a_tainted_node(kubesim: TwoNodes,
                                                               namespace: str) -> None:
    node = "localkube-node-2"
    where = ("--node-selector", f"kubernetes.io/hostname={node}")
    kubesim.kubectl("taint", "node", node, "squarepeg-spot=true:NoSchedule", check=True)
    try:
        refused = _squarepeg(kubesim, namespace, "untolerated", "--timeout", "8", *where,
                             "busybox", "echo", "placed")
        assert refused.returncode == 125, refused.stderr
        assert b"FailedScheduling" in refused.stderr or b"untolerated taint" in \
            refused.stderr, refused.stderr
        _delete(kubesim, namespace, "untolerated")
        done = _squarepeg(kubesim, namespace, "tolerated", "--toleration",
                          "squarepeg-spot=true:NoSchedule", *where, "busybox", "echo",
                          "placed")
        assert _placed(kubesim, namespace, "tolerated", done) == node
    finally:
        kubesim.kubectl("taint", "node", node, "squarepeg-spot-", check=True)


def test_squarepeg_platform_runs_where_the_nodes_os_and_arch_are(kubesim: TwoNodes,
                                                                  namespace: str) -> None:
    arch = {"x86_64": "amd64", "aarch64": "arm64"}[os.uname().machine]
    done = _squarepeg(kubesim, namespace, "native", "--platform", f"linux/{arch}",
                      "busybox", "echo", "placed")
    assert _placed(kubesim, namespace, "native", done).startswith("localkube-node-")
    other = "arm64" if arch == "amd64" else "amd64"
    refused = _squarepeg(kubesim, namespace, "foreign", "--timeout", "8", "--platform",
                         f"linux/{other}", "busybox", "echo", "placed")
    assert refused.returncode == 125 and b"FailedScheduling" in refused.stderr, \
        refused.stderr
    _delete(kubesim, namespace, "foreign")


def test_squarepeg_gpus_lands_on_the_node_that_advertises_them(kubesim: TwoNodes,
                                                               namespace: str) -> None:
    """A fake extended resource, `nvidia.com/gpu: 1`, in one node's status (the kubelet
    keeps extended resources it does not know of: no device plugin claims them)."""
    node = "localkube-node-1"
    patch = json.dumps({"status": {"capacity": {"nvidia.com/gpu": "1"},
                                   "allocatable": {"nvidia.com/gpu": "1"}}})
    kubesim.kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p",
                    patch, check=True)
    try:
        wait_until(lambda: _nodes(kubesim)[node]["status"]["allocatable"].get(
            "nvidia.com/gpu") == "1", 30, "the node to advertise a gpu")
        done = _squarepeg(kubesim, namespace, "gpu", "--gpus", "1", "busybox", "echo",
                          "placed")
        assert _placed(kubesim, namespace, "gpu", done) == node
    finally:
        gone = json.dumps({"status": {"capacity": {"nvidia.com/gpu": None},
                                      "allocatable": {"nvidia.com/gpu": None}}})
        kubesim.kubectl("patch", "node", node, "--subresource=status", "--type=merge", "-p",
                        gone)
