"""kubesim under load: 11,000 stored pods and 200 open watches, while squarepeg runs,
sweeps and plain kubectl calls go on in the same namespace. Nothing kubectl or squarepeg
sees may be an error (a `TLS handshake timeout` was seen once at 11,000 pods), and every
watch stays open. Latency percentiles under the same load: scripts/bench-kubesim."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tests.conftest import Kubesim
from tests.kubesim.load import Endpoint, open_watches

STORED = 11_000
WATCHES = 200
RUNS = 6
KUBECTL_CALLS = 12
SQUAREPEG = str(Path(sys.executable).parent / "kubectl-squarepeg")
WATCH_PATH = "/api/v1/namespaces/crowd/pods?watch=true&labelSelector=group%3Dwatched"


def test_eleven_thousand_pods_and_two_hundred_watches_while_runs_and_sweeps_go_on(
        kubesim_factory: Callable[[dict[str, Any] | None], Kubesim], tmp_path: Path) -> None:
    sim = kubesim_factory({"namespaces": ["crowd"]})
    created = json.loads(sim.ctl("seed-pods", "crowd", str(STORED), "--labels", "group=bulk"))
    assert created == {"created": STORED}
    env = {**sim.env, "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "USER": "loaded", "LOGNAME": "loaded",
           "PATH": f"{Path(sys.executable).parent}:{sim.env['PATH']}"}

    def squarepeg(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([SQUAREPEG, *args], env=env, capture_output=True, timeout=300,
                              stdin=subprocess.DEVNULL)

    def kubectl(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["kubectl", *args], env=env, capture_output=True, timeout=300,
                              stdin=subprocess.DEVNULL)

    with open_watches(Endpoint.from_kubeconfig(sim.kubeconfig), WATCHES, WATCH_PATH) as watches:
        assert sim.stats()["watches"] >= WATCHES
        with ThreadPoolExecutor(max_workers=RUNS + 4) as pool:
            runs = [pool.submit(squarepeg, "run", "-n", "crowd", "alpine", "sh", "-c",
                                f"echo run {i}; exit {i + 1}") for i in range(RUNS)]
            sweep = pool.submit(squarepeg, "sweep", "-n", "crowd")
            calls = [pool.submit(kubectl, "get", "pods", "-n", "crowd", "-l",
                                 "group=needle", "-o", "name") for _ in range(KUBECTL_CALLS)]
            finished = [run.result() for run in runs]
            swept = sweep.result()
            listed = [call.result() for call in calls]
        assert watches.errors == []
        assert sim.stats()["watches"] >= WATCHES  # every one still open
    for i, done in enumerate(finished):
        stderr = done.stderr.decode(errors="replace")
        assert (done.returncode, done.stdout) == (i + 1, f"run {i}\n".encode()), stderr
        assert all("error" not in line and "warning" not in line
                   for line in stderr.splitlines()), stderr
    assert swept.returncode == 0, swept.stderr
    for done in listed:
        assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert sim.kubectl("get", "pods", "-n", "crowd", "-l", "app.kubernetes.io/managed-by",
                       "-o", "name").stdout == b""  # every run cleaned up after itself
