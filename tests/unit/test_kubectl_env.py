"""kubectl.start's edges that need no kubectl: the environment children get (the user's,
with a higher Go GC target unless the user chose one), the size of their stdout pipes, and
a kubectl that vanished."""

from __future__ import annotations

import fcntl

import pytest

from kubectl_squarepeg import kubectl


def test_children_get_the_users_environment_and_a_gc_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.setenv("KUBECONFIG", "/somewhere/config")
    environ = kubectl._child_environment()
    assert environ["GOGC"] == "200"
    assert environ["KUBECONFIG"] == "/somewhere/config"


def test_a_gc_target_the_user_set_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOGC", "50")
    assert kubectl._child_environment()["GOGC"] == "50"


def test_a_kubectl_gone_since_it_was_found_is_kubectl_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The exec of a file that does not exist fails: no kubectl ever runs.
    monkeypatch.setattr(kubectl, "_kubectl_path", lambda: "/nonexistent/kubectl")
    held = kubectl.HeldStdin()
    with pytest.raises(kubectl.KubectlMissing):
        kubectl.start(["version"], stdin=held)
    assert kubectl.running_children() == []
    held.release(b"{}")  # closed by the failed start: a no-op, no error


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="pipe sizes are Linux's")
def test_stdout_pipes_are_enlarged_where_the_system_allows() -> None:
    reader = kubectl._PipeReader(kubectl._ByteSink(None), 65536, capacity=1 << 20)
    try:
        assert fcntl.fcntl(reader.write_fd, fcntl.F_GETPIPE_SZ) == 1 << 20
    finally:
        reader.abandon()
    # More than the system allows: the default stays, and nothing is raised.
    reader = kubectl._PipeReader(kubectl._ByteSink(None), 65536, capacity=1 << 40)
    try:
        assert fcntl.fcntl(reader.write_fd, fcntl.F_GETPIPE_SZ) >= 4096
    finally:
        reader.abandon()
