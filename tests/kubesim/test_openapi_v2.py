"""kubectl before 1.29 reads `/openapi/v2` in protobuf before `create --dry-run=server` (to
learn that the server validates fields itself): kubesim's hand-written document must parse
in that kubectl and say so, so that an unknown field is still refused by the server."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Kubesim, find_kubectl, kubesim_alone

POD = b"""apiVersion: v1
kind: Pod
metadata: {name: planned}
spec:
  %s
  containers: [{name: c, image: busybox, command: ["true"]}]
"""


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubesim]:
    yield from kubesim_alone(tmp_path_factory)


@pytest.fixture(scope="module")
def kubectl_127() -> Path:
    if shutil.which("kubectl") is None:
        pytest.skip("no kubectl")
    try:
        return find_kubectl("1.27")
    except pytest.UsageError:
        pytest.skip("no kubectl.1.27 on this machine (the dispatcher's folder holds them)")


def test_kubectl_127_dry_run_server_reads_openapi_v2_and_leaves_validation_to_the_server(
        sim: Kubesim, kubectl_127: Path) -> None:
    def dry(extra: bytes) -> tuple[int, str, str]:
        done = sim.kubectl("create", "-f", "-", "--dry-run=server", "-o", "name",
                           "-n", "default", "-v=6", input=POD % extra, binary=str(kubectl_127))
        return done.returncode, done.stdout.decode(), done.stderr.decode()

    code, out, err = dry(b"")
    assert (code, out) == (0, "pod/planned\n"), err
    assert "/openapi/v2?" in err and "fieldValidation=Strict" in err, err
    code, out, err = dry(b"bogus: 1")
    assert code == 1 and 'unknown field "spec.bogus"' in err, err
    assert sim.kubectl("get", "pods", "-n", "default", "-o", "name").stdout == b""
