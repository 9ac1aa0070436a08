"""Ctrl-C and SIGTERM during a run, the way a terminal delivers them.

The command runs on a pseudo-terminal as the session leader of its own session, so writing
`\\x03` to the terminal makes the kernel send SIGINT to the terminal's foreground process
group, exactly as a keyboard Ctrl-C does (never `os.kill` on squarepeg's pid alone). The
kubectl children squarepeg started must not see it: they are in sessions of their own.

The container is a shell as PID 1, which has no SIGTERM handler, so the kernel drops the
SIGTERM of the delete (on the real node and on kubesim alike): its pod stays Terminating for
its whole grace period, here `--stop-timeout` seconds, and squarepeg does not wait for it
(docs/decisions/0140-stop-exits-promptly.md).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubectl_squarepeg.run import orphans
from tests.e2e.conftest import (
    Squarepeg,
    age_the_finish,
    names,
    skip_where_the_kubelet_owns_pod_status,
    wait_until,
)
from tests.e2e.test_run import pod_phase
from tests.helpers import processes, stop_process

STOP_TIMEOUT = 3
SLEEPER = ("--stop-timeout", str(STOP_TIMEOUT), "alpine", "sh", "-c", "echo ready; sleep 120")
# How soon after the signal squarepeg must have exited: its cleanup is one request (the
# delete, prepared while the container ran), not the pod's grace period.
PROMPT_SECONDS = 2.5
# How long a deleted pod may take to go: its grace period, then the kubelet's confirmation.
GONE_SECONDS = STOP_TIMEOUT + 20
# Another user's pod with the run's name: long enough to be still terminating when the run
# is refused, on a loaded machine too.
THEIR_GRACE = 20


def terminating_line(ref: str) -> str:
    name = ref.split("/")[1]
    if ref.startswith("job/"):
        return (f"squarepeg: {ref} is deleted; its pod is terminating: its container was sent "
                f"SIGTERM and is killed if it has not exited within {STOP_TIMEOUT}s "
                "(--stop-timeout)")
    return (f"squarepeg: {ref} is terminating: its container was sent SIGTERM and is killed "
            f"if it has not exited within {STOP_TIMEOUT}s (--stop-timeout); the name {name} "
            "is taken until then")


def _make_controlling_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """One command on a pty of its own; stderr and stdout go to files we can poll."""

    def __init__(self, squarepeg: Squarepeg, tmp_path: Path, *args: str,
                 env: dict[str, str] | None = None) -> None:
        self.master, slave = os.openpty()
        self.err = tmp_path / "stderr"
        self.out = tmp_path / "stdout"
        with self.err.open("wb") as err, self.out.open("wb") as out:
            self.process = squarepeg.start(
                *args, env=env, stdin=slave, stdout=out, stderr=err,
                start_new_session=True, preexec_fn=_make_controlling_terminal,
            )
        os.close(slave)

    def ctrl_c(self) -> None:
        os.write(self.master, b"\x03")
        self.signalled_at = time.monotonic()

    def stderr(self) -> str:
        return self.err.read_text()

    def wait(self, seconds: float = 60) -> int:
        return self.process.wait(seconds)

    def seconds_to_exit(self) -> float:
        """From the last Ctrl-C to squarepeg's exit (polled: the wait is in the test)."""
        wait_until(lambda: self.process.poll() is not None, 60, "squarepeg to exit", 0.01)
        return time.monotonic() - self.signalled_at

    def close(self) -> None:
        stop_process(self.process)
        os.close(self.master)


@pytest.fixture
def terminal(squarepeg: Squarepeg, tmp_path: Path) -> Iterator[Any]:
    opened: list[Terminal] = []

    def open_terminal(*args: str, env: dict[str, str] | None = None) -> Terminal:
        term = Terminal(squarepeg, tmp_path, *args, env=env)
        opened.append(term)
        return term

    yield open_terminal
    for term in opened:
        term.close()


def wait_for_output(term: Terminal) -> None:
    wait_until(lambda: term.out.read_bytes() == b"ready\n", 60, "the container's first line")


@pytest.mark.parametrize("mode", ["pod", "job"])
@pytest.mark.smoke("ctrl-c")
def test_one_ctrl_c_cleans_up_and_exits_130(
    terminal: Any, kubesim: Any, namespace: str, mode: str
) -> None:
    ref = f"{mode}/ctrl-c-{mode}"
    term = terminal("run", "--mode", mode, "--name", f"ctrl-c-{mode}", *SLEEPER)
    wait_for_output(term)
    term.ctrl_c()
    took = term.seconds_to_exit()
    assert term.wait() == 130, term.stderr()
    assert took < PROMPT_SECONDS, (took, term.stderr())  # not the pod's grace period
    # No word about a second Ctrl-C: squarepeg has exited before anyone could press it.
    assert _interrupted_lines(term.stderr()) == [
        f"squarepeg: warning: interrupted (SIGINT): stopping and deleting {ref}",
        terminating_line(ref),
    ], term.stderr()  # once each: the first was sometimes printed twice
    gone = time.monotonic()
    wait_until(lambda: names(kubesim, namespace) == [], GONE_SECONDS, "the resource to be deleted")
    # The shell as PID 1 ignored the SIGTERM: the pod went only when its grace period ended.
    assert time.monotonic() - gone > STOP_TIMEOUT - PROMPT_SECONDS - 1


def test_a_name_whose_earlier_pod_of_yours_terminates_is_waited_for(
    terminal: Any, squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    # Decision 0340 (was 0141's refusal): the earlier pod is the user's own and on its way
    # out, so the run waits for it (at most its grace period, --stop-timeout) and proceeds.
    term = terminal("run", "--name", "again", *SLEEPER)
    wait_for_output(term)
    term.ctrl_c()
    assert term.wait() == 130, term.stderr()
    began = time.monotonic()
    again = squarepeg("run", "--name", "again", "alpine", "echo", "second")
    assert again.code == 0, again.stderr
    assert again.stdout == b"second\n"
    assert time.monotonic() - began < STOP_TIMEOUT + GONE_SECONDS
    wait_until(lambda: names(kubesim, namespace) == [], GONE_SECONDS, "the pod to go")


def test_a_name_held_by_someone_elses_terminating_pod_says_for_how_long_at_most(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    made = kubesim.kubectl(
        "run", "theirs", "--restart=Never", "--image=alpine",
        "--labels=app.kubernetes.io/managed-by=squarepeg,squarepeg.io/created-by=someone-else",
        "--overrides", json.dumps({"spec": {"terminationGracePeriodSeconds": THEIR_GRACE}}),
        "-n", namespace, "--", "sleep", "300",
    )
    assert made.returncode == 0, made.stderr
    wait_until(lambda: pod_phase(kubesim, namespace, "theirs") == "Running", GONE_SECONDS,
               "their pod to run")
    deleted = kubesim.kubectl("delete", "pod", "theirs", "-n", namespace, "--wait=false")
    assert deleted.returncode == 0, deleted.stderr
    again = squarepeg("run", "--name", "theirs", "alpine", "true")
    assert again.code == 125, again.stderr
    [said] = [line for line in again.lines if line.startswith("squarepeg: error:")]
    found = re.fullmatch(
        rf"squarepeg: error: cannot create pod/theirs in namespace {namespace}: an earlier "
        r"pod/theirs is still terminating; its grace period ends in (\d+)s at most "
        r"\(\d\d:\d\d:\d\d UTC\), when it is killed if it has not exited; wait for it with "
        r"`kubectl wait --for=delete pod/theirs --timeout=(\d+)s [^`]+` and run again, or "
        r"choose another --name",
        said,
    )
    assert found is not None, said
    assert int(found.group(1)) <= THEIR_GRACE
    assert "kubectl delete" not in again.stderr  # not what is already being deleted
    wait_until(lambda: names(kubesim, namespace) == [], GONE_SECONDS + THEIR_GRACE,
               "their pod to go")


@pytest.mark.parametrize("mode", ["pod", "job"])
def test_three_runs_of_one_name_back_to_back_all_succeed(
    squarepeg: Squarepeg, mode: str
) -> None:
    for attempt in range(3):
        done = squarepeg("run", "--mode", mode, "--name", "migrate", "alpine", "echo",
                         str(attempt))
        assert (done.code, done.stdout) == (0, f"{attempt}\n".encode()), done.stderr


SLOW_DELETE = """#!/bin/sh
# The real kubectl, but a delete takes its input, then waits as a busy apiserver would.
for word in "$@"; do
  if [ "$word" = delete ]; then
    cat > "{dir}/delete-input.$$"
    sleep 30
    exec "{real}" "$@" < "{dir}/delete-input.$$"
  fi
done
exec "{real}" "$@"
"""


def slow_deletes(tmp_path: Path) -> dict[str, str]:
    """A PATH whose kubectl is the real one, with deletes that take 30 s to begin: the
    first stage's cleanup is then certain to be in progress when the second Ctrl-C comes."""
    real = shutil.which("kubectl")
    assert real is not None
    shim_dir = tmp_path / "slow-delete"
    shim_dir.mkdir()
    shim = shim_dir / "kubectl"
    shim.write_text(SLOW_DELETE.format(dir=shim_dir, real=real))
    shim.chmod(0o755)
    return {"PATH": f"{shim_dir}{os.pathsep}{os.environ['PATH']}"}


def test_two_ctrl_c_say_only_what_is_known_and_name_it(
    terminal: Any, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    # The second Ctrl-C comes once the delete's manifest has reached kubectl, which the
    # slow apiserver holds up: the pod is then neither known to be running nor gone.
    term = terminal("run", "--name", "going", *SLEEPER, env=slow_deletes(tmp_path))
    wait_for_output(term)
    term.ctrl_c()
    handed_over = tmp_path / "slow-delete"
    wait_until(lambda: any(f.stat().st_size for f in handed_over.glob("delete-input.*")), 30,
               "the delete's manifest to reach kubectl")
    # The cleanup is held up: now, and only now, a line says what a second Ctrl-C does.
    hint = ("squarepeg: warning: still deleting pod/going after 2s; press Ctrl-C again to stop "
            "waiting for the API server and exit at once")
    wait_until(lambda: hint in term.stderr(), 10, "the hint about a second Ctrl-C")
    term.ctrl_c()
    try:
        assert term.wait() == 130, term.stderr()
        assert _interrupted_lines(term.stderr()) == [
            "squarepeg: warning: interrupted (SIGINT): stopping and deleting pod/going",
            hint,
            "squarepeg: warning: interrupted again: cleanup abandoned; a delete of pod/going "
            "was sent, so it may be gone or going; check: kubectl get pod going "
            f"--context={kubesim.context} --namespace={namespace}",
            "squarepeg: warning: delete it if it is not: kubectl delete pod going "
            f"--context={kubesim.context} --namespace={namespace}",
        ], term.stderr()
        phase = kubesim.kubectl(
            "get", "pod", "going", "-n", namespace, "-o", "jsonpath={.status.phase}"
        )
        assert phase.stdout == b"Running"  # the delete was abandoned with its kubectl
    finally:
        kubesim.kubectl("delete", "pod", "going", "-n", namespace, "--wait=false")


def test_sigterm_behaves_as_the_first_ctrl_c(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    out = tmp_path / "stdout"
    with out.open("wb") as handle:
        process = squarepeg.start("run", "--name", "terminated", *SLEEPER, stdout=handle)
    wait_until(lambda: out.read_bytes() == b"ready\n", 60, "the container's first line")
    process.send_signal(signal.SIGTERM)
    began = time.monotonic()
    done = squarepeg.finish(process, timeout=60)
    took = time.monotonic() - began
    assert done.code == 130, done.stderr
    assert took < PROMPT_SECONDS, (took, done.stderr)
    assert _interrupted_lines(done.stderr) == [
        "squarepeg: warning: interrupted (SIGTERM): stopping and deleting pod/terminated",
        terminating_line("pod/terminated"),
    ], done.stderr
    wait_until(lambda: names(kubesim, namespace) == [], GONE_SECONDS, "the pod to be deleted")


def kubectl_children_of(kubeconfig: str) -> list[int]:
    """Pids of kubectl processes whose environment points at this simulator."""
    return [pid for pid, (cmdline, environ) in processes("cmdline", "environ")
            if b"kubectl" in cmdline.split(b"\0")[0] and kubeconfig.encode() in environ]


def test_sigkill_leaves_the_pod_and_no_kubectl_and_a_later_run_sweeps_it(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    skip_where_the_kubelet_owns_pod_status(kubesim)
    out = tmp_path / "stdout"
    with out.open("wb") as handle:
        process = squarepeg.start(
            "run", "--name", "killed", "alpine", "sh", "-c", "echo ready; sleep 1",
            stdout=handle,
        )
    wait_until(lambda: out.read_bytes() == b"ready\n", 60, "the container's first line")
    process.kill()
    process.wait(10)
    # The kubectl children die with squarepeg; the pod stays and finishes on its own.
    wait_until(lambda: not kubectl_children_of(str(kubesim.kubeconfig)), 10, "kubectl to end")
    assert names(kubesim, namespace) == ["pod/killed"]
    wait_until(
        lambda: kubesim.kubectl(
            "get", "pod", "killed", "-n", namespace, "-o", "jsonpath={.status.phase}"
        ).stdout == b"Succeeded",
        30, "the orphan to finish",
    )
    # As if it had finished a while ago: no sweep takes a pod that finished less than
    # orphans.FINISHED_FLOOR_SECONDS ago, whatever orphan_sweep_min_age says.
    age_the_finish(kubesim, namespace, "pod/killed", orphans.FINISHED_FLOOR_SECONDS + 60)
    config = tmp_path / "sweep-fast.yaml"
    config.write_text("orphan_sweep_min_age: 1\n")
    later = None

    def swept() -> bool:
        nonlocal later
        later = squarepeg("run", "--config", str(config), "alpine", "true")
        return "pod/killed" not in names(kubesim, namespace)

    wait_until(swept, 30, "a later run to sweep the orphan")
    assert later is not None and later.code == 0
    assert later.has_line("orphan sweep", "pod/killed"), later.lines


CTRL_C_POINTS = [i * 0.05 for i in range(20)]  # 20 moments in the first second of a run


def _before_squarepeg_ran(stderr: str) -> bool:
    """A KeyboardInterrupt that Python raised while it was still starting up or locating the
    package (no frame of squarepeg's own code in it): the one moment no code of squarepeg's
    can cover (docs/decisions/0035)."""
    if not stderr.rstrip().endswith("KeyboardInterrupt"):
        return False
    if stderr.startswith("Fatal Python error: init_import_site"):
        return True  # interrupted in site.py, before any import of squarepeg's
    if not stderr.startswith("Traceback"):
        return False
    return "kubectl_squarepeg/" not in stderr.replace(".venv/bin/kubectl-squarepeg", "")


def _interrupted_lines(stderr: str) -> list[str]:
    """squarepeg's lines other than the "using context" banner."""
    return [
        line for line in stderr.splitlines()
        if line.startswith("squarepeg:") and "using context" not in line
    ]


def test_a_ctrl_c_at_any_moment_of_start_up_is_one_line_130_and_leaves_nothing(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    outcomes = []
    python_start_ups: list[float] = []
    for index, delay in enumerate(CTRL_C_POINTS):
        where = tmp_path / f"point-{index}"
        where.mkdir()
        term = Terminal(squarepeg, where, "run", *SLEEPER)
        try:
            began = time.monotonic()
            wait_until(lambda: time.monotonic() - began >= delay, 5,  # noqa: B023
                       f"{delay:.2f}s into the run")
            term.ctrl_c()
            code = term.wait(60)
        finally:
            term.close()
        stderr = term.stderr()
        outcomes.append((delay, code, stderr))
        # Killed by SIGINT before Python had installed any handler is how a shell's 130
        # looks from here: no line, nothing created.
        if _before_squarepeg_ran(stderr):
            python_start_ups.append(delay)
        else:
            assert code in (130, -signal.SIGINT), (delay, code, stderr)
            assert "Traceback" not in stderr, (delay, stderr)
        said = [line for line in _interrupted_lines(stderr) if "interrupted" in line]
        assert len(said) <= 1, (delay, stderr)
        wait_until(lambda: names(kubesim, namespace) == [], GONE_SECONDS,
                   f"nothing left after a Ctrl-C {delay:.2f}s in")
    assert any(code == 130 for _, code, _ in outcomes)
    assert len(python_start_ups) <= 2, python_start_ups  # only the first few milliseconds
