"""`--stop-signal` against a real API server (decision 0310): the container's
`lifecycle.stopSignal` and the pod's `spec.os.name` reach the server, which keeps the signal
only with the ContainerStopSignals feature gate on (alpha since 1.33, off by default) and
drops it without a word otherwise. The manifest itself: tests/unit/test_manifest.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Squarepeg


def server_minor(cluster: Any) -> int:
    done = cluster.kubectl("version", "-o", "json")
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["serverVersion"]["minor"].rstrip("+"))


@pytest.mark.localkube_only("kubesim keeps every field it is sent; feature gates are the real "
                            "API server's")
def test_a_server_without_the_gate_drops_the_stop_signal_and_keeps_the_os(
    squarepeg: Squarepeg, kubesim: Any
) -> None:
    done = squarepeg("run", "--dry-run-server", "--stop-signal", "INT", "alpine", "true")
    assert done.code == 0, done.stderr
    pod = yaml.safe_load(done.stdout)
    assert pod["spec"]["os"] == {"name": "linux"}
    kept = pod["spec"]["containers"][0].get("lifecycle", {}).get("stopSignal")
    if server_minor(kubesim) <= 34:
        # 1.33 and 1.34 have the gate alpha and off by default, as localkube runs them: the
        # field is gone from the server's answer, and the run would go on without it.
        assert kept is None, pod["spec"]["containers"][0]
    else:
        assert kept in (None, "SIGINT"), pod["spec"]["containers"][0]
