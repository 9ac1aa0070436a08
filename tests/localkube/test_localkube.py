"""localkube itself: `scripts/localkube serve` with the real kubectl and the official Python
client, its faults, and what it listens on.

Runs in the localkube phase (`--cluster localkube`; tests/conftest.py skips it otherwise) on
the session's cluster. The official client's tests are kubesim's own (tests/kubesim/
test_client.py), collected here a second time against the real API server: the same
assertions hold on both.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import Localkube
from tests.helpers import wait_until
from tests.kubesim.launcher import descendants
from tests.kubesim.test_client import (  # noqa: F401 - collected again, on localkube
    api,
    test_create_list_watch_logs_delete_a_pod,
    test_errors_carry_the_status,
    test_job_runs_and_is_deleted_with_its_pod,
    test_watch_timeout_and_resource_version,
)
from tests.localkube import build
from tests.localkube.processes import SERVICE_IP
from tests.localkube.service_address import SERVICE_PORT


@pytest.fixture(scope="module")
def kubesim(localkube_session: Localkube) -> Iterator[Localkube]:
    """The name the shared fixtures (`namespace`, `api`) ask for."""
    yield localkube_session


@pytest.fixture(scope="module")
def agent_cluster(localkube_session: Localkube,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[Localkube]:
    """A localkube with the node agent: the session's when its node is the agent, else one
    of this module's own (the faults `evict` and `drop-logs` are the agent's only)."""
    if localkube_session.node == "agent":
        yield localkube_session
        return
    cluster = Localkube(tmp_path_factory.mktemp("localkube-agent"), node="agent")
    try:
        yield cluster
    finally:
        cluster.stop()


def test_kubectl_names_the_release(kubesim: Localkube) -> None:
    done = kubesim.kubectl("get", "--raw", "/version", check=True)
    assert json.loads(done.stdout)["gitVersion"] == build.selected().version
    nodes = kubesim.kubectl("get", "nodes", "-o", "json", check=True)
    [node] = json.loads(nodes.stdout)["items"]
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"]
    assert ready == "True"
    if kubesim.node == "kubelet":  # a kubelet refuses a loopback node IP: its netns's own
        internal = [a["address"] for a in node["status"]["addresses"]
                    if a["type"] == "InternalIP"]
        assert len(internal) == 1 and not internal[0].startswith("127."), internal
    else:
        assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]


def test_the_kubeconfig_is_the_admins_in_namespace_default(kubesim: Localkube) -> None:
    config = yaml.safe_load(Path(kubesim.kubeconfig).read_text())
    assert config["current-context"] == "localkube"
    assert config["contexts"][0]["context"]["namespace"] == "default"
    done = kubesim.kubectl("auth", "can-i", "*", "*", "--all-namespaces")
    assert done.stdout.strip() == b"yes"


def _net_namespace(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def _listening(pids: set[int]) -> dict[str, list[tuple[str, int]]]:
    """(address, port) of every listening TCP socket the given processes hold, by network
    namespace: a socket is in the table of the namespace it was made in, which need not be
    its holder's (the launcher holds the API forwarder's listener in the node's)."""
    inodes: set[str] = set()
    reader: dict[str, int] = {}
    for pid in pids:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
            reader.setdefault(_net_namespace(pid), pid)
        except OSError:
            continue
        inodes.update(link[8:-1] for link in links if link.startswith("socket:["))
    found: dict[str, list[tuple[str, int]]] = {}
    for namespace, pid in reader.items():
        for table, width in (("tcp", 8), ("tcp6", 32)):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                    address, port = fields[1].split(":")
                    found.setdefault(namespace, []).append((address[:width], int(port, 16)))
    return found


def _hex_address(ip: str) -> str:
    """/proc/net/tcp's spelling of an IPv4 address (little-endian hex)."""
    return "".join(f"{int(part):02X}" for part in reversed(ip.split(".")))


LOOPBACK = ("0100007F", "00000000000000000000000001000000")  # 127.0.0.1, ::1


def test_nothing_listens_beyond_loopback_in_the_machines_network(kubesim: Localkube) -> None:
    """Every listener in the host's network namespace is on 127.0.0.1; the kubelet node's
    (its own namespace) listen on its 127.0.0.1 or on the node's address, which only the
    host's end of its veth reaches."""
    pids = {kubesim.process.pid} | {pid for pid, _ in descendants(kubesim.process.pid)}
    listening = _listening(pids)
    host = _net_namespace(os.getpid())
    assert len(listening.get(host, [])) >= 3, listening  # etcd (2), the API server
    assert all(address in LOOPBACK for address, _ in listening[host]), listening[host]
    others = {namespace: ports for namespace, ports in listening.items() if namespace != host}
    if kubesim.node == "agent":
        assert not others, others
        assert len(listening[host]) >= 4, listening  # and the node agent
        return
    nodes = json.loads(kubesim.kubectl("get", "nodes", "-o", "json", check=True).stdout)
    [internal] = [a["address"] for a in nodes["items"][0]["status"]["addresses"]
                  if a["type"] == "InternalIP"]
    [node_ports] = others.values()  # one namespace: the node's
    assert (_hex_address(internal), 10250) in node_ports, node_ports  # the kubelet
    # The kubernetes Service's address, for the node's pods (service_address.py).
    assert (_hex_address(SERVICE_IP), SERVICE_PORT) in node_ports, node_ports
    assert all(address in (*LOOPBACK, _hex_address(internal), _hex_address(SERVICE_IP))
               for address, _ in node_ports)


def _run(kubesim: Localkube, namespace: str, name: str, script: str) -> None:
    done = kubesim.kubectl("run", name, "-n", namespace, "--image=alpine", "--restart=Never",
                           "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr


def _phase(kubesim: Localkube, namespace: str, name: str) -> str:
    done = kubesim.kubectl("get", "pod", name, "-n", namespace, "-o",
                           "jsonpath={.status.phase}")
    return done.stdout.decode()


def test_a_restarted_api_server_keeps_the_state(kubesim: Localkube, namespace: str) -> None:
    _run(kubesim, namespace, "survivor", "sleep 3; echo done")
    kubesim.ctl("restart", "--down", "1")
    wait_until(lambda: _phase(kubesim, namespace, "survivor") == "Succeeded", 60,
               "the pod to finish across the restart")
    logs = kubesim.kubectl("logs", "survivor", "-n", namespace, check=True)
    assert logs.stdout == b"done\n"
    kubesim.kubectl("delete", "pod", "survivor", "-n", namespace, "--wait=false")


def test_an_eviction_by_the_node(agent_cluster: Localkube) -> None:
    """`ctl evict` is the node agent's (refused on the kubelet node: see below)."""
    kubesim, namespace = agent_cluster, "default"
    _run(kubesim, namespace, "evicted", "sleep 60")
    try:
        # 90 s: run after the restart test, the scheduler's informers may still be in their
        # reconnect backoff (CI once saw 30 s run out before the pod was even bound).
        wait_until(lambda: _phase(kubesim, namespace, "evicted") == "Running", 90, "Running")
        kubesim.ctl("evict", f"{namespace}/evicted")
        wait_until(lambda: _phase(kubesim, namespace, "evicted") == "Failed", 30, "Failed")
        reason = kubesim.kubectl("get", "pod", "evicted", "-n", namespace, "-o",
                                 "jsonpath={.status.reason}")
        assert reason.stdout == b"Evicted"
    finally:
        kubesim.kubectl("delete", "pod", "evicted", "-n", namespace, "--wait=false")


def test_a_fault_only_kubesim_makes_is_refused(kubesim: Localkube) -> None:
    done = kubesim.ctl_run("restart")
    assert done.returncode == 2  # argparse: --down is required
    stats = kubesim.ctl_run("stats")
    assert stats.returncode == 2 and b"invalid choice" in stats.stderr


def test_the_agents_faults_are_refused_on_the_kubelet_node(kubesim: Localkube) -> None:
    if kubesim.node != "kubelet":
        pytest.skip("this session's node is the node agent (LOCALKUBE_NODE=agent)")
    for verb in (["evict", "default/nothing"], ["drop-logs"]):
        done = kubesim.ctl_run(*verb)
        assert done.returncode == 1 and b"a fault of the node agent" in done.stderr, done
