"""`port NAME` to a detached run, and `run -d -p` recording its ports (issue 35; decision
0231): the installed `kubectl-squarepeg` with the real kubectl. On the real node
(localkube's kubelet): `run -d -p` forwards nothing and says so, `ps` shows the recorded
ports, `port` forwards them (a free port for an empty HOST_PORT) and serves an HTTP request,
comes back after its kubectl is killed, ends on Ctrl-C with exit 0 and nothing left
listening, takes other ports with -p, and ends by itself when the container ends. On
kubesim, which serves no port-forward (tests/kubesim/README.md's differences), the refusal
is one line. On both: the bad inputs are one line and exit 125."""

from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Squarepeg, names
from tests.e2e.test_ports import (
    NO_PORT_FORWARD,
    SERVER,
    _announced,
    _closed,
    _forwarders,
    _free_port,
    _get,
    _needs_the_kubelet,
)
from tests.helpers import wait_until

HELLO = b"hello from the pod\n"


@pytest.fixture(autouse=True)
def nothing_left(kubesim: Any, namespace: str) -> Any:
    yield
    if names(kubesim, namespace):
        kubesim.kubectl("delete", "pods,jobs", "--all", "-n", namespace, "--wait=false",
                        "--cascade=background")
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the leftovers to be gone")


def _ps_row(squarepeg: Squarepeg, name: str) -> dict[str, Any]:
    done = squarepeg("ps", "-a", "--format", "json")
    assert done.code == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    return next(row for row in rows if row["Names"] == name)


def _run_d_server(squarepeg: Squarepeg, name: str, *published: str) -> str:
    args = [arg for port in published for arg in ("-p", port)]
    started = squarepeg("run", "-d", *args, "--stop-timeout", "1", "--name", name,
                        "alpine", "sh", "-c", SERVER)
    assert (started.code, started.stdout) == (0, f"{name}\n".encode()), started.stderr
    return started.stderr


@pytest.mark.localkube_only(NO_PORT_FORWARD)
def test_port_forwards_the_recorded_ports_and_serves_http_until_ctrl_c(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    _needs_the_kubelet(kubesim)
    given = _free_port()
    said = _run_d_server(squarepeg, "pweb", f"{given}:80", ":80")
    assert "ports recorded, not forwarded" in said and "kubectl squarepeg port pweb" in said
    assert _closed(given)  # run -d forwards nothing
    assert _ps_row(squarepeg, "pweb")["Ports"] == (
        f"127.0.0.1:{given}->80/tcp, 127.0.0.1:0->80/tcp")

    stderr = tmp_path / "stderr"
    with stderr.open("wb") as err:
        port = squarepeg.start("port", "pweb", stderr=err, start_new_session=True)
    first, free = wait_until(lambda: _announced(stderr, 2), 90, "both ports announced")
    assert first == given and free not in (0, given)
    assert _get(given) == HELLO and _get(free) == HELLO

    # A forward that drops is started again, on the same local port.
    [forwarder] = _forwarders(port.pid)
    os.killpg(forwarder, signal.SIGKILL)
    wait_until(lambda: _forwarders(port.pid) not in ([], [forwarder]), 30, "a new port-forward")
    assert wait_until(lambda: _get(given), 30, "the port to answer again") == HELLO

    os.killpg(port.pid, signal.SIGINT)  # the terminal's Ctrl-C: the way `port` ends
    done = squarepeg.finish(port, timeout=60)
    assert done.code == 0, stderr.read_text(errors="replace")
    assert _closed(given) and _closed(free)
    assert _forwarders(port=given) == [] and _forwarders(port=free) == []
    assert _ps_row(squarepeg, "pweb")["Status"].startswith("Up ")  # the run goes on

    # Other ports with -p; the container's end ends the forward (exit 0, said).
    other = _free_port()
    with stderr.open("wb") as err:
        port = squarepeg.start("port", "pweb", "-p", f"{other}:80", stderr=err)
    wait_until(lambda: _announced(stderr, 1), 90, "the port announced")
    assert _get(other) == HELLO
    assert _get(other, "/cgi-bin/done") == b"bye\n"  # the container exits 3
    done = squarepeg.finish(port, timeout=60)
    assert done.code == 0, stderr.read_text(errors="replace")
    assert "pod/pweb has ended: its ports are closed" in stderr.read_text(errors="replace")
    assert _closed(other) and _forwarders(port=other) == []
    assert squarepeg("wait", "pweb").stdout == b"3\n"
    assert squarepeg("rm", "pweb").code == 0


@pytest.mark.kubesim_only("kubesim's refusal of port-forward is what this shows")
def test_port_on_a_cluster_without_port_forward_is_one_line(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    local = _free_port()
    said = _run_d_server(squarepeg, "pnopf", f"{local}:80", "0.0.0.0::81")
    assert (f"ports recorded, not forwarded (127.0.0.1:{local} -> 80/tcp, 0.0.0.0:0 -> "
            "81/tcp): `kubectl squarepeg port pnopf` forwards them until Ctrl-C") in said
    assert _ps_row(squarepeg, "pnopf")["Ports"] == (
        f"127.0.0.1:{local}->80/tcp, 0.0.0.0:0->81/tcp")
    table = squarepeg("ps").stdout.decode().splitlines()
    assert "PORTS" in table[0].split() and f"127.0.0.1:{local}->80/tcp," in table[1]
    done = squarepeg("port", "pnopf", timeout=60)
    assert done.code == 125, done.stderr
    [error] = [line for line in done.lines if line.startswith("squarepeg: error:")]
    assert f"cannot publish 127.0.0.1:{local} -> 80/tcp" in error
    assert "kubectl port-forward to pod/pnopf failed" in error
    assert _closed(local) and _forwarders(port=local) == []
    assert _ps_row(squarepeg, "pnopf")["Status"].startswith("Up ")  # the run is untouched


def test_port_bad_inputs_are_one_line_and_125(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    def one_error(*args: str) -> str:
        done = squarepeg(*args)
        assert done.code == 125, done.stderr
        assert "Traceback" not in done.stderr
        [error] = [line for line in done.lines if line.startswith("squarepeg: error:")]
        return error

    assert "no squarepeg run named pnone" in one_error("port", "pnone")
    started = squarepeg("run", "-d", "--stop-timeout", "1", "--name", "pplain", "alpine",
                        "sleep", "60")
    assert started.code == 0, started.stderr
    assert "pod/pplain recorded no ports" in one_error("port", "pplain")
    assert "invalid value '8080:80/udp' for -p/--publish" in one_error(
        "port", "pplain", "-p", "8080:80/udp")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        assert f"local port 127.0.0.1:{busy} is already in use" in one_error(
            "port", "pplain", "-p", f"{busy}:80")
    assert squarepeg("rm", "-f", "pplain").code == 0
