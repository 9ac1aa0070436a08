"""docker's verbs that act inside a running run: `exec` and `stop`.

Owns what each does with a run found as `logs`, `wait` and `rm` find it (run/detached.py
`find_runs`: the user's own runs only, a wrong name one line and 125):

- `exec [-i] [-t] NAME CMD...`: `kubectl exec` in the run's `main` container (by name: an
  injected sidecar is never the one), its stdout straight to squarepeg's stdout, its stderr
  through cluster/execwords.py, which passes the command's bytes as they come and keeps
  kubectl's own words (`command terminated with exit code N`, `error: ...`) off it. The
  exit code is the command's; a command that could not be started is docker's 127 (not
  found) or 126 (not executable) with one line; kubectl failing otherwise (the container
  has just ended, the API server refused) is 125. With -t, kubectl reads and writes the
  terminal itself, made raw for the session (terminal/session.py `DirectSession`).
- `stop [-t SECONDS] NAME...`: the pod is annotated `squarepeg.io/stopped-at`, then its
  `spec.activeDeadlineSeconds` is lowered to 1, which a running pod's spec allows: the
  kubelet sends SIGTERM to the container (from outside its PID namespace, so a PID 1
  with a handler runs it; one without, like `sleep`, ignores it) and SIGKILL after the
  pod's grace period (the run's `--stop-timeout`, fixed at creation; -t cannot shorten or
  lengthen it, and says so when it differs). The pod ends Failed/DeadlineExceeded with the
  container's own code in its status (143, a trap's, or 137, measured on localkube's real
  kubelet) and its log kept; the annotation makes podstate.py report that code rather
  than the deadline's 124. The run stays until `rm`. Each name is printed once its run has
  ended, as docker's stop does (docs/decisions/0370-stop-by-active-deadline.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.execwords import ExecStderr
from kubectl_squarepeg.errors import ClusterError, StartupError, UsageError
from kubectl_squarepeg.plan.labels import STOPPED_AT_ANNOTATION
from kubectl_squarepeg.run import detached, listing, watch
from kubectl_squarepeg.terminal.console import Console

_READ_BYTES = 65536
_RELAY_JOIN_SECONDS = 5.0


def _running_pod(connection: Any, created_by: str, name: str) -> tuple[listing.Found, str]:
    """The run called `name` and its pod's name; a UsageError when it is not running."""
    run = detached.find_runs(connection, created_by, [name])[0]
    pod = run.pod
    state = (podstate.container_status(pod) or {}).get("state") if pod is not None else None
    if pod is None or not isinstance(state, dict) or "running" not in state:
        shown = listing.row(run, datetime.now(timezone.utc))
        raise UsageError(
            f"{run.kind.lower()}/{run.name} is not running ({shown.status}): exec needs its "
            "container running",
            f"`kubectl squarepeg logs {run.name}` shows its output; "
            f"`kubectl squarepeg ps -a` lists your runs",
        )
    return run, podstate.name(pod)


def _relay_stderr(read_fd: int, words: ExecStderr) -> None:
    """kubectl's stderr to ours as it comes, less what may be kubectl's own message."""
    try:
        while data := os.read(read_fd, _READ_BYTES):
            _write_all(2, words.feed(data))
    except OSError:
        pass
    finally:
        os.close(read_fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(fd, view) :]


def exec_command(
    connection: Any,
    created_by: str,
    name: str,
    command: Sequence[str],
    *,
    interactive: bool,
    tty: bool,
) -> int:
    """`exec [-i] [-t] NAME CMD...`: the command's exit code (see the module docstring)."""
    target = connection.target
    run, pod = _running_pod(connection, created_by, name)
    words = ExecStderr()
    read_fd, write_fd = os.pipe()
    relay = threading.Thread(target=_relay_stderr, args=(read_fd, words), daemon=True)
    relay.start()
    session = None
    child = None
    try:
        if tty:
            from kubectl_squarepeg.terminal.session import DirectSession

            session = DirectSession(sys.stdin.fileno())
        sys.stdout.flush()
        child = verbs.exec_in(
            target,
            pod,
            podstate.MAIN,
            command,
            stdin_fd=sys.stdin.fileno() if interactive else None,
            tty=tty,
            stdout_fd=sys.stdout.fileno(),
            stderr_fd=write_fd,
        )
        if session is not None:
            session.child = child
        os.close(write_fd)
        write_fd = -1
        code = detached._wait_child(child)
    finally:
        if session is not None:
            session.close()
        if child is not None:
            child.terminate()
        if write_fd != -1:
            os.close(write_fd)
        relay.join(_RELAY_JOIN_SECONDS)
    ending = words.end(code)
    _write_all(2, ending.rest)
    if ending.failure is None:
        return ending.code
    if ending.start_failure:
        raise StartupError(
            f"the command could not be started in {run.kind.lower()}/{run.name}: "
            f"{ending.failure}",
            "check the command and that the image has it (a path, or a name on the image's "
            "PATH)",
            exit_code=ending.code,
        )
    raise ClusterError(
        f"kubectl exec in pod {pod} failed: {ending.failure}",
        "`kubectl squarepeg ps -a` shows whether the run is still running",
    )


# --- stop ----------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# How long `stop` waits past a run's grace period for its container's end before it reads the
# pod once itself: a watch that missed the end must not hold `stop` forever.
STOP_SLACK_SECONDS = 30.0


def _wait_until_stopped(target: kubectl.Target, run: listing.Found,
                        commands: Commands) -> None:
    """Until the stopped run's container has ended, at most its grace period and
    STOP_SLACK_SECONDS; then the pod as the API server has it, or one line saying it has not
    ended (exit 125)."""
    assert run.pod is not None
    name = podstate.name(run.pod)
    grace = podstate.grace_period(run.pod)
    bound = (30 if grace is None else grace) + STOP_SLACK_SECONDS
    deadline = time.monotonic() + bound
    pod_watch = detached._pod_watch(target, run, commands)
    try:
        event = None
        while event is None and time.monotonic() < deadline:
            event = pod_watch.next(watch.SLICE_SECONDS)
        if event is not None and watch.wait_for_finish(
                pod_watch, event, stop=lambda: time.monotonic() > deadline) is not None:
            return
    finally:
        pod_watch.close()
    found = verbs.get_object(target, "Pod", name)
    with contextlib.suppress(ValueError):
        if found.ok and podstate.has_finished(json.loads(found.stdout)):
            return
    raise ClusterError(
        f"pod {name} has not ended {bound:g}s after `stop` sent SIGTERM",
        f"`{commands.kubectl('describe', 'pod', name)}` says why; "
        f"`kubectl squarepeg rm -f {run.name}` deletes it",
    )


def stop(
    connection: Any,
    created_by: str,
    names: Sequence[str],
    *,
    timeout: int | None,
    console: Console,
    out: Callable[[str], Any] = sys.stdout.write,
) -> int:
    """`stop [-t SECONDS] NAME...`: every run stopped, then each name printed as its run
    has ended (see the module docstring)."""
    target = connection.target
    commands = detached._commands(connection)
    runs = detached.find_runs(connection, created_by, names)
    for run in runs:
        if run.pod is None:
            raise UsageError(
                f"job/{run.name} has no pod yet: there is no container to stop",
                f"delete it with `kubectl squarepeg rm -f {run.name}`",
            )
    try:
        for run in runs:
            assert run.pod is not None
            if podstate.has_finished(run.pod):
                continue  # docker's stop of a stopped container: nothing to do, its name
            pod = podstate.name(run.pod)
            grace = podstate.grace_period(run.pod)
            grace = 30 if grace is None else grace
            if timeout is not None and timeout != grace:
                console.warn(
                    f"stop: {run.name} gets SIGKILL {grace}s after SIGTERM, its --stop-timeout, "
                    f"not -t {timeout}: a pod's grace period is fixed when it is created"
                )
            steps = (
                verbs.annotate(target, "Pod", pod, f"{STOPPED_AT_ANNOTATION}={_now()}"),
                verbs.set_active_deadline(target, pod, 1),
            )
            for result in steps:
                if not result.ok:
                    raise ClusterError(
                        f"cannot stop pod {pod}: {result.error_text}",
                        f"`{commands.kubectl('auth', 'can-i', 'patch', 'pods')}` checks your "
                        "permission",
                    )
        for run in runs:
            assert run.pod is not None
            if not podstate.has_finished(run.pod):
                _wait_until_stopped(target, run, commands)
            out(f"{run.name}\n")
            sys.stdout.flush()
    finally:
        kubectl.terminate_all()
    return 0
