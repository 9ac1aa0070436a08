"""The cleanup phase: what a run leaves behind, decided once, on every exit path.

Owns (lifecycle spec, steps 6 and 7) the copy of `rw` mounts back into SRC (run/files.py),
and the one cleanup (`cleanup`, exactly once: a normal end, a startup failure, an error, an
interrupt): the output stopped, then the resource deleted, kept (--keep: the commands to
inspect it), or kept because its output could not all be read (labelled as --keep does, so
no sweep takes it); the orphan sweep that rode along waited for; every child ended. A
detached run releases its resource instead (`release`).

The delete uses the pod's own grace period (`--stop-timeout`) and is not waited for: a run
stopped early (a signal, a closed pipe) exits once the delete is accepted and says that the
pod is terminating and for how long at most, since a PID 1 without a SIGTERM handler (a
shell) keeps it for its whole grace period (docs/decisions/0140-stop-exits-promptly.md).
A pod deleted before its upload of `-v` files completed is given one second instead: `main`
cannot have started, and the upload helper's SIGTERM may come before its shell's trap
(docs/decisions/0290-a-stop-during-the-upload.md). The delete's kubectl is started while
the container runs (`prepare_delete`) and handed the object at the end, so that the exit
pays one request rather than a kubectl start-up; one that could not reach the API server is
tried again for DELETE_RETRY_SECONDS (`--ignore-not-found` makes a repeat harmless).

The orphan sweep starts on its own thread (`start_sweep`) once the output streams (or, if
the container never started, at cleanup), provided the create succeeded.
"""

from __future__ import annotations

import time

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.cluster.refusals import unreachable
from kubectl_squarepeg.errors import ClusterError, SquarepegError
from kubectl_squarepeg.plan import filehelpers
from kubectl_squarepeg.plan.labels import KEEP_LABEL
from kubectl_squarepeg.run.state import RunState

# How long the exit path waits for the orphan sweep that rode along with the run.
SWEEP_JOIN_SECONDS = 60.0
DELETE_SECONDS = 60.0
DELETE_RETRY_SECONDS = 30.0
DELETE_RETRY_FIRST_PAUSE, DELETE_RETRY_MAX_PAUSE = 0.5, 4.0
# The grace period of a pod deleted before its upload completed (0290); kubectl itself
# turns 0 into 1 unless the delete is forced, which would not wait for the kubelet.
BEFORE_MAIN_GRACE_SECONDS = 1


def copy_back(state: RunState, pod: str, outcome: podstate.Outcome) -> None:
    """The rw mounts back into SRC (run/files.py); a failed copy exits 125 only when the
    container succeeded, and is a warning otherwise: the exit code stays main's."""
    files = state.files
    if files is None or not files.copied_back or outcome.pod_deleted:
        return
    try:
        files.copy_back(pod)
    except ClusterError as exc:
        if outcome.exit_code == 0:
            raise
        state.console.warn(f"{exc.message}; {exc.hint}" if exc.hint else exc.message)
    finally:
        files.release(pod)


def start_sweep(state: RunState) -> None:
    """The orphan sweep rides along from here, on its own thread (lifecycle spec)."""
    options = state.plan.options
    if not options.orphan_sweep or state.sweep is not None or not state.created:
        return
    from kubectl_squarepeg.run import sweep  # after the create: nothing before it waits

    state.sweep = sweep.sweep_in_background(
        state.connection,
        state.plan.created_by,
        min_age=options.orphan_sweep_min_age,
        silence=options.orphan_sweep_silence,
        console=state.console,
        exclude_uid=state.uid,
        exclude_name=state.plan.name,
        # Only runs that use Secrets list them: others need no right to (decision 0361).
        secrets=state.plan.secret is not None,
    )


def _join_sweep(state: RunState) -> None:
    if state.sweep is not None and not state.sweep.join(SWEEP_JOIN_SECONDS):
        state.console.warn(
            f"orphan sweep still running after {SWEEP_JOIN_SECONDS:g}s; stopped it"
        )


def prepare_delete(state: RunState) -> None:
    """Start the final delete's kubectl now, while the container runs (kubectl.py)."""
    if not state.plan.options.keep and not kubectl.switched_off("prepared-delete"):
        state.pending_delete = verbs.prepare_delete(state.target, state.plan.kind,
                                                    _end_grace(state))


def _end_grace(state: RunState) -> int | None:
    """The delete's grace period: the pod's own, but where it was raised for the copy-back,
    which is over once the run deletes (plan/filehelpers.py)."""
    options = state.plan.options
    return filehelpers.grace_after_copy_back(options.binds, options.stop_timeout)


def cleanup(state: RunState) -> None:
    """Stop the watch and output, delete the resource unless kept, let the sweep finish,
    end every child. Runs once, whatever happened before."""
    if state.cleaned:
        return
    state.cleaned = True
    try:
        if state.heartbeat is not None:
            state.heartbeat.stop()
        if state.terminal is not None:
            state.terminal.close()
            state.console.terminal_raw(False)
        if state.forwarding is not None:
            state.forwarding.stop()
        if state.logs is not None:
            state.logs.stop()
        if state.exact_out is not None:
            state.exact_out.close()  # what waited for the attach is written as the log has it
        if state.watch is not None:
            state.watch.close()
        if state.created:
            if state.plan.options.keep:
                _print_inspect_commands(state)
                _say_kept(state, "keep")
            elif state.keep_for_output:
                _keep_unread_output(state)
                _say_kept(state, "output")
            else:
                _delete(state)
        start_sweep(state)  # now, if the container never started
        _join_sweep(state)
    finally:
        kubectl.terminate_all()


def release(state: RunState) -> None:
    """Leave the resource on the cluster (`run -d`): stop watching, let the orphan sweep
    that rides along with every run finish, end every child."""
    state.cleaned = True  # cleanup would delete it
    _say_kept(state, "detached")
    try:
        if state.heartbeat is not None:
            state.heartbeat.stop()
        if state.watch is not None:
            state.watch.close()
        start_sweep(state)
        _join_sweep(state)
    finally:
        kubectl.terminate_all()


def _delete(state: RunState) -> None:
    state.progress.delete_sent = True
    resource = state.resource
    if state.node_lost is not None:
        _force_delete_pod(state, state.node_lost)
    elif (state.plan.kind == "Job" and (grace := _end_grace(state)) is not None
          and (pod := _watched_pod(state))):
        # A Job's delete takes its pod with the pod's own grace (the copy-back's): the pod
        # is deleted first, with the grace given back.
        verbs.delete(state.target, "Pod", pod, grace)
    try:
        result = _prepared_delete_result(state) or _delete_until_reached(state)
    except SquarepegError as exc:
        state.console.warn(f"could not delete {resource.ref}: {exc.message}")
        return
    if result.ok:
        state.sink.emit("deleted", kind=state.plan.kind, namespace=state.namespace,
                        name=state.plan.name)
    if not result.ok:
        state.console.warn(
            f"could not delete {resource.ref} in namespace {state.namespace}: "
            f"{result.error_text}{state.commands.permission_check(result.error_text)}; "
            f"delete it yourself: {resource.delete_command()}"
        )
    elif state.stopped_early and state.container_running:
        state.console.notice(_terminating_message(state))


def _watched_pod(state: RunState) -> str | None:
    """The run's pod as its watch knows it (a Job's pod has a name of its controller's)."""
    return state.watch.pod_name if state.watch is not None else None


def _say_kept(state: RunState, why: str) -> None:
    """--events: the resource stays, and why (`keep`: --keep; `output`: its output could
    not all be read; `detached`: `run -d`)."""
    state.sink.emit("kept", kind=state.plan.kind, namespace=state.namespace,
                    name=state.plan.name, why=why)


def _force_delete_pod(state: RunState, node: str) -> None:
    """The pod on a node that stopped answering, removed without its kubelet's word: a
    graceful delete would leave it Terminating, holding its name, until the node came back
    (docs/decisions/0410). A Job's pod too, which its Job's delete would leave so."""
    pod = _watched_pod(state) or state.plan.name
    result = verbs.delete(state.target, "Pod", pod, force=True)
    if result.ok:
        state.console.notice(
            f"force-deleted pod {pod}: its node {node} does not answer; should the node come "
            "back, its kubelet stops the container"
        )
    else:
        state.console.warn(
            f"could not force-delete pod {pod}: {result.error_text}; delete it yourself: "
            f"`{state.commands.kubectl('delete', 'pod', pod, '--grace-period=0', '--force')}`"
        )


def _terminating_message(state: RunState) -> str:
    """After a stop (a signal, a closed pipe) deleted a pod whose container still ran:
    squarepeg exits now, the pod goes on its own time (docs/decisions/0140)."""
    grace = _end_grace(state) or state.grace_seconds
    within = f"within {grace}s" if grace is not None else "within its grace period"
    ref = state.resource.ref
    if state.plan.kind == "Job":
        return (
            f"{ref} is deleted; its pod is terminating: its container was sent SIGTERM "
            f"and is killed if it has not exited {within} (--stop-timeout)"
        )
    return (
        f"{ref} is terminating: its container was sent SIGTERM and is killed if it has "
        f"not exited {within} (--stop-timeout); the name {state.plan.name} is taken "
        "until then"
    )


def _delete_until_reached(state: RunState) -> kubectl.Result:
    """The plain delete, tried again while the API server cannot be reached. The pauses
    are not shielded: a second Ctrl-C still abandons the cleanup at once."""
    plan = state.plan
    waited, pause = 0.0, DELETE_RETRY_FIRST_PAUSE
    held_pod = state.main_held and plan.kind == "Pod"
    grace = BEFORE_MAIN_GRACE_SECONDS if held_pod else _end_grace(state)
    while True:
        result = verbs.delete(state.target, plan.kind, plan.name, grace)
        if result.ok or not unreachable(result) or waited >= DELETE_RETRY_SECONDS:
            return result
        time.sleep(pause)
        waited, pause = waited + pause, min(pause * 2, DELETE_RETRY_MAX_PAUSE)


def _prepared_delete_result(state: RunState) -> kubectl.Result | None:
    """The prepared delete, released; None when there is none, or it died waiting."""
    if state.pending_delete is None:
        return None
    child, held = state.pending_delete
    state.pending_delete = None
    if not child.is_alive():
        return None
    held.release(verbs.reference(state.plan.kind, state.plan.name, state.namespace))
    result = kubectl.collect(child, timeout=DELETE_SECONDS)
    return result if result.ok else None  # the plain delete, whose error is reported


def _keep_unread_output(state: RunState) -> None:
    """Keep the resource whose output could not all be read, labelled as --keep does
    (so no sweep takes it), and say how to read the rest and delete it."""
    res, plan = state.resource, state.plan
    labelled = verbs.label(state.target, plan.kind, plan.name, f"{KEEP_LABEL}=true")
    how = "labelled " + KEEP_LABEL if labelled.ok else "not labelled (the sweep may take it)"
    state.console.warn(
        f"kept {res.ref} in namespace {state.namespace} ({how}): its output could not "
        f"all be read; the rest: `{state.commands.logs(plan.kind, plan.name)}`; "
        f"then delete it: `{res.delete_command()}`"
    )


def _print_inspect_commands(state: RunState) -> None:
    # The name is the one thing a kept run must tell, even when quiet.
    state.console.notice(f"kept {state.resource.ref} in namespace {state.namespace}")
    state.console.status(f"inspect it: {state.resource.describe_command()}")
    state.console.status(f"its output: {state.resource.logs_command()}")
