"""The macOS branch of the one Linux-only call, run on this machine (docs/release.md,
Platforms): the parent-death signal of kubectl's children (prctl) is requested on Linux
only, and a child's start-up hook works without it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from kubectl_squarepeg.cluster import kubectl


@pytest.fixture
def on_macos(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "platform", "darwin")
    kubectl._prctl.cache_clear()
    yield
    monkeypatch.undo()
    kubectl._prctl.cache_clear()


def test_prctl_is_looked_up_on_linux_only(on_macos: None) -> None:
    assert kubectl._prctl() is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux branch")
def test_prctl_is_found_on_linux() -> None:
    kubectl._prctl.cache_clear()
    assert kubectl._prctl() is not None


def test_a_childs_start_up_hook_runs_without_prctl(on_macos: None) -> None:
    hook = kubectl._child_hook()  # as squarepeg builds it on macOS
    pid = os.fork()
    if pid == 0:  # the child: the hook, as sh's preexec_fn runs it, then out
        try:
            hook()
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
