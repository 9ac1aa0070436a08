"""The two-stage handler: in-process with raised signals, and in a subprocess for the real exit."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections.abc import Iterator

import pytest

from kubectl_squarepeg.cluster import kubectl
from kubectl_squarepeg.errors import Interrupted
from kubectl_squarepeg.run import interrupt
from kubectl_squarepeg.terminal.console import Console
from tests.helpers import wait_until

TARGET = kubectl.Target(context="kubesim", kubeconfig="/home/u/.kube/config", namespace="ci")
POD = interrupt.Resource("Pod", "squarepeg-alpine-a1b2c3", TARGET)
FIRST = (
    "squarepeg: warning: interrupted (SIGINT): stopping and deleting "
    "pod/squarepeg-alpine-a1b2c3\n"
)
ABANDON = (
    "squarepeg: warning: interrupted again: cleanup abandoned; pod/squarepeg-alpine-a1b2c3 is "
    "left running in namespace ci\n"
    "squarepeg: warning: inspect it: kubectl describe pod squarepeg-alpine-a1b2c3 "
    "--kubeconfig=/home/u/.kube/config --context=kubesim --namespace=ci\n"
    "squarepeg: warning: delete it: kubectl delete pod squarepeg-alpine-a1b2c3 "
    "--kubeconfig=/home/u/.kube/config --context=kubesim --namespace=ci\n"
)


def _wait_for(condition: threading.Event, seconds: float = 2.0) -> None:
    """Waits in the main thread, where the handler runs, until `condition` or a deadline."""
    deadline = time.monotonic() + seconds
    while not condition.is_set() and time.monotonic() < deadline:
        condition.wait(0.01)


@pytest.fixture
def stderr() -> io.StringIO:
    return io.StringIO()


@pytest.fixture
def abandoned() -> threading.Event:
    return threading.Event()


@pytest.fixture
def handler(
    stderr: io.StringIO, abandoned: threading.Event
) -> Iterator[interrupt.TwoStageInterrupt]:
    with interrupt.guard(POD, Console(stderr), abandon=abandoned.set) as h:
        h.progress.created = True
        yield h


def test_first_signal_raises_interrupted_and_says_it_stops(
    handler: interrupt.TwoStageInterrupt, stderr: io.StringIO
) -> None:
    with pytest.raises(Interrupted) as caught:
        signal.raise_signal(signal.SIGINT)
        _wait_for(threading.Event())
    assert caught.value.message == "interrupted by SIGINT"
    assert caught.value.exit_code == 130
    assert handler.interrupted
    assert stderr.getvalue() == FIRST


def test_sigterm_is_a_first_stage_too(handler: interrupt.TwoStageInterrupt) -> None:
    with pytest.raises(Interrupted, match=r"^interrupted by SIGTERM$"):
        signal.raise_signal(signal.SIGTERM)
        _wait_for(threading.Event())


def test_second_signal_abandons_and_prints_the_commands_to_manage_the_resource(
    handler: interrupt.TwoStageInterrupt, stderr: io.StringIO, abandoned: threading.Event
) -> None:
    with pytest.raises(Interrupted):
        signal.raise_signal(signal.SIGINT)
        _wait_for(threading.Event())
    with handler.shield(raise_pending=False):  # the cleanup
        signal.raise_signal(signal.SIGTERM)
        _wait_for(abandoned)
    assert abandoned.is_set()
    assert stderr.getvalue() == FIRST + ABANDON


def _abandon_lines(progress: interrupt.Progress) -> list[str]:
    stderr = io.StringIO()
    handler = interrupt.TwoStageInterrupt(
        POD, Console(stderr), abandon=lambda: None, progress=progress
    )
    for _ in range(2):
        with contextlib.suppress(Interrupted):
            handler._handle(signal.SIGINT, None)
    return stderr.getvalue().splitlines()[1:]


def test_after_a_delete_was_sent_the_second_signal_says_it_may_be_gone() -> None:
    progress = interrupt.Progress()
    progress.created = progress.delete_sent = True
    lines = _abandon_lines(progress)
    assert "a delete of pod/squarepeg-alpine-a1b2c3 was sent, so it may be gone" in lines[0]
    assert not any("left running" in line for line in lines)
    assert "kubectl get pod squarepeg-alpine-a1b2c3 --kubeconfig" in lines[0]


def test_before_the_create_was_confirmed_the_second_signal_says_it_may_exist() -> None:
    lines = _abandon_lines(interrupt.Progress())
    assert "pod/squarepeg-alpine-a1b2c3 may have been created" in lines[0]
    assert not any("left running" in line for line in lines)


def test_a_second_signal_inside_the_first_ones_handler_still_abandons() -> None:
    # Python runs a handler between bytecodes, so the second Ctrl-C can cut into the first
    # one's, while it holds the lock of the hint's Event (`arm`). The CI of 6 December hung
    # there: the second stage cancelled the hint and waited for that lock forever.
    abandoned = threading.Event()
    handler = interrupt.TwoStageInterrupt(POD, Console(io.StringIO()), abandon=abandoned.set)
    hint = interrupt._DelayedLine(Console(io.StringIO()), 100.0, lambda: "still stopping")
    handler._hint = hint

    def first_then_second_inside_arm() -> None:
        with contextlib.suppress(Interrupted):
            handler._handle(signal.SIGINT, None)
        with hint._armed._cond:  # as inside Event.set
            handler._handle(signal.SIGINT, None)

    main = threading.Thread(target=first_then_second_inside_arm, daemon=True)
    main.start()
    main.join(5.0)
    assert not main.is_alive()
    assert abandoned.is_set()


def test_a_hangup_first_makes_the_exit_code_129() -> None:
    handler = interrupt.TwoStageInterrupt(POD, Console(io.StringIO()), abandon=lambda: None)
    with pytest.raises(Interrupted, match="SIGHUP"):
        handler._handle(signal.SIGHUP, None)
    assert (handler.interrupted, handler.exit_code) == (True, 129)


def test_a_shield_defers_the_first_stage_until_it_ends(
    handler: interrupt.TwoStageInterrupt, stderr: io.StringIO
) -> None:
    steps: list[str] = []
    with pytest.raises(Interrupted):
        with handler.shield():  # an exit-code extraction in progress
            signal.raise_signal(signal.SIGINT)
            _wait_for(threading.Event(), 0.1)
            steps.append("extraction finished")
        steps.append("not reached")
    assert steps == ["extraction finished"]
    assert stderr.getvalue() == FIRST


def test_a_cleanup_shield_keeps_the_interrupt_without_raising_it(
    handler: interrupt.TwoStageInterrupt,
) -> None:
    with handler.shield(raise_pending=False):
        signal.raise_signal(signal.SIGINT)
        _wait_for(threading.Event(), 0.1)
    assert handler.interrupted  # the run's exit code becomes 130


def test_nested_shields_raise_only_when_the_outermost_ends(
    handler: interrupt.TwoStageInterrupt,
) -> None:
    steps: list[str] = []
    with pytest.raises(Interrupted), handler.shield():
        with handler.shield():
            signal.raise_signal(signal.SIGINT)
            _wait_for(threading.Event(), 0.05)
        steps.append("inner ended")
    assert steps == ["inner ended"]


def test_an_interrupt_while_spawning_a_child_is_raised_just_after(
    handler: interrupt.TwoStageInterrupt, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps: list[str] = []

    def start(*args: object, **kwargs: object) -> None:  # stands in for kubectl.start
        signal.raise_signal(signal.SIGINT)
        _wait_for(threading.Event(), 0.02)  # bytecodes run here: the handler has been called
        steps.append("child registered")

    monkeypatch.setattr(kubectl, "start", start)
    with pytest.raises(Interrupted):
        kubectl.start()
        steps.append("start returned")
        _wait_for(threading.Event())
    assert steps == ["child registered", "start returned"]


class _Collectable:
    """An object whose weakref callback runs when it is collected."""


def test_a_first_stage_swallowed_by_a_weakref_callback_is_raised_again(
    stderr: io.StringIO, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python cannot raise out of a weakref callback: it prints "Exception ignored" and goes
    # on. A run that went on after its warning ignored the Ctrl-C until the container ended.
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)  # Python's, not pytest's
    swallowed = threading.Event()

    def on_collect(_: object) -> None:
        signal.raise_signal(signal.SIGINT)  # the handler runs (and raises) in here
        swallowed.set()  # not reached

    with interrupt.guard(POD, Console(stderr), abandon=threading.Event().set) as handler:
        thing = _Collectable()
        watcher = weakref.ref(thing, on_collect)
        began = time.monotonic()
        with pytest.raises(Interrupted):
            del thing
            assert watcher() is None
            assert not swallowed.is_set()
            _wait_for(threading.Event(), 5.0)
        handler.caught()
    assert time.monotonic() - began < 4.0
    assert stderr.getvalue() == FIRST  # one warning: the raise again says nothing
    assert capsys.readouterr().err == ""  # nor Python's "Exception ignored" traceback


def test_a_caught_first_stage_is_not_raised_again(handler: interrupt.TwoStageInterrupt) -> None:
    with pytest.raises(Interrupted):
        signal.raise_signal(signal.SIGINT)
        _wait_for(threading.Event())
    handler.caught()
    _wait_for(threading.Event(), 4 * interrupt._UNCAUGHT_SECONDS)  # raises if redelivered


def test_a_first_stage_on_its_way_out_is_not_raised_into_a_finally(
    handler: interrupt.TwoStageInterrupt,
) -> None:
    steps: list[str] = []
    with pytest.raises(Interrupted):
        try:
            signal.raise_signal(signal.SIGINT)
            _wait_for(threading.Event())
        finally:
            _wait_for(threading.Event(), 3 * interrupt._UNCAUGHT_SECONDS)  # slow cleanup
            steps.append("finally ended")
    handler.caught()
    assert steps == ["finally ended"]


def test_kept_resource_message(stderr: io.StringIO) -> None:
    kept = interrupt.Resource("Pod", "mine", TARGET, keep=True)
    with interrupt.guard(kept, Console(stderr)), pytest.raises(Interrupted):
        signal.raise_signal(signal.SIGINT)
        _wait_for(threading.Event())
    assert stderr.getvalue() == (
        "squarepeg: warning: interrupted (SIGINT): stopping; pod/mine is kept\n"
    )


def test_job_commands_cascade_and_in_cluster_commands_name_only_the_namespace() -> None:
    job = interrupt.Resource("Job", "squarepeg-alpine-a1b2c3", TARGET)
    assert job.ref == "job/squarepeg-alpine-a1b2c3"
    assert job.describe_command() == (
        "kubectl describe job squarepeg-alpine-a1b2c3 "
        "--kubeconfig=/home/u/.kube/config --context=kubesim --namespace=ci"
    )
    assert job.delete_command() == (
        "kubectl delete job squarepeg-alpine-a1b2c3 --cascade=background "
        "--kubeconfig=/home/u/.kube/config --context=kubesim --namespace=ci"
    )
    temp = kubectl.Target(kubeconfig="/tmp/squarepeg-sa-x/kubeconfig", namespace="build")
    pod = interrupt.Resource("Pod", "p", temp, in_cluster=True)
    assert pod.delete_command() == "kubectl delete pod p --namespace=build"


def test_shell_metacharacters_in_names_are_quoted() -> None:
    odd = interrupt.Resource("Pod", "p", kubectl.Target(kubeconfig="/my dir/cfg", namespace="n"))
    assert odd.describe_command() == (
        "kubectl describe pod p '--kubeconfig=/my dir/cfg' --namespace=n"
    )


def test_guard_restores_the_previous_handlers(stderr: io.StringIO) -> None:
    before = {s: signal.getsignal(s) for s in interrupt.SIGNALS}
    with interrupt.guard(POD, Console(stderr)) as h:
        assert all(signal.getsignal(s) == h._handle for s in interrupt.SIGNALS)
    assert {s: signal.getsignal(s) for s in interrupt.SIGNALS} == before


def test_install_outside_the_main_thread_does_nothing(stderr: io.StringIO) -> None:
    results: list[bool] = []
    h = interrupt.TwoStageInterrupt(POD, Console(stderr))
    worker = threading.Thread(target=lambda: results.append(h.install()))
    worker.start()
    worker.join(5)
    assert results == [False]
    h.uninstall()  # harmless when never installed


# --- a real process: exit 130, children ended -----------------------------------------

PROGRAM = textwrap.dedent(
    """
    import sys, threading, time
    from kubectl_squarepeg.run import interrupt
    from kubectl_squarepeg.cluster import kubectl
    from kubectl_squarepeg.terminal.console import Console
    from kubectl_squarepeg.errors import Interrupted

    target = kubectl.Target(context="kubesim", namespace="default")
    resource = interrupt.Resource("Job", "squarepeg-busybox-0f0f0f", target)
    idle = threading.Event()
    with interrupt.guard(resource, Console()) as handler:
        handler.progress.created = True
        try:
            print("running", flush=True)
            while True:
                idle.wait(0.05)
        except Interrupted as exc:
            print("cleanup:", exc.message, flush=True)
            with handler.shield(raise_pending=False):
                deadline = time.monotonic() + float(sys.argv[1])
                while time.monotonic() < deadline:
                    idle.wait(0.05)
            print("cleaned up", flush=True)
    # squarepeg's own way out after the cleanup (imports, flushing) must not print the hint.
    time.sleep(float(sys.argv[2]))
    sys.exit(130 if handler.interrupted else 0)
    """
)


def _start(cleanup_seconds: float, after_seconds: float = 0.0) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, str(cleanup_seconds), str(after_seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "running\n"
    return proc


def _read_until(proc: subprocess.Popen[str], line: str) -> None:
    assert proc.stdout is not None
    assert proc.stdout.readline() == line


def test_process_first_signal_cleans_up_and_exits_130() -> None:
    proc = _start(cleanup_seconds=0.1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert out == "cleanup: interrupted by SIGTERM\ncleaned up\n"
    assert err == (
        "squarepeg: warning: interrupted (SIGTERM): stopping and deleting "
        "job/squarepeg-busybox-0f0f0f\n"
    )


def test_process_a_quick_cleanup_never_hints_at_a_second_signal() -> None:
    # Longer after the cleanup than the hint's delay: the hint is cancelled with the guard.
    proc = _start(cleanup_seconds=0.1, after_seconds=interrupt.HINT_SECONDS + 1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert out == "cleanup: interrupted by SIGINT\ncleaned up\n"
    assert "again" not in err, err


def test_process_a_slow_cleanup_says_what_a_second_signal_does_while_it_runs() -> None:
    proc = _start(cleanup_seconds=interrupt.HINT_SECONDS + 1.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=15)
    assert (proc.returncode, out) == (130, "cleanup: interrupted by SIGINT\ncleaned up\n")
    assert err.splitlines() == [
        "squarepeg: warning: interrupted (SIGINT): stopping and deleting "
        "job/squarepeg-busybox-0f0f0f",
        f"squarepeg: warning: still stopping after {interrupt.HINT_SECONDS:g}s; press Ctrl-C "
        "again to leave job/squarepeg-busybox-0f0f0f running and exit at once",
    ]


def test_process_second_signal_abandons_the_cleanup_at_once() -> None:
    proc = _start(cleanup_seconds=60)
    proc.send_signal(signal.SIGINT)
    _read_until(proc, "cleanup: interrupted by SIGINT\n")
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=10)
    assert time.monotonic() - started < 5
    assert proc.returncode == 130
    assert out == ""  # "cleaned up" never printed
    assert err.splitlines()[1:] == [
        "squarepeg: warning: interrupted again: cleanup abandoned; "
        "job/squarepeg-busybox-0f0f0f is left running in namespace default",
        "squarepeg: warning: inspect it: kubectl describe job squarepeg-busybox-0f0f0f "
        "--context=kubesim --namespace=default",
        "squarepeg: warning: delete it: kubectl delete job squarepeg-busybox-0f0f0f "
        "--cascade=background --context=kubesim --namespace=default",
    ]


ABANDON_WITH_CHILD = textwrap.dedent(
    """
    import sys, threading
    from kubectl_squarepeg.run import interrupt
    from kubectl_squarepeg.cluster import kubectl
    from kubectl_squarepeg.terminal.console import Console

    child = kubectl.start(["get", "pods", "--watch"])
    resource = interrupt.Resource("Pod", "p", kubectl.Target(namespace="default"))
    idle = threading.Event()
    with interrupt.guard(resource, Console()) as handler:
        handler.progress.created = True
        with handler.shield(raise_pending=False):
            print(child.pid, flush=True)
            while True:  # in slices, as squarepeg's main thread waits (kubectl.collect)
                idle.wait(0.05)
    """
)
# Why slices: a signal that arrives while the previous one's handler is ending (the test
# sends the second as soon as the first handler's line is out) is noted by CPython but run
# only when the main thread next runs Python code; a lock's wait it goes back to is not
# interrupted for it. One 60 s wait left the second SIGINT unanswered past the test's 30 s
# (CI, 7 December; by hand 6 hangs in 1,200 at a load of 6, 0 in 600 with slices).


def test_process_abandon_ends_the_kubectl_children(tmp_path: os.PathLike[str]) -> None:
    # A stand-in kubectl that just waits, so no cluster is needed.
    fake = os.path.join(tmp_path, "kubectl")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\nexec sleep 60\n")
    os.chmod(fake, 0o755)
    env = {**os.environ, "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(
        [sys.executable, "-c", ABANDON_WITH_CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    child_pid = int(proc.stdout.readline())
    assert _alive(child_pid)
    proc.send_signal(signal.SIGINT)
    assert proc.stderr is not None
    assert proc.stderr.readline().startswith("squarepeg: warning: interrupted (SIGINT)")
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130
    wait_until(lambda: not _alive(child_pid), 30, "the child to end", interval=0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0) until whoever inherited it reaps it.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False
