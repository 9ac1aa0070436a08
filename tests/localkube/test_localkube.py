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
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import LOCALKUBE, Localkube
from tests.helpers import wait_until
from tests.kubesim.launcher import descendants
from tests.kubesim.test_client import (  # noqa: F401 - collected again, on localkube
    api,
    test_create_list_watch_logs_delete_a_pod,
    test_errors_carry_the_status,
    test_job_runs_and_is_deleted_with_its_pod,
    test_watch_timeout_and_resource_version,
)
from tests.localkube.build import RELEASE

# The opt-in kubelet node (tests/localkube/test_kubelet_node.py) has no node agent's faults,
# and listens on its node address, which the kubelet will not have on loopback.
KUBELET_NODE = os.environ.get("LOCALKUBE_NODE") == "kubelet"
agent_only = pytest.mark.skipif(KUBELET_NODE, reason="the node agent's: this session's node "
                                "is the real kubelet (LOCALKUBE_NODE=kubelet)")


@pytest.fixture(scope="module")
def kubesim(localkube_session: Localkube) -> Iterator[Localkube]:
    """The name the shared fixtures (`namespace`, `api`) ask for."""
    yield localkube_session


def test_kubectl_names_the_release(kubesim: Localkube) -> None:
    done = kubesim.kubectl("get", "--raw", "/version", check=True)
    assert json.loads(done.stdout)["gitVersion"] == RELEASE
    nodes = kubesim.kubectl("get", "nodes", "-o", "json", check=True)
    [node] = json.loads(nodes.stdout)["items"]
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"]
    assert ready == "True"
    if KUBELET_NODE:  # its own TEST-NET-1 address: a kubelet refuses a loopback node IP
        internal = [a["address"] for a in node["status"]["addresses"]
                    if a["type"] == "InternalIP"]
        assert len(internal) == 1 and internal[0].startswith("192.0.2."), internal
    else:
        assert {"type": "InternalIP", "address": "127.0.0.1"} in node["status"]["addresses"]


def test_the_kubeconfig_is_the_admins_in_namespace_default(kubesim: Localkube) -> None:
    config = yaml.safe_load(Path(kubesim.kubeconfig).read_text())
    assert config["current-context"] == "localkube"
    assert config["contexts"][0]["context"]["namespace"] == "default"
    done = kubesim.kubectl("auth", "can-i", "*", "*", "--all-namespaces")
    assert done.stdout.strip() == b"yes"


def _listening_ports(pids: set[int]) -> list[tuple[str, int]]:
    """(address, port) of every listening TCP socket the given processes hold."""
    inodes: set[str] = set()
    for pid in pids:
        with_fds = Path(f"/proc/{pid}/fd")
        try:
            links = [os.readlink(fd) for fd in with_fds.iterdir()]
        except OSError:
            continue
        inodes.update(link[8:-1] for link in links if link.startswith("socket:["))
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                address, port = fields[1].split(":")
                found.append((address[:width], int(port, 16)))
    return found


@agent_only
def test_nothing_listens_beyond_loopback(kubesim: Localkube) -> None:
    pids = {kubesim.process.pid} | {pid for pid, _ in descendants(kubesim.process.pid)}
    ports = _listening_ports(pids)
    assert len(ports) >= 4, ports  # etcd (2), the API server, the node agent
    loopback = ("0100007F", "00000000000000000000000001000000")  # 127.0.0.1, ::1
    assert all(address in loopback for address, _ in ports), ports


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


@agent_only
def test_an_eviction_by_the_node(kubesim: Localkube, namespace: str) -> None:
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
    done = subprocess.run([str(LOCALKUBE), "ctl", "--kubeconfig", str(kubesim.kubeconfig),
                           "restart"], capture_output=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 2  # argparse: --down is required
    stats = subprocess.run([str(LOCALKUBE), "ctl", "--kubeconfig", str(kubesim.kubeconfig),
                            "stats"], capture_output=True, stdin=subprocess.DEVNULL)
    assert stats.returncode == 2 and b"invalid choice" in stats.stderr
