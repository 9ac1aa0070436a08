"""The soak's judgment of a run on the real node (scripts/soak): what the node's CRI log file
holds, and when a run's short output is containerd's loss rather than squarepeg's. The runs
themselves are tests/e2e/test_soak.py's."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

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


def test_a_cri_log_file_gives_the_output_with_split_lines_joined(soak: ModuleType) -> None:
    log = (b"2026-12-07T15:27:45.1Z stdout F one\n"
           b"2026-12-07T15:27:45.2Z stderr P par\n"
           b"2026-12-07T15:27:45.3Z stderr F tial\n"
           b"2026-12-07T15:27:45.4Z stdout F \n"
           b"2026-12-07T15:27:45.5Z stdout F \xff\x00 bytes\r\n")
    assert soak.cri_log_output(log) == b"one\npartial\n\n\xff\x00 bytes\r\n"


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
