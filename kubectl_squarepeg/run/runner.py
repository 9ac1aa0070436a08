"""The run after the manifest: the executor that orders its phases (lifecycle spec, steps 4
to 7), and `--dry-run-server`.

Owns the order: create (run/create.py: the create, its retries and refusals, the watch,
the upload, the wait for the start), output (run/output.py: logs, attach, ports, the head
check, the drain and what the outcome means), cleanup (run/cleanup.py: copy-back, then
delete or keep, the sweep's end), with the state they share passed to each
(run/state.py). The phases do not import each other; this module and run/detached.py
compose them.

The cleanup runs exactly once, on every exit path, guarded by the two-stage interrupt
(interrupt.py `guarded`). The main thread never blocks in one long call: it waits in short
slices (watch.SLICE_SECONDS), so the interrupt can raise `Interrupted` at any point outside
a shield; the create and the exit-code extraction are shielded, so a first Ctrl-C lets
them finish.

The orphan sweep starts on its own thread once the output streams (or, if the container
never started, at cleanup), provided the create succeeded; the exit path waits for it.
Kept costs low on purpose (scripts/bench-run): a clean run starts four kubectl processes
of its own (the create, and the watch started while it is in flight; the log stream; the
delete, started when the container starts and handed the object at the end, so that the
exit pays one request rather than a kubectl start-up), plus the sweep's list, and its
delete when it found orphans.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.refusals import rejection
from kubectl_squarepeg.errors import READER_GONE, ClusterError, ReaderGone
from kubectl_squarepeg.plan.manifest import template_pod
from kubectl_squarepeg.run import cleanup, create, interrupt, nodeloss, output, watch
from kubectl_squarepeg.run.state import RunState, new_state
from kubectl_squarepeg.terminal.console import Console

if TYPE_CHECKING:
    from kubectl_squarepeg.cluster.connect import Connection
    from kubectl_squarepeg.files.upload import Checked
    from kubectl_squarepeg.plan.manifest import Plan

__all__ = [
    "LOG_DRAIN_LIMIT_SECONDS", "LOG_DRAIN_SECONDS", "READER_GONE", "execute", "execute_phases",
    "run_lifecycle",
]

LOG_DRAIN_SECONDS = output.LOG_DRAIN_SECONDS
LOG_DRAIN_LIMIT_SECONDS = output.LOG_DRAIN_LIMIT_SECONDS


def dry_run_server(plan: Plan, connection: Connection, console: Console) -> int:
    """Send the manifest as a server-side dry run; print the apiserver's object as YAML."""
    try:
        manifest = create.manifest_bytes_of(plan)
        result = verbs.create_dry_run(connection.target, manifest)
        commands = Commands(connection.target, connection.in_cluster)
        if not result.ok:
            from kubectl_squarepeg.cluster import capability

            raise (capability.dry_run_refusal(result.error_text)
                   or rejection(result, plan.kind, plan.name, commands, dry_run_server=True))
        if plan.kind == "Job":
            _dry_run_the_jobs_pod(plan, connection, commands)
        sys.stdout.flush()
        sys.stdout.buffer.write(result.stdout)
        sys.stdout.buffer.flush()
        return 0
    finally:
        kubectl.terminate_all()


def _dry_run_the_jobs_pod(plan: Plan, connection: Connection, commands: Commands) -> None:
    """The Job's pod, as its controller would create it, through the same dry run: refused
    there, the Job's pod would be (its own dry run passes: decision 0300)."""
    pod = template_pod(plan.manifest)
    result = verbs.create_dry_run(connection.target, json.dumps(pod).encode("utf-8"))
    if not result.ok:
        refused = rejection(result, "Pod", pod["metadata"]["name"], commands,
                            dry_run_server=True)
        raise ClusterError(f"job/{plan.name} would be created, but its controller's pod would "
                           f"be refused: {result.error_text}", refused.hint)


def execute_phases(state: RunState) -> int:
    """Every phase in order; the exit code. Cleanup is the caller's (`run_lifecycle`)."""
    started, pod = create.start(state)
    assert state.watch is not None
    if started.type != "DELETED":
        output.begin(state, started, pod)
        cleanup.prepare_delete(state)
    # After the log stream's start, so that its kubectl does not delay the output's.
    cleanup.start_sweep(state)
    node = nodeloss.NodeClock(state.console, nodeloss.node_facts(state.target),
                              on_change=lambda lost: _tell_the_follower(state, lost))
    try:
        outcome = watch.wait_for_finish(
            state.watch, started, stop=lambda: output.stopping(state), node=node
        )
    except nodeloss.NodeLost as lost:
        # Its kubelet cannot end the container or confirm a delete (decision 0410).
        state.node_lost = lost.node
        describe = state.commands.kubectl("describe", "node", lost.node, namespaced=False)
        lost.hint = f"`{describe}` says what the cluster knows of the node"
        if state.plan.options.keep:
            lost.hint += (f"; the pod is kept as it was: `{state.resource.describe_command()}`"
                          " (a graceful delete waits for the node to come back)")
        raise
    if outcome is not None and outcome.pod_deleted and state.plan.kind == "Job":
        outcome = _job_deadline(state) or outcome
    output.stop_forwarding(state)  # the container has ended: its ports close, as docker's do
    if outcome is None:
        raise ReaderGone("stdout was closed by its reader")
    state.container_running = False
    if state.sink.active:
        _say_exited(state, outcome, pod)
    if state.head is not None:
        state.head.start()  # now, if no line has come: what it lists is final
    # The exit code is known: a first Ctrl-C from here on lets the output drain and
    # the code be reported, then exits 130 (the shield raises it at its end).
    with state.shields.shield():
        output.drain(state, outcome, pod)
        output.judge(state, outcome, pod)
        cleanup.copy_back(state, pod, outcome)
        return outcome.exit_code


def _say_exited(state: RunState, outcome: podstate.Outcome, pod: str) -> None:
    from kubectl_squarepeg.run import eventlog

    latest = state.phases.latest if state.phases is not None else None
    state.sink.emit(
        "exited", pod=pod, exit_code=outcome.exit_code,
        container_exit_code=eventlog.exit_code_of_container(latest),
        reason=eventlog.exit_reason(latest, outcome),
        message=outcome.message,
    )


def _job_deadline(state: RunState) -> podstate.Outcome | None:
    """A Job whose pod was deleted: its own deadline's outcome, when that is why."""
    found = verbs.get_object(state.target, "Job", state.plan.name)
    try:
        return podstate.job_deadline_outcome(json.loads(found.stdout)) if found.ok else None
    except (ValueError, AttributeError):
        return None


def _tell_the_follower(state: RunState, node: str | None) -> None:
    if state.logs is not None:
        state.logs.node_silent(node)


def run_lifecycle(
    plan: Plan, connection: Connection, console: Console, files_checked: Checked | None = None
) -> int:
    """Run the plan on the cluster, guarded by the two-stage interrupt; the exit code.

    A signal during the run makes the exit code 130 whatever else happened; the cleanup
    (delete unless kept, the sweep's end) runs shielded, so a first signal cannot cut it
    short, while a second one abandons it (interrupt.py).
    """
    state = new_state(plan, connection, console, files_checked=files_checked)

    def body(handler: interrupt.TwoStageInterrupt) -> int:
        state.shields = handler
        return execute_phases(state)

    def finish(handler: interrupt.TwoStageInterrupt, done: bool) -> None:
        state.stopped_early = handler.interrupted or state.reader_gone
        cleanup.cleanup(state)

    return interrupt.guarded(
        state.resource,
        console,
        progress=state.progress,
        body=body,
        finish=finish,
        late_cleanup=lambda: cleanup.cleanup(state),
        on_abandon=lambda: output.restore_terminal(state),
    )


def execute(
    plan: Plan, connection: Connection, console: Console, files_checked: Checked | None = None
) -> int:
    """What `run` does once the plan and the connection are known: a server-side dry run,
    or the whole lifecycle."""
    if plan.options.dry_run_server:
        return dry_run_server(plan, connection, console)
    return run_lifecycle(plan, connection, console, files_checked)
