"""`-p`/`--publish` end to end (issue 23): the installed `kubectl-squarepeg` with the real
kubectl. On the real node (localkube's kubelet): a container serving HTTP (busybox `httpd`)
answers a local request through the published port while the run lasts, a free port taken
for an empty HOST_PORT too, the forward comes back after its kubectl is killed, and the
port is closed once the run has ended, normally or by Ctrl-C. On both clusters: a local
port already taken is refused before anything is created. On kubesim, which serves no
port-forward (tests/kubesim/README.md's differences), the refusal is one clear line.

Cost: about 15 s on localkube's kubelet node (two pods), 2 s on kubesim."""

from __future__ import annotations

import os
import re
import signal
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Localkube
from tests.e2e.conftest import Squarepeg, names
from tests.helpers import processes, wait_until

# The container: busybox httpd on port 80, a page, and a CGI script that ends the container
# (exit 3) so the test decides when the run ends, with no clock; 60 s at most.
SERVER = (
    "mkdir -p /www/cgi-bin && echo hello from the pod > /www/index.html && "
    "printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho bye\\ntouch /tmp/done\\n' "
    "> /www/cgi-bin/done && chmod +x /www/cgi-bin/done && httpd -p 80 -h /www && "
    "i=0; until [ -f /tmp/done ] || [ $i -ge 600 ]; do sleep 0.1; i=$((i+1)); done; exit 3"
)
ANNOUNCED = re.compile(r"^squarepeg: 127\.0\.0\.1:(\d+) -> 80/tcp$", re.MULTILINE)
NO_PORT_FORWARD = "kubesim serves no port-forward (tests/kubesim/README.md, differences)"


def _needs_the_kubelet(cluster: Any) -> None:
    if isinstance(cluster, Localkube) and cluster.node != "kubelet":
        pytest.skip("localkube's node agent serves no port-forward; the real kubelet does")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(port: int, path: str = "/") -> bytes | None:
    """The body of GET http://127.0.0.1:PORT/PATH, or None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            body: bytes = answer.read()
            return body
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def _closed(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _announced(stderr: Path, count: int) -> list[int]:
    ports = [int(p) for p in ANNOUNCED.findall(stderr.read_text(errors="replace"))]
    return ports if len(ports) >= count else []


def _forwarders(parent: int | None = None, port: int | None = None) -> list[int]:
    """The pids of the `kubectl port-forward` children of process `parent`, or of any
    process forwarding local `port` (a forward left behind by a run that has ended)."""
    found = []
    for pid, (stat, cmdline) in processes("stat", "cmdline"):
        argv = cmdline.split(b"\0")
        if b"port-forward" not in argv:
            continue
        child = parent is not None and int(stat.rpartition(b")")[2].split()[1]) == parent
        forwards = port is not None and any(a.startswith(f"{port}:".encode()) for a in argv)
        if child or forwards:
            found.append(pid)
    return found


@pytest.mark.localkube_only(NO_PORT_FORWARD)
def test_a_published_port_serves_while_the_run_lasts_and_closes_after(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    _needs_the_kubelet(kubesim)
    given = _free_port()
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as err:
        run = squarepeg.start("run", "-p", f"{given}:80", "-p", ":80", "--name", "web",
                              "alpine", "sh", "-c", SERVER, stderr=err)
    first, free = wait_until(lambda: _announced(stderr, 2), 90, "both ports announced")
    assert first == given and free not in (0, given)
    assert _get(given) == b"hello from the pod\n"
    assert _get(free) == b"hello from the pod\n"

    # A forward that drops is started again, on the same local port.
    [forwarder] = _forwarders(run.pid)
    os.killpg(forwarder, signal.SIGKILL)  # its session: kubectl and what it started
    wait_until(lambda: _forwarders(run.pid) not in ([], [forwarder]), 30, "a new port-forward")
    assert wait_until(lambda: _get(given), 30, "the port to answer again") == (
        b"hello from the pod\n")

    assert _get(given, "/cgi-bin/done") == b"bye\n"  # the container ends: exit 3
    done = squarepeg.finish(run, timeout=60)
    assert done.code == 3, done.stderr
    said = stderr.read_text(errors="replace")
    assert "squarepeg: warning: port-forward to pod/web dropped" in said, said
    assert _closed(given) and _closed(free)
    assert _forwarders(port=given) == [] and _forwarders(port=free) == []


@pytest.mark.localkube_only(NO_PORT_FORWARD)
def test_ctrl_c_stops_the_forward(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    _needs_the_kubelet(kubesim)
    port = _free_port()
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as err:
        run = squarepeg.start("run", "-p", f"{port}:80", "--stop-timeout", "1", "alpine",
                              "sh", "-c", SERVER, stderr=err, start_new_session=True)
    wait_until(lambda: _announced(stderr, 1), 90, "the port announced")
    assert _get(port) == b"hello from the pod\n"
    os.killpg(run.pid, signal.SIGINT)  # what the terminal's Ctrl-C does
    done = squarepeg.finish(run, timeout=60)
    assert done.code == 130, stderr.read_text(errors="replace")
    assert _closed(port)
    assert _forwarders(port=port) == []


def test_a_taken_local_port_is_refused_before_anything_is_created(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = squarepeg("run", "-p", f"{port}:80", "alpine", "true")
    assert done.code == 125, done.stderr
    [error] = [line for line in done.lines if line.startswith("squarepeg: error:")]
    assert f"local port 127.0.0.1:{port} is already in use" in error
    assert names(kubesim, namespace) == []
    assert "Traceback" not in done.stderr


@pytest.mark.kubesim_only("kubesim's refusal of port-forward is what this shows")
def test_a_cluster_without_port_forward_fails_the_run_in_one_line(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    port = _free_port()
    done = squarepeg("run", "-p", f"{port}:80", "--name", "nopf", "--stop-timeout", "1",
                     "alpine", "sleep", "30", timeout=60)
    assert done.code == 125, done.stderr
    [error] = [line for line in done.lines if line.startswith("squarepeg: error:")]
    assert f"cannot publish 127.0.0.1:{port} -> 80/tcp" in error
    assert "kubectl port-forward to pod/nopf failed" in error and "run without -p" in error
    assert _closed(port)
    wait_until(lambda: "pod/nopf" not in names(kubesim, namespace), 30, "the pod deleted")

