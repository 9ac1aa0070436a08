"""What squarepeg says when the kubectl on PATH is too old for what was asked
(kubectl_squarepeg/cluster/capability.py): kubectl 1.27 attaches over SPDY/3.1 only, which
kubesim refuses as a WebSocket-only proxy would; the run says which kubectl attaches, in one
line, not kubectl's raw error, and asks kubectl its version once (then the view cache's file
answers). On kubesim only: every real API server takes SPDY (localkube's -i smoke tests run
1.27 there), so there is nothing to refuse."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import find_kubectl
from tests.e2e.conftest import BIN, Squarepeg, counting_kubectl, names, wait_until

pytestmark = pytest.mark.kubesim_only("kubesim refuses SPDY attach as a WebSocket-only proxy "
                                      "would; a real API server takes it")


@pytest.fixture
def kubectl_127_first(tmp_path: Path) -> str:
    """A PATH whose kubectl is kubectl 1.27, behind a shim that logs each call."""
    try:
        binary = find_kubectl("1.27")
    except pytest.UsageError:
        pytest.skip("no kubectl.1.27 on this machine")
    first = tmp_path / "kubectl-1.27"
    first.mkdir()
    (first / "kubectl").symlink_to(binary)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{first}{os.pathsep}{old}"
    try:
        counting_kubectl(tmp_path)
    finally:
        os.environ["PATH"] = old
    # A binary changed in the last seconds is never cached (viewcache's racy rule).
    os.utime(tmp_path / "shim" / "kubectl", (1e9, 1e9))
    return f"{BIN}{os.pathsep}{tmp_path / 'shim'}{os.pathsep}{old}"


def _calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_an_spdy_only_kubectl_refused_its_attach_is_told_which_kubectl_attaches(
        squarepeg: Squarepeg, kubesim: object, namespace: str, tmp_path: Path,
        kubectl_127_first: str) -> None:
    env = {"PATH": kubectl_127_first}
    for attempt in (1, 2):
        process = squarepeg.start("run", "-i", "--stop-timeout", "2", "alpine", "cat", env=env,
                                  stdin=subprocess.PIPE)
        _, raw = process.communicate(b"x\n", timeout=120)
        err = raw.decode()
        errors = [line for line in err.splitlines() if "error:" in line]
        assert process.returncode == 125, err
        assert len(errors) == 1 and "kubectl 1.27 attaches over SPDY/3.1 only" in errors[0] \
            and "use kubectl 1.30 or newer" in errors[0], err
        assert "kubesim speaks WebSocket" not in err  # kubectl's own words are not the message
        versions = [call for call in _calls(tmp_path) if call.startswith("version")]
        assert len(versions) == 1, (attempt, _calls(tmp_path))  # the second run read the cache
    cache = Path(kubesim.kubeconfig).parent / "cache-home" / "squarepeg"  # type: ignore[attr-defined]
    assert "v1.27." in json.dumps(json.loads((cache / "kubeconfig-views.json").read_text()))
    # Deleted by the runs' cleanup; `cat` ends within its --stop-timeout of 2 s.
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the two runs' pods to be gone")
