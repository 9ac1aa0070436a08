"""An API server inside the test process, for tests that need to reach behind the wire.

`running(scenario, with_cluster=False)` starts a KubeSim in this process (no container
processes unless with_cluster) and yields an `InProcess` whose `.sim` exposes the store and
the log book, and whose `.kubectl(...)` runs the real kubectl against it with a kubeconfig
and KUBECACHEDIR of its own. Everything it starts is stopped when the block ends.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.kubesim.launcher import write_kubeconfig
from tests.kubesim.scenario import scenario_from_dict
from tests.kubesim.server import KubeSim

KUBECTL_SECONDS = 60.0


class InProcess:
    def __init__(self, sim: KubeSim, workdir: Path):
        self.sim = sim
        self.kubeconfig = workdir / "kubeconfig"
        write_kubeconfig(self.kubeconfig, sim.kubeconfig())
        self.env = {**os.environ, "KUBECONFIG": str(self.kubeconfig),
                    "KUBECACHEDIR": str(workdir / "kube-cache")}

    def kubectl(self, *args: str, input: bytes | None = None,
                timeout: float = KUBECTL_SECONDS) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["kubectl", *args], env=self.env, input=input,
                              stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, timeout=timeout)

    def start_kubectl(self, *args: str) -> subprocess.Popen[bytes]:
        """kubectl in the background (stdout and stderr piped); the caller ends it."""
        return subprocess.Popen(["kubectl", *args], env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def request(self, method: str, path: str, body: Any = None, *,
                headers: dict[str, str] | None = None, token: str | None = None,
                timeout: float = 30.0) -> tuple[int, dict[str, str], bytes]:
        """One HTTPS request (JSON body unless bytes); (status, headers, body)."""
        context = ssl.create_default_context(cadata=self.sim.tls.ca_pem.decode())
        connection = http.client.HTTPSConnection("127.0.0.1", self.sim.port, context=context,
                                                 timeout=timeout)
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        sent = {"Authorization": f"Bearer {token or self.sim.token}",
                "Content-Type": "application/json", **(headers or {})}
        try:
            connection.request(method, path, body=data, headers=sent)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def ca_file(self) -> Path:
        path = self.kubeconfig.parent / "ca.crt"
        path.write_bytes(base64.b64decode(
            self.config()["clusters"][0]["cluster"]["certificate-authority-data"]))
        return path

    def config(self) -> dict[str, Any]:
        return yaml.safe_load(self.kubeconfig.read_text())  # type: ignore[no-any-return]


@contextlib.contextmanager
def running(workdir: Path, scenario: dict[str, Any] | None = None, *,
            with_cluster: bool = False) -> Iterator[InProcess]:
    sim = KubeSim(scenario_from_dict(scenario), with_cluster=with_cluster)
    sim.start()
    try:
        yield InProcess(sim, workdir)
    finally:
        sim.stop()
