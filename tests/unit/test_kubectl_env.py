"""kubectl.start's edges that need no kubectl: the environment children get (the user's,
whole, with nothing of squarepeg's added), the size of their stdout pipes, and a kubectl
that vanished."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from kubectl_squarepeg.cluster import kubectl


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


def _mask(status: str, field: str) -> int:
    line = next(ln for ln in status.splitlines() if ln.startswith(field + ":"))
    return int(line.split()[1], 16)


def _bit(signum: int) -> int:
    return 1 << (signum - 1)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's /proc")
def test_a_child_execs_with_the_stop_signals_unblocked_and_a_parents_mask_is_restored(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The exec'd program reports its own signal masks: blocked from the fork to the
    # pre-exec hook, the stop signals must be unblocked again by the time it runs, with
    # SIGINT and SIGTERM at their defaults and SIGHUP ignored (sh's `_bg`).
    program = tmp_path / "kubectl"
    program.write_text("#!/bin/sh\nexec cat /proc/self/status\n")
    program.chmod(0o755)
    monkeypatch.setattr(kubectl, "_kubectl_path", lambda: str(program))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    result = kubectl.collect(kubectl.start(["status"]), timeout=30)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    status = result.stdout.decode()
    blocked, ignored = _mask(status, "SigBlk"), _mask(status, "SigIgn")
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        assert not blocked & _bit(signum), signal.Signals(signum).name
    assert ignored & _bit(signal.SIGHUP)
    assert not ignored & (_bit(signal.SIGINT) | _bit(signal.SIGTERM))


def _hook_in_a_child(pending: signal.Signals) -> int:
    """Fork; in the child, as after sh's fork: the stop signals blocked, Python's handler
    for SIGINT installed, `pending` sent to itself; then the pre-exec hook, then exit 0.
    Returns the child's wait status."""
    hook = kubectl._child_hook()  # made in the parent, as kubectl.start makes it
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, kubectl._STOP_SIGNALS)
    try:
        pid = os.fork()
        if pid == 0:
            try:
                signal.signal(signal.SIGINT, lambda *_: os._exit(3))  # squarepeg's own
                os.kill(os.getpid(), pending)
                hook()
            finally:
                os._exit(0)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    return os.waitpid(pid, 0)[1]


def test_a_ctrl_c_that_reached_a_child_before_its_exec_is_discarded_there() -> None:
    # The terminal's Ctrl-C is squarepeg's to act on (the parent got it too): the child
    # neither runs squarepeg's handler (exit 3) nor dies of it.
    for pending in (signal.SIGINT, signal.SIGHUP):
        status = _hook_in_a_child(pending)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, pending.name


def test_a_sigterm_that_reached_a_child_before_its_exec_ends_it() -> None:
    status = _hook_in_a_child(signal.SIGTERM)  # terminate_all's: the child must not live on
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
