"""A run whose kubeconfig answer is cached (viewcache.py) starts no `kubectl config view`:
one create, in the namespace the run resolved, and nothing left behind. A config file that
names another namespace is obeyed.

The kubeconfig is made older than the view cache's racy window first, as a user's is, so
that the first run caches the answer and the next ones use it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Squarepeg, counting_kubectl, names, wait_until


@pytest.fixture
def cached_view(kubesim: Any, squarepeg: Squarepeg, namespace: str) -> None:
    old = time.time() - 60
    os.utime(kubesim.kubeconfig, (old, old))
    warm = squarepeg("run", "-q", "alpine", "true")
    assert warm.code == 0, warm.stderr
    # On the real node the warm run's pod stays until the kubelet confirms its deletion
    # (decision 0140): the tests count what is in the namespace, so it must be gone first.
    wait_until(lambda: names(kubesim, namespace) == [], 10, "the warm run's pod to go")


def creates(log: Path) -> list[str]:
    """The kubectl creates logged; a run's names its namespace in the request's path."""
    return [line for line in log.read_text().splitlines() if " create " in f" {line} "]


@pytest.mark.usefixtures("cached_view")
@pytest.mark.parametrize("mode", ["pod", "job"])
def test_a_run_with_a_cached_view_asks_no_config_view(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path, mode: str
) -> None:
    env, log = counting_kubectl(tmp_path)
    done = squarepeg("run", "--mode", mode, "alpine", "sh", "-c", "echo hi; exit 4", env=env)
    assert (done.code, done.stdout) == (4, b"hi\n"), done.stderr
    calls = log.read_text().splitlines()
    assert not any("config view" in call for call in calls)  # the cached answer
    assert len(creates(log)) == 1
    assert f"/namespaces/{namespace}/" in creates(log)[0]
    watches = [call for call in calls if "--watch" in call or "watch=true" in call]
    assert len(watches) == 1, calls  # by name (--raw of a watch) or by the Job's label
    # The delete was accepted before the exit; the pod itself goes once the node confirms
    # it (0.17 s on the real kubelet node): squarepeg does not wait for that (decision 0140).
    wait_until(lambda: names(kubesim, namespace) == [], 10, "the run's resource to go")


@pytest.mark.usefixtures("cached_view")
def test_a_config_namespace_wins_over_the_cached_contexts(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    config = tmp_path / "elsewhere.yaml"
    config.write_text(f"namespace: {namespace}\n")
    env, log = counting_kubectl(tmp_path)
    before = names(kubesim, "default")
    done = squarepeg(
        "run", "--config", str(config), "--keep", "alpine", "echo", "moved",
        env=env, namespaced=False,
    )
    try:
        assert (done.code, done.stdout) == (0, b"moved\n"), done.stderr
        made = creates(log)
        assert len(made) == 1 and f"/namespaces/{namespace}/" in made[0], made
        kept = names(kubesim, namespace)
        assert len(kept) == 1 and kept[0].startswith("pod/squarepeg-alpine-")
        assert names(kubesim, "default") == before  # nothing created in the context's
    finally:
        for ref in names(kubesim, namespace):
            kubesim.kubectl("delete", ref, "-n", namespace, "--wait=false")
