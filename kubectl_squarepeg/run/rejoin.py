"""`attach` and `port`: coming back to a detached run, for as long as the user stays.

Owns the two verbs that join a running `run -d` from a new squarepeg process (the run is
found by run/detached.py's `find_runs`: the user's own, every name checked first):

- `attach NAME` (docs/decisions/0391): `kubectl attach` to the run's `main` container,
  once it has started. With `-t` on the run, the terminal session of `run -it`
  (terminal/session.py: raw mode, the window size and its changes), which here also owns
  the input so that docker's Ctrl-P Ctrl-Q detaches; a run with `-t` needs a terminal on
  stdin, as docker's attach says ("the input device is not a TTY"). Without `-t`, stdin
  (when the run has `-i`) goes to the container and its stdout to ours; Ctrl-C detaches
  (kubectl's own attach has no signal proxy). Detaching leaves the run running (`-d -i`
  keeps its stdin open: plan/detached.py) and exits 0; the end of our stdin ends nothing
  (kubectl reads a pipe held open, `_held_open`); the container's end ends the attach with
  the container's exit code, as docker's.
- `port NAME [-p ...]` (docs/decisions/0231): the ports given, or those `run -d -p`
  recorded (plan/ports.py `recorded`), checked free (run/ports.py `reserve`) and forwarded
  by run/ports.py's `Forwarding`, restarted on a drop, until Ctrl-C (exit 0) or the
  container's end (its exit code is `wait`'s: exit 0 with a line saying so). A forward
  that never worked is kubectl's reason, exit 125.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.errors import ClusterError, UsageError
from kubectl_squarepeg.plan.labels import PORTS_ANNOTATION
from kubectl_squarepeg.plan.ports import PublishedPort, parse_recorded
from kubectl_squarepeg.run import detached, listing, watch
from kubectl_squarepeg.terminal.console import Console

MAIN = podstate.MAIN
SLICE_SECONDS = 0.2
# How long an ended attach may wait for the container's end to explain it.
ATTACH_END_SECONDS = 5.0


@contextlib.contextmanager
def _ended_by_signals() -> Iterator[threading.Event]:
    """An event set by Ctrl-C, a hang-up or SIGTERM while the verb lasts: the way a user
    leaves `attach` (without a terminal) and `port`; the handlers before are put back."""
    stop = threading.Event()
    kept: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                kept[signum] = signal.signal(signum, lambda *_: stop.set())
    try:
        yield stop
    finally:
        for signum, handler in kept.items():
            signal.signal(signum, handler)


def _main_container(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec") or {}
    return next((c for c in spec.get("containers") or () if c.get("name") == MAIN), {})


def _started(
    connection: Any, created_by: str, name: str, verb: str
) -> tuple[listing.Found, watch.PodWatch, watch.Event]:
    """The run, a watch of its pod, and the pod once its main container has started; a
    UsageError when it has ended (nothing to attach or forward to)."""
    target, commands = detached._target_of(connection), detached._commands(connection)
    run = detached.find_runs(connection, created_by, [name])[0]
    shown = listing.row(run, datetime.now(timezone.utc))
    if shown.state in ("exited", "terminating"):
        raise UsageError(
            f"{run.kind.lower()}/{run.name} is not running ({shown.status}): {verb} needs "
            "a running container",
            f"`kubectl squarepeg logs {run.name}` shows its output, `kubectl squarepeg ps` "
            "the running runs",
        )
    pod_watch = detached._pod_watch(target, run, commands)
    try:
        started = detached._until_started(pod_watch, detached._first_event(pod_watch))
        if podstate.has_finished(started.pod) or started.type == "DELETED":
            raise UsageError(
                f"{run.kind.lower()}/{run.name} ended before {verb} could reach it",
                f"`kubectl squarepeg logs {run.name}` shows its output",
            )
    except BaseException:
        pod_watch.close()
        raise
    return run, pod_watch, started


# --- attach --------------------------------------------------------------------------------


def attach(
    connection: Any,
    created_by: str,
    name: str,
    *,
    stdin_fd: int,
    stdin_is_tty: bool,
    console: Console,
) -> int:
    """`attach NAME`: see the module docstring. The container's exit code when it ended
    while attached; 0 when the user detached."""
    target, commands = detached._target_of(connection), detached._commands(connection)
    run, pod_watch, started = _started(connection, created_by, name, "attach")
    try:
        pod = podstate.name(started.pod)
        main = _main_container(started.pod)
        tty, reads = bool(main.get("tty")), bool(main.get("stdin"))
        if tty and not stdin_is_tty:
            raise UsageError(
                f"the input device is not a TTY: {run.name} was started with -t, and "
                "attach needs a terminal on stdin for it",
                f"attach from a terminal, or read its output with `kubectl squarepeg logs -f "
                f"{run.name}`",
            )
        if tty:
            detached_by_user, child = _attach_terminal(target, pod, stdin_fd, console)
        else:
            detached_by_user, child = _attach_streams(target, pod, stdin_fd if reads else None,
                                                      console)
        if detached_by_user:
            console.status(f"detached from {run.kind.lower()}/{run.name}: it runs on")
            return 0
        ended = _ended(pod_watch, started)
        if ended is None:
            stderr = child.stderr.decode("utf-8", "replace")
            from kubectl_squarepeg.cluster import attachment

            raise attachment.refusal(stderr, pod, commands, tty=tty)
        if not ended.from_container:
            raise ClusterError(
                ended.message or f"pod {pod} ended without an exit code",
                f"`{commands.events(pod)}` lists the pod's events",
            )
        if ended.message:
            console.warn(ended.message)
        return ended.exit_code
    finally:
        pod_watch.close()
        kubectl.terminate_all()


def _ended(pod_watch: watch.PodWatch, started: watch.Event) -> podstate.Outcome | None:
    """The container's outcome, if it ended (or ends within ATTACH_END_SECONDS) after the
    attach did; None when it runs on: the attach failed."""
    import time

    deadline = time.monotonic() + ATTACH_END_SECONDS
    return watch.wait_for_finish(pod_watch, started, stop=lambda: time.monotonic() > deadline)


@contextlib.contextmanager
def _held_open(stdin_fd: int | None) -> Iterator[int | None]:
    """A pipe kubectl reads instead of `stdin_fd`, fed from it by a thread and held open
    after its end: on a real node (containerd) the end of an attach's stdin ends the whole
    attach, output included (seen on localkube's kubelet node), where docker's attach goes on
    showing the output; the container's own stdin is not closed either way (stdinOnce
    false). Closed when the attach is over."""
    if stdin_fd is None:
        yield None
        return
    import os

    reading, writing = os.pipe()

    def feed() -> None:
        while True:
            try:
                data = os.read(stdin_fd, 65536)
                if not data:
                    return
                os.write(writing, data)
            except OSError:  # the attach is over and the pipe closed
                return

    threading.Thread(target=feed, name="attach-stdin", daemon=True).start()
    try:
        yield reading
    finally:
        for fd in (reading, writing):
            with contextlib.suppress(OSError):
                os.close(fd)


def _attach_streams(
    target: kubectl.Target, pod: str, stdin_fd: int | None, console: Console
) -> tuple[bool, kubectl.Child]:
    """`kubectl attach [-i]`: stdin to the container, its stdout to ours. Whether the user
    detached (Ctrl-C), and the child."""
    sys.stdout.flush()
    with _ended_by_signals() as stop, _held_open(stdin_fd) as fed:
        child = verbs.attach_streams(target, pod, MAIN, stdin_fd=fed,
                                     stdout_fd=sys.stdout.fileno())
        while child.wait(SLICE_SECONDS) is None:
            if stop.is_set():
                child.terminate()
                return True, child
    return False, child


def _attach_terminal(
    target: kubectl.Target, pod: str, stdin_fd: int, console: Console
) -> tuple[bool, kubectl.Child]:
    """`kubectl attach -it` through run -it's terminal session, which owns the input for
    the detach keys. Whether the user detached (Ctrl-P Ctrl-Q), and the child."""
    from kubectl_squarepeg.terminal import session as terminal

    console.status("attached: Ctrl-P Ctrl-Q detaches and leaves it running")
    session = terminal.TerminalSession(sys.stdout.buffer, stdin_fd, detach_keys=True)
    session.splice.joined = True  # no log to splice after: the attach is the output
    console.terminal_raw(True)
    try:
        with _ended_by_signals() as stop:  # SIGTERM, SIGHUP; Ctrl-C is the container's byte
            child = session.start(
                lambda relay: verbs.attach_terminal(
                    target, pod, MAIN, stdin_fd=relay, stdout_fd=relay
                )
            )
            while child.wait(SLICE_SECONDS) is None:
                if stop.is_set():
                    child.terminate()
                    return True, child  # type: ignore[return-value]
            session.finish(SLICE_SECONDS * 10)
            return session.detached, child  # type: ignore[return-value]
    finally:
        session.close()
        console.terminal_raw(False)


# --- port ----------------------------------------------------------------------------------


def recorded_ports(run: listing.Found) -> tuple[PublishedPort, ...]:
    annotations = (run.obj.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(PORTS_ANNOTATION)
    return parse_recorded(text) if isinstance(text, str) else ()


def port(
    connection: Any,
    created_by: str,
    name: str,
    published: Sequence[PublishedPort],
    *,
    console: Console,
) -> int:
    """`port NAME [-p ...]`: see the module docstring."""
    from kubectl_squarepeg.run import ports

    target, commands = detached._target_of(connection), detached._commands(connection)
    run = detached.find_runs(connection, created_by, [name])[0]
    wanted = tuple(published) or recorded_ports(run)
    if not wanted:
        raise UsageError(
            f"{run.kind.lower()}/{run.name} recorded no ports (it was not started with -p)",
            f"name them: `kubectl squarepeg port {run.name} -p 8080:80` forwards local port "
            "8080 to its port 80",
        )
    chosen = ports.reserve(wanted)  # before the wait: a taken port is refused at once
    run, pod_watch, started = _started(connection, created_by, name, "port")
    forwarding = ports.Forwarding(
        target, podstate.name(started.pod), chosen, console, commands,
        instead=f"`kubectl squarepeg logs -f {run.name}` still shows its output",
    )
    try:
        with _ended_by_signals() as stop:
            forwarding.start()

            def stopping() -> bool:
                if forwarding.failure is not None:
                    raise forwarding.failure
                return stop.is_set()

            ended = watch.wait_for_finish(pod_watch, started, stop=stopping)
        if ended is not None:
            console.status(
                f"{run.kind.lower()}/{run.name} has ended: its ports are closed "
                f"(`kubectl squarepeg wait {run.name}` gives its exit code)"
            )
        return 0
    finally:
        forwarding.stop()
        pod_watch.close()
        kubectl.terminate_all()
