"""A private registry (issue 33): a pull refused for want of credentials fails fast naming
`--image-pull-secret` and the Secret's shape (decision 0424); with a docker-registry Secret
passed by that flag the run works, in pod and job mode.

The registry is localkube's private one (tests/localkube/private_registry.py: HTTP Basic in
front of the kubelet node's registry), pulled by the real containerd with the credentials
the real kubelet reads from the Secret. On kubesim, and on localkube's node agent, these
tests are skipped: neither pulls an image, so neither has a registry to refuse one
(cluster/pullauth.py's unit tests hold the messages recorded on the real node).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.conftest import Localkube
from tests.e2e.conftest import Squarepeg, names
from tests.helpers import wait_until
from tests.localkube.private_registry import PrivateRegistry

FAIL_FAST_SECONDS = 10.0
MODES = [pytest.param(("--mode", "pod"), id="pod"), pytest.param(("--mode", "job"), id="job")]


@pytest.fixture
def registry(kubesim: Any) -> PrivateRegistry:
    if not (isinstance(kubesim, Localkube) and kubesim.node == "kubelet"):
        pytest.skip("needs a node that pulls images from a registry asking for credentials: "
                    "localkube's kubelet node only (kubesim and the node agent pull nothing)")
    return kubesim.private_registry


def create_pull_secret(kubesim: Any, namespace: str, name: str, registry: PrivateRegistry,
                       password: str) -> None:
    done = kubesim.kubectl("create", "secret", "docker-registry", name, "-n", namespace,
                           f"--docker-server={registry.host}",
                           f"--docker-username={registry.user}",
                           f"--docker-password={password}")
    assert done.returncode == 0, done.stderr


def errors(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("squarepeg: error:")]


@pytest.mark.parametrize("mode", MODES)
def test_without_credentials_it_fails_fast_naming_the_flag(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, registry: PrivateRegistry,
    mode: tuple[str, ...],
) -> None:
    began = time.monotonic()
    done = squarepeg("run", *mode, "--timeout", "120", registry.image, "echo", "never")
    elapsed = time.monotonic() - began
    assert done.code == 125, done.stderr
    assert done.stdout == b""
    assert elapsed < FAIL_FAST_SECONDS, f"took {elapsed:.1f}s: it waited instead of failing"
    said = errors(done.lines)
    assert len(said) == 1, done.lines
    assert (f"refused to pull {registry.image} without credentials" in said[0]
            and "pass `--image-pull-secret NAME`" in said[0]
            and f"`kubectl create secret docker-registry NAME --docker-server={registry.host} "
                "--docker-username=USER --docker-password=PASSWORD "
                f"--context={kubesim.context} "
                f"--namespace={namespace}`" in said[0]), said[0]
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the run's pod and job to be gone")


@pytest.mark.parametrize("mode", MODES)
def test_with_the_secret_the_run_works(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, registry: PrivateRegistry,
    mode: tuple[str, ...],
) -> None:
    create_pull_secret(kubesim, namespace, "private-pull", registry, registry.password)
    done = squarepeg("run", *mode, "--image-pull-secret", "private-pull", registry.image,
                     "sh", "-c", "echo from the private registry; exit 7")
    assert done.code == 7, done.stderr
    assert done.stdout == b"from the private registry\n"
    assert errors(done.lines) == []


def test_a_secret_the_registry_refuses_is_named(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, registry: PrivateRegistry,
) -> None:
    create_pull_secret(kubesim, namespace, "stale-pull", registry, "not-the-password")
    began = time.monotonic()
    done = squarepeg("run", "--image-pull-secret", "stale-pull", registry.image, "true")
    elapsed = time.monotonic() - began
    assert done.code == 125, done.stderr
    assert elapsed < FAIL_FAST_SECONDS, f"took {elapsed:.1f}s: it waited instead of failing"
    said = errors(done.lines)
    assert len(said) == 1, done.lines
    assert "with the credentials of --image-pull-secret stale-pull" in said[0], said[0]
    assert "401 Unauthorized" in said[0], said[0]
    assert "check that the Secret stale-pull exists in the namespace" in said[0], said[0]
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the run's pod to be gone")
