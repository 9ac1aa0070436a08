"""The control-plane processes of localkube: their command lines, starting, health, stopping.

Owns how etcd, kube-apiserver, kube-controller-manager and kube-scheduler are started (the
flags follow kubernetes' hack/local-up-cluster.sh, trimmed to one machine: every listener on
127.0.0.1, token authentication from the static token file, the serving ports of the
controller manager and the scheduler turned off), each with its log file in the state
directory, in a session of its own (a Ctrl-C on the terminal reaches the launcher only, which
stops them in order) and with `setpriv --pdeathsig KILL`, so none outlives a launcher that
was killed outright. Spawn only from the launcher's main thread: the death signal follows
the thread that forked.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.localkube.pki import Identity, Pki

SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"
STOP_SECONDS = 15.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Component:
    """One process of the control plane."""

    name: str
    argv: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        prefix = ["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []
        with self.log.open("ab") as handle:
            self.process = subprocess.Popen([*prefix, *self.argv], stdout=handle,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, seconds: float = STOP_SECONDS) -> None:
        """SIGTERM, then SIGKILL of its session after `seconds`; idempotent."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(OSError):
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(seconds)
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)

    def kill(self) -> None:
        """SIGKILL of its session at once, no SIGTERM first (a machine losing power)."""
        process = self.process
        if process is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)

    def tail(self, lines: int = 20) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def write_component_kubeconfig(path: Path, server: str, pki: Pki, identity: Identity) -> None:
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "localkube",
        "clusters": [{"name": "localkube", "cluster": {
            "server": server, "certificate-authority": str(pki.ca_cert)}}],
        "users": [{"name": identity.user, "user": {"token": identity.token}}],
        "contexts": [{"name": "localkube", "context": {
            "cluster": "localkube", "user": identity.user}}],
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    path.chmod(0o600)


@dataclass(frozen=True)
class Layout:
    """Where one cluster keeps its files and which ports it uses."""

    state: Path
    bin: Path
    pki: Pki
    apiserver_port: int
    etcd_port: int
    etcd_peer_port: int

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.apiserver_port}"

    def log(self, name: str) -> Path:
        (self.state / "logs").mkdir(exist_ok=True)
        return self.state / "logs" / f"{name}.log"


def etcd(layout: Layout) -> Component:
    client = f"http://127.0.0.1:{layout.etcd_port}"
    peer = f"http://127.0.0.1:{layout.etcd_peer_port}"
    return Component("etcd", [
        str(layout.bin / "etcd"), "--name", "localkube",
        "--data-dir", str(layout.state / "etcd"),
        "--listen-client-urls", client, "--advertise-client-urls", client,
        "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
        "--initial-cluster", f"localkube={peer}",
        # A cluster that lives for one test run: durability buys nothing, fsyncs cost.
        "--unsafe-no-fsync", "--log-level", "warn",
    ], layout.log("etcd"))


def node_grace_flags(node_grace: float | None,
                     toleration_seconds: int | None) -> tuple[list[str], list[str]]:
    """The controller manager's and the API server's flags for the node controller's grace
    periods; none for the real defaults (v1.34.4's sources: node-monitor-grace-period 50s,
    node-monitor-period 5s, default not-ready and unreachable tolerations 300 s). A short
    grace also checks the nodes every second (the period must be well below the grace)."""
    controller: list[str] = []
    if node_grace is not None:
        controller = [f"--node-monitor-grace-period={node_grace:g}s",
                      f"--node-monitor-period={min(5.0, max(1.0, node_grace / 5)):g}s"]
    api: list[str] = []
    if toleration_seconds is not None:
        api = [f"--default-not-ready-toleration-seconds={toleration_seconds}",
               f"--default-unreachable-toleration-seconds={toleration_seconds}"]
    return controller, api


def apiserver(layout: Layout, extra: tuple[str, ...] = ()) -> Component:
    pki = layout.pki
    return Component("kube-apiserver", [
        str(layout.bin / "kube-apiserver"),
        f"--etcd-servers=http://127.0.0.1:{layout.etcd_port}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        f"--secure-port={layout.apiserver_port}",
        f"--cert-dir={layout.state / 'apiserver-certs'}",
        f"--tls-cert-file={pki.serving_cert}", f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--token-auth-file={pki.token_file}",
        "--authorization-mode=Node,RBAC",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-key-file={pki.service_account_key}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        # The `kubernetes` Service's endpoints would be 127.0.0.1, which Endpoints
        # validation refuses; nothing here needs them.
        "--endpoint-reconciler-type=none",
        "--kubelet-preferred-address-types=InternalIP",
        "--allow-privileged=true",
        "--profiling=false",
        *extra,
    ], layout.log("kube-apiserver"))


def controller_manager(layout: Layout, kubeconfig: Path,
                       extra: tuple[str, ...] = ()) -> Component:
    pki = layout.pki
    return Component("kube-controller-manager", [
        str(layout.bin / "kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        "--use-service-account-credentials=true",
        f"--service-account-private-key-file={pki.service_account_key}",
        f"--root-ca-file={pki.ca_cert}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--leader-elect=false", "--secure-port=0", "--profiling=false",
        *extra,
    ], layout.log("kube-controller-manager"))


def scheduler(layout: Layout, kubeconfig: Path) -> Component:
    return Component("kube-scheduler", [
        str(layout.bin / "kube-scheduler"),
        f"--kubeconfig={kubeconfig}",
        "--leader-elect=false", "--secure-port=0", "--profiling=false",
    ], layout.log("kube-scheduler"))


def wait_for(condition: Callable[[], bool], seconds: float, what: str,
             component: Component | None, stop: Callable[[], bool]) -> None:
    """Poll `condition()` every 0.1 s until true; raise StartError naming `what` (with the
    component's log tail) when it dies, `seconds` pass, or `stop()` turns true."""
    deadline = time.monotonic() + seconds
    while True:
        if stop():
            raise Interrupted()
        if condition():
            return
        if component is not None and not component.running():
            raise StartError(f"{component.name} exited before {what}; the end of its log "
                             f"({component.log}):\n{component.tail()}")
        if time.monotonic() > deadline:
            detail = f"; the end of {component.log}:\n{component.tail()}" if component else ""
            raise StartError(f"timed out after {seconds:g}s waiting for {what}{detail}")
        time.sleep(0.1)


class StartError(RuntimeError):
    """The cluster could not start: str() says which part and shows its log."""


class Interrupted(Exception):
    """SIGTERM or Ctrl-C arrived during the start."""
