"""kubectl.start's edges that need no kubectl: the environment children get (the user's,
whole, with nothing of squarepeg's added), the size of their stdout pipes, and a kubectl
that vanished."""

from __future__ import annotations

import fcntl
import os

import pytest

from kubectl_squarepeg import kubectl


def test_children_get_the_users_environment_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.setenv("KUBECONFIG", "/somewhere/config")
    environ = kubectl._child_environment()
    assert environ == dict(os.environ)  # sh's _env replaces the environment: all of it
    assert environ["KUBECONFIG"] == "/somewhere/config"
    assert "GOGC" not in environ


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
    reader = kubectl._PipeReader(kubectl._ByteSink(lambda chunk: None), 65536, capacity=1 << 20)
    try:
        assert fcntl.fcntl(reader.write_fd, fcntl.F_GETPIPE_SZ) == 1 << 20
    finally:
        reader.abandon()
    # More than the system allows: the default stays, and nothing is raised.
    reader = kubectl._PipeReader(kubectl._ByteSink(lambda chunk: None), 65536, capacity=1 << 40)
    try:
        assert fcntl.fcntl(reader.write_fd, fcntl.F_GETPIPE_SZ) >= 4096
    finally:
        reader.abandon()
