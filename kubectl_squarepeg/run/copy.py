"""`cp` between the local machine and a run's `main` container (docs/decisions/0380).

Owns the copy's steps: the run found by name among the user's own (run/detached.py
`find_runs`, the created-by check of logs/wait/rm), refused unless `main` is running (an
ended container cannot be exec'd: the decision record says what to do instead), then one
`kubectl exec` into `main` (never `kubectl cp`) carrying a tar: into the container, the
`-v` upload's own stream (files/upload.py) written into the exec's stdin on a thread as it
is read; out of it, the container's tar read as a stream into files/copy.py's Extractor.
With `-`, squarepeg's stdin or stdout is handed to kubectl as it is. A refusal said by the
container's script (plan/copying.py) is one line and exit 125, as is an image without sh.
"""

from __future__ import annotations

import os
import sys
import tarfile
from collections.abc import Callable
from typing import Any

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.cluster.podstate import MAIN
from kubectl_squarepeg.errors import ClusterError, SquarepegError, UsageError
from kubectl_squarepeg.files import copy as local
from kubectl_squarepeg.files import upload
from kubectl_squarepeg.plan import copying
from kubectl_squarepeg.plan.copying import Copy
from kubectl_squarepeg.run import detached
from kubectl_squarepeg.run.files import PipeWriter
from kubectl_squarepeg.terminal.console import Console

_SLICE = 0.5
_NO_SHELL = ("executable file not found", "no such file or directory")
_KEEP_FILES = (
    "copy while it runs; to keep what a run writes, run it without -d with -v DIR:PATH (copied "
    "back into DIR when it ends), or write to a claim (-v CLAIM:PATH) that a later run mounts"
)
_VIA_MOUNT = "run it without -d with -v DIR:PATH instead: its helper brings its own sh and tar"


def _running_pod(connection: Any, created_by: str, name: str) -> str:
    run = detached.find_runs(connection, created_by, [name])[0]
    pod = run.pod
    if pod is None or not podstate.has_started(pod):
        raise UsageError(
            f"run {name} has not started yet: its container cannot be copied to or from",
            "retry when `kubectl squarepeg ps` shows it Up",
        )
    if podstate.has_finished(pod):
        raise UsageError(
            f"run {name} has ended: a container that has exited cannot be exec'd, so cp "
            "cannot reach its files",
            _KEEP_FILES,
        )
    return podstate.name(pod)


def _failed(
    name: str, child: kubectl.Child, code: int | None, what: str
) -> SquarepegError:
    text = child.stderr.decode("utf-8", "replace")
    said = copying.said_line(text)
    if said is not None:
        return UsageError(
            f"cp: {said} (in run {name}'s container)",
            _VIA_MOUNT
            if "no tar" in said
            else "fix the path; cp follows docker cp's rules (docs/cp.md)",
        )
    if code in (126, 127) or ('"sh"' in text and any(s in text.lower() for s in _NO_SHELL)):
        return UsageError(
            f"run {name}'s image has no sh: cp needs sh and tar in the container",
            _VIA_MOUNT,
        )
    said_by_kubectl = kubectl.Result(child.argv, code or 1, b"", child.stderr).error_text
    return ClusterError(
        f"cp {what} run {name} failed: {said_by_kubectl}",
        "check that it still runs (`kubectl squarepeg ps`) and that you may create pods/exec",
    )


def _wait(child: kubectl.Child) -> int:
    while (code := child.wait(_SLICE)) is None:
        pass
    return code


def _exec_on_pipe(
    start: Callable[[int], kubectl.Child], *, ours_reads: bool
) -> tuple[kubectl.Child, int]:
    """kubectl started on one end of a new pipe (closed here once it holds it); the other
    end, ours, back with it."""
    read_fd, write_fd = os.pipe()
    theirs, ours = (write_fd, read_fd) if ours_reads else (read_fd, write_fd)
    try:
        child = start(theirs)
    except BaseException:
        os.close(ours)
        raise
    finally:
        os.close(theirs)
    return child, ours


def cp(
    connection: Any, created_by: str, plan: Copy, *, cwd: str, home: str, console: Console
) -> int:
    """One copy, either way; whatever ends it (a refusal, Ctrl-C), no kubectl is left."""
    try:
        if plan.direction == "into":
            return _into(connection, created_by, plan, cwd=cwd, home=home, console=console)
        return _out_of(connection, created_by, plan, cwd=cwd, console=console)
    finally:
        kubectl.terminate_all()


def _into(
    connection: Any, created_by: str, plan: Copy, *, cwd: str, home: str, console: Console
) -> int:
    """`cp SRC NAME:PATH` and `cp - NAME:DIR`."""
    source = None if plan.streamed else local.check_local_source(plan.local, cwd=cwd, home=home)
    pod = _running_pod(connection, created_by, plan.run)
    target = connection.target
    if source is None:
        command = copying.into_stream_command(plan.remote)
        child = verbs.exec_reading(target, pod, MAIN, command, stdin_fd=sys.stdin.fileno())
        code = _wait(child)
        if code != 0:
            raise _failed(plan.run, child, code, "into")
        return 0
    for warning in source.checked.warnings:
        console.warn(warning)
    command = copying.into_command(plan.remote, source.kind, source.base)
    child, write_fd = _exec_on_pipe(
        lambda fd: verbs.exec_reading(target, pod, MAIN, command, stdin_fd=fd), ours_reads=False
    )
    # run/files.py's writer: the upload's tar into the exec's stdin on a thread; a reader
    # gone (the script refused) ends it quietly.
    feeder = PipeWriter(write_fd, source.checked, upload.Sent())
    feeder.start()
    code = _wait(child)
    feeder.join(10.0)
    if code != 0:
        raise _failed(plan.run, child, code, "into")
    if feeder.failure is not None:
        raise ClusterError(f"cp into run {plan.run}: reading {plan.local} failed: "
                           f"{feeder.failure}", "check SRC, then copy again")
    return 0


def _out_of(
    connection: Any, created_by: str, plan: Copy, *, cwd: str, console: Console
) -> int:
    """`cp NAME:PATH DEST` and `cp NAME:PATH -`."""
    pod = _running_pod(connection, created_by, plan.run)
    target = connection.target
    command = copying.out_of_command(plan.remote, plan.contents)
    if plan.streamed:
        sys.stdout.flush()
        child = verbs.exec_writing(target, pod, MAIN, command, stdout_fd=sys.stdout.fileno())
        code = _wait(child)
        if code != 0:
            raise _failed(plan.run, child, code, "out of")
        return 0
    extractor = local.Extractor(plan.local, contents=plan.contents, cwd=cwd)
    child, read_fd = _exec_on_pipe(
        lambda fd: verbs.exec_writing(target, pod, MAIN, command, stdout_fd=fd), ours_reads=True
    )
    refusal: BaseException | None = None
    with os.fdopen(read_fd, "rb") as stream:
        try:
            local.extract(stream, extractor)
        except UsageError as exc:
            refusal = exc
        except (tarfile.TarError, OSError) as exc:
            refusal = ClusterError(f"cp out of run {plan.run}: {exc}", "check DEST")
        if refusal is not None:
            child.terminate()
    code = _wait(child)
    if code != 0 and not isinstance(refusal, UsageError):
        raise _failed(plan.run, child, code, "out of")
    if refusal is not None:
        raise refusal
    for refused in extractor.done.refused:
        console.warn(f"cp: left out {refused}")
    return 0
