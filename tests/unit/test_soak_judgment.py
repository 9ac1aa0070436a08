"""The soak's judgment of a run on the real node (scripts/soak): what the node's CRI log files
hold (tests/localkube/nodelogs.py), and when a run's short output is containerd's loss rather
than squarepeg's. The runs themselves are tests/e2e/test_soak.py's."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers import wait_until
from tests.localkube.nodelogs import NodeLogKeeper, cri_log_output

SOAK = Path(__file__).resolve().parents[2] / "scripts" / "soak"


@pytest.fixture(scope="module")
def soak() -> Iterator[ModuleType]:
    loader = importlib.machinery.SourceFileLoader("soak_script", str(SOAK))
    spec = importlib.util.spec_from_loader("soak_script", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["soak_script"] = module  # dataclasses look their module up
    try:
        loader.exec_module(module)
        yield module
    finally:
        del sys.modules["soak_script"]


def test_a_cri_log_file_gives_the_output_with_split_lines_joined() -> None:
    log = (b"2026-12-07T15:27:45.1Z stdout F one\n"
           b"2026-12-07T15:27:45.2Z stderr P par\n"
           b"2026-12-07T15:27:45.3Z stderr F tial\n"
           b"2026-12-07T15:27:45.4Z stdout F \n"
           b"2026-12-07T15:27:45.5Z stdout F \xff\x00 bytes\r\n")
    assert cri_log_output(log) == b"one\npartial\n\n\xff\x00 bytes\r\n"


def test_the_keeper_keeps_every_file_of_a_pod_across_a_rotation(tmp_path: Path) -> None:
    node = tmp_path / "node"
    logs = node / "var-log" / "pods" / "ns_pod-a_uid-1" / "main"
    logs.mkdir(parents=True)
    current = logs / "0.log"
    current.write_bytes(b"2026-12-07T15:27:45.1Z stdout F one\n")
    nodes = json.dumps({"nodes": [{"stateDirectory": str(node)}]})
    keeper = NodeLogKeeper(lambda *args: nodes, "ns", tmp_path / "kept")
    try:
        wait_until(lambda: keeper.output("pod-a") is not None, 10, "the first file kept")
        # The kubelet renames the file; containerd writes on to it until it reopens.
        rotated = logs / "0.log.20261207-152746"
        current.rename(rotated)
        with rotated.open("ab") as old:
            old.write(b"2026-12-07T15:27:45.2Z stdout F two\n")
        current.write_bytes(b"2026-12-07T15:27:46.1Z stdout P thr\n")
        wait_until(lambda: keeper.output("pod-a") == b"one\ntwo\nthr", 10, "both files")
        # The kubelet removes the rotated file and, with the pod, the current one.
        rotated.unlink()
        with current.open("ab") as new:
            new.write(b"2026-12-07T15:27:46.2Z stdout F ee\n")
        current.unlink()
        assert keeper.output("pod-a") == b"one\ntwo\nthree\n"
        assert keeper.output("pod-b") is None
    finally:
        keeper.close()
    assert keeper.problem is None


def test_the_keeper_keeps_a_second_attempts_file(tmp_path: Path) -> None:
    # A container created but not started when the kubelet restarted is created again as
    # attempt 1: the pod's output is in 1.log, and 0.log stays empty.
    node = tmp_path / "node"
    logs = node / "var-log" / "pods" / "ns_pod-a_uid-1" / "main"
    logs.mkdir(parents=True)
    (logs / "0.log").write_bytes(b"")
    nodes = json.dumps({"nodes": [{"stateDirectory": str(node)}]})
    keeper = NodeLogKeeper(lambda *args: nodes, "ns", tmp_path / "kept")
    try:
        wait_until(lambda: keeper.output("pod-a") == b"", 10, "the empty first file kept")
        (logs / "1.log").write_bytes(b"2026-12-07T15:27:45.1Z stdout F one\n")
        wait_until(lambda: keeper.output("pod-a") == b"one\n", 10, "the second attempt's file")
    finally:
        keeper.close()


def _run(soak: ModuleType, stdout: bytes, *, code: int | None = None) -> object:
    run = soak.Run(9, "soak-9", began=100.0, ended=130.0)
    run.code = soak.exit_code(9) if code is None else code
    run.stdout = stdout
    return run


EXPECTED = b"a\nb\nc\n"
RESTART = [(120.0, 127.0)]  # containerd down and coming back while run 9 ran


def test_the_runtime_lost_the_tail_when_stdout_is_what_the_node_kept(soak: ModuleType) -> None:
    run = _run(soak, b"a\n")
    assert soak.runtime_lost(run, EXPECTED, b"a\n", RESTART) == 4


@pytest.mark.parametrize(
    ("why", "stdout", "kept", "restarts", "code"),
    [
        ("squarepeg printed less than the node kept", b"a\n", b"a\nb\n", RESTART, None),
        ("no containerd restart during the run", b"a\n", b"a\n", [(131.0, 140.0)], None),
        ("the node's file was never seen", b"a\n", None, RESTART, None),
        ("the exit code is not the container's", b"a\n", b"a\n", RESTART, 1),
        ("the node kept everything", EXPECTED, EXPECTED, RESTART, None),
    ],
)
def test_anything_else_is_not_the_runtimes_loss(
    soak: ModuleType, why: str, stdout: bytes, kept: bytes | None,
    restarts: list[tuple[float, float]], code: int | None,
) -> None:
    assert soak.runtime_lost(_run(soak, stdout, code=code), EXPECTED, kept, restarts) == 0, why
