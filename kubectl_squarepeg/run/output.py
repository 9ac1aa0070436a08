"""The output phase: what the user sees of the container while it runs, and its verdict.

Owns, once the container has started (lifecycle spec, step 5; README, "Interactive runs"):
the log stream (run/logs.py), for -i the attach that feeds stdin, for -it the terminal
session whose attach output is the output, spliced after what the log had before it
(terminal/session.py), for -t alone the log with `\\n` line ends (terminal/lineends.py), for
-i alone the log with the `\\r`s it dropped put back from the attach (run/exactout.py);
the port-forward of -p while the container runs (run/ports.py); the head check
(run/loghead.py, docs/decisions/0280). Between waits for the container's end, `stopping`
says whether the run must stop early: stdout's reader went away, an attach failed that the
container's end did not explain within ATTACH_GRACE_SECONDS, a forward never worked.

Once the container has ended: the output drained (`drain`), and what the outcome means
(`judge`): a command that could not start, a pod that ended without an exit code, and
output known to be incomplete, which never ends with the container's code
(docs/decisions/0120).
"""

from __future__ import annotations

import contextlib
import time
from typing import BinaryIO

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.errors import ClusterError, StartupError
from kubectl_squarepeg.run import podevents, watch
from kubectl_squarepeg.run.state import RunState

MAIN = podstate.MAIN
# After the container's end, how long the log stream may bring nothing new before the run
# gives up on the rest, and how long it may take in all (decision 0425).
LOG_DRAIN_SECONDS = 30.0
LOG_DRAIN_LIMIT_SECONDS = 80.0
# How long the end waits for the head check's verdict (two requests of the node's files).
HEAD_CHECK_SECONDS = 15.0
# How long an attach may have failed before the container's end explains it; after that,
# a container still waiting for its input will not get it: the run fails (exit 125).
ATTACH_GRACE_SECONDS = 3.0
# How long `run -it` waits for kubectl attach to end and its output to be relayed.
ATTACH_DRAIN_SECONDS = 10.0
# How long `run -i` waits, after the log's end, for kubectl attach to end: the line ends
# still waiting for it are decided then (run/exactlines.py).
EXACT_DRAIN_SECONDS = 2.0


def begin(state: RunState, started: watch.Event, pod: str) -> None:
    """The container has started (or ended at once): its output, and its ports."""
    state.container_running = not podstate.has_finished(started.pod)
    state.grace_seconds = podstate.grace_period(started.pod)
    if not kubectl.switched_off("head-check"):
        from kubectl_squarepeg.run.loghead import HeadCheck

        state.head = HeadCheck(state.target, started.pod, MAIN)
    _start_output(state, pod)
    if state.plan.options.publish and state.container_running:
        from kubectl_squarepeg.run import ports

        state.forwarding = ports.Forwarding(
            state.target, pod, state.plan.options.publish, state.console, state.commands
        )
        state.forwarding.start()


def start_logs(state: RunState, pod: str, out: BinaryIO | None = None) -> None:
    if state.follower_factory is None:
        from kubectl_squarepeg.run import logs  # after the create: nothing before it waits

        state.follower_factory = logs.LogFollower
    factory = state.follower_factory
    state.logs = factory(
        state.target,
        pod,
        MAIN,
        out or state.out,
        state.console,
        logs_command=state.commands.logs("Pod", pod),
        commands=state.commands,
        on_first_line=state.head.start if state.head is not None else None,
    )
    if not state.container_running:
        # Seen ended at once (a quick container goes from Pending to Succeeded on a real
        # node): its first request reads a final log, and one that brings nothing is
        # the whole proof (logs.py, "Complete"; docs/decisions/0200).
        state.logs.finish(0)
    state.logs.start()


def _start_output(state: RunState, pod: str) -> None:
    """The log stream, and for -i the attach that feeds stdin."""
    options = state.plan.options
    if options.interactive and options.tty:
        from kubectl_squarepeg.terminal import (
            session as terminal,  # only -it needs termios and a pty
        )

        session = terminal.TerminalSession(state.out, state.stdin_fd)
        state.terminal = session
        state.console.terminal_raw(True)
        start_logs(state, pod, out=session.log_out)
        state.attach = session.start(  # type: ignore[assignment]
            lambda relay: verbs.attach_terminal(
                state.target, pod, MAIN, stdin_fd=state.stdin_fd, stdout_fd=relay
            )
        )
        return
    if options.tty:
        # -t alone: the log is the output, with `\n` line ends on every cluster
        # (terminal/lineends.py).
        from kubectl_squarepeg.terminal.lineends import LogLineEndsOut

        state.tty_log_out = LogLineEndsOut(state.out)
        start_logs(state, pod, out=state.tty_log_out)
        return
    if not options.interactive:
        start_logs(state, pod)
        return
    from kubectl_squarepeg.run.exactout import STDERR, STDOUT, ExactOut

    exact = state.exact_out = ExactOut(state.out)
    start_logs(state, pod, out=exact)  # type: ignore[arg-type]
    state.attach = verbs.attach_stdin(
        state.target, pod, MAIN, stdin_fd=state.stdin_fd,
        on_stdout=exact.attach_stream(STDOUT), on_stderr=exact.attach_stream(STDERR),
    )


def stopping(state: RunState) -> bool:
    """Between waits for the container's end: whether the run stops early (stdout's reader
    went away), or raises why it fails (an attach refused, a forward that never worked)."""
    if state.exact_out is not None and state.attach is not None and not state.attach.is_alive():
        state.exact_out.attach_ended()  # the log's line ends need not wait for it any more
    return state.reader_gone or _attach_refused(state) or _forward_failed(state)


def _attach_refused(state: RunState) -> bool:
    """An attach that failed, and that the container's end has not explained within
    ATTACH_GRACE_SECONDS, fails the run (raised here, so the wait ends); False otherwise."""
    child = state.attach
    if child is None or child.is_alive():
        return False
    code = child.wait(0)
    if code == 0:
        return False
    now = time.monotonic()
    if state.attach_failed_at is None:
        state.attach_failed_at = now
    if now - state.attach_failed_at < ATTACH_GRACE_SECONDS:
        return False
    from kubectl_squarepeg.cluster import attachment, capability

    stderr = child.stderr.decode("utf-8", "replace")
    pod = (state.watch.pod_name if state.watch else None) or state.plan.name
    tty = state.plan.options.tty
    raise (capability.attach_refusal(stderr, pod, tty=tty)
           or attachment.refusal(stderr, pod, state.commands, tty=tty))


def _forward_failed(state: RunState) -> bool:
    """A forward that never worked fails the run (raised here, so the wait ends)."""
    if state.forwarding is not None and state.forwarding.failure is not None:
        raise state.forwarding.failure
    return False


def stop_forwarding(state: RunState) -> None:
    if state.forwarding is not None:
        state.forwarding.stop()


def drain(state: RunState, outcome: podstate.Outcome, pod: str) -> None:
    """The container has ended: the attach's and the log's last output delivered, the
    head check heard. Output that could not all be read keeps the pod for it."""
    if state.terminal is not None:
        state.terminal.finish(ATTACH_DRAIN_SECONDS)
    if state.logs is not None and outcome.pod_deleted:
        state.logs.pod_is_gone()
    complete = state.logs is None or state.logs.finish(LOG_DRAIN_SECONDS, LOG_DRAIN_LIMIT_SECONDS)
    if not complete:
        # The user's only copy of the rest is the pod's log: it stays (unless
        # someone else deleted it, and the run says so).
        state.keep_for_output = not outcome.pod_deleted
    if state.exact_out is not None:
        if state.attach is not None:
            state.attach.wait(EXACT_DRAIN_SECONDS)
        state.exact_out.close()
    _hear_head_check(state, pod)
    if state.tty_log_out is not None:
        with contextlib.suppress(OSError, ValueError):
            state.tty_log_out.close()


def judge(state: RunState, outcome: podstate.Outcome, pod: str) -> None:
    """What the outcome means beyond its code: a command that could not start, a pod that
    ended without an exit code, a gap in the output (raised); a warning it carries."""
    if outcome.start_failure:
        said = outcome.message or ""
        raise StartupError(
            said + podevents.events_clause(state.events, pod, said=said),
            "check the command and that the image has it (the words after IMAGE, "
            f"--entrypoint); `{state.commands.events(pod)}` lists the pod's events",
            exit_code=outcome.exit_code,
        )
    if not outcome.from_container:
        said = outcome.message or f"pod {pod} ended without an exit code"
        raise ClusterError(
            said + podevents.events_clause(state.events, pod, said=said),
            f"the run did not finish; `{state.commands.events(pod)}` lists the "
            "pod's events, also after the cleanup",
            exit_code=outcome.exit_code,  # 125, or a deadline's 124
        )
    if outcome.message:
        state.console.warn(outcome.message)
    _refuse_a_gap(state, outcome.exit_code)


def _hear_head_check(state: RunState, pod: str) -> None:
    """Before the delete removes the node's files: whether the output's head was
    rotated away before the first read (run/loghead.py, docs/decisions/0280)."""
    if state.head is None or state.logs is None or state.logs.lost is not None:
        return
    loss = state.head.verdict(state.logs.first_timestamp, HEAD_CHECK_SECONDS)
    if loss is not None:
        state.head_lost = loss.message(pod)
        state.console.warn(f"{state.head_lost} ({loss.hint(state.commands)})")


def _refuse_a_gap(state: RunState, exit_code: int) -> None:
    """Output known to be incomplete never ends with the container's code, which would
    tell a script that all went well: exit 125, unless the user kept the pod (--keep),
    who then gets the container's code and has been warned (docs/decisions/0120)."""
    lost = state.logs.lost if state.logs is not None else None
    lost = lost or state.head_lost
    if lost is None or state.plan.options.keep:
        return
    raise ClusterError(
        f"{lost}; the container itself exited with code {exit_code}",
        "--keep keeps the pod and returns the container's code over a gap in the output",
    )


def restore_terminal(state: RunState) -> None:
    """Give the user's terminal back as it was (-it made it raw), on the way out of an
    abandoned cleanup, once kubectl attach (which restores it to raw as it exits) has
    ended. The cleanup itself does the same through `TerminalSession.close`."""
    if state.terminal is not None:
        state.terminal.restore()
