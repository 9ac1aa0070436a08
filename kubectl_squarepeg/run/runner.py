"""The run after the manifest: create, wait for start, stream logs, wait for completion,
exit code, cleanup (lifecycle spec, steps 4 to 7); and `--dry-run-server`.

Owns the order of the phases and the one place where cleanup happens (`Run.cleanup`,
exactly once, on every exit path: a normal end, a startup failure, an error, an
interrupt), and what a rejected create means to the user. The main thread never blocks in
one long call: it waits in short slices (watch.SLICE_SECONDS), so the two-stage interrupt
(interrupt.py) can raise `Interrupted` at any point outside a shield; the create and the
exit-code extraction are shielded, so a first Ctrl-C lets them finish.

The delete uses the pod's own grace period (`--stop-timeout`) and is not waited for: a run
stopped early (a signal, a closed pipe) exits once the delete is accepted and says that the
pod is terminating and for how long at most, since a PID 1 without a SIGTERM handler (a
shell) keeps it for its whole grace period (docs/decisions/0140-stop-exits-promptly.md); a
create refused because the name's pod is still terminating says for how long (0141).
A pod deleted before its upload of `-v` files completed is given one second instead: `main`
cannot have started, and the upload helper's SIGTERM may come before its shell's trap
(docs/decisions/0290-a-stop-during-the-upload.md).

The orphan sweep starts on its own thread once the output streams (or, if the container
never started, at cleanup), provided the create succeeded (a create that failed has
nothing to ride along with); the exit path waits for it. Kept costs low on purpose
(scripts/bench-run): a clean run starts four kubectl processes of its own (the create, and
the watch started while it is in flight; the log stream; the delete, started when the
container starts and handed the object at the end, so that the exit pays one request rather
than a kubectl start-up), plus the sweep's list, and its delete when it found orphans.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from kubectl_squarepeg.cluster import admission, complaints, kubectl, podstate, verbs
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.errors import (
    INTERRUPTED,
    ClusterError,
    Interrupted,
    ReaderGone,
    SquarepegError,
    StartupError,
)
from kubectl_squarepeg.plan.labels import KEEP_LABEL
from kubectl_squarepeg.run import interrupt, watch
from kubectl_squarepeg.terminal.console import Console

if TYPE_CHECKING:
    from kubectl_squarepeg.cluster.connect import Connection
    from kubectl_squarepeg.files.upload import Checked
    from kubectl_squarepeg.plan.manifest import Plan
    from kubectl_squarepeg.plan.ports import PublishedPort
    from kubectl_squarepeg.run import ports, sweep
    from kubectl_squarepeg.run.files import FileTransfer
    from kubectl_squarepeg.run.loghead import HeadCheck
    from kubectl_squarepeg.terminal import session as terminal

MAIN = podstate.MAIN
# A writer whose reader went away ends as if by SIGPIPE, as `yes | head -1` does.
READER_GONE = 128 + 13
# How long the log stream may take to deliver what the container wrote after it ended.
LOG_DRAIN_SECONDS = 30.0
# How long the end waits for the head check's verdict (two requests of the node's files).
HEAD_CHECK_SECONDS = 15.0
# How long an attach may have failed before the container's end explains it; after that,
# a container still waiting for its input will not get it: the run fails (exit 125).
ATTACH_GRACE_SECONDS = 3.0
# How long `run -it` waits for kubectl attach to end and its output to be relayed.
ATTACH_DRAIN_SECONDS = 10.0
# How long the exit path waits for the orphan sweep that rode along with the run.
SWEEP_JOIN_SECONDS = 60.0
DELETE_SECONDS = 60.0
# A delete that could not reach the API server (it is restarting, a proxy dropped the
# connection) is tried again for this long: `--ignore-not-found` makes a repeat harmless.
DELETE_RETRY_SECONDS = 30.0


class Follower(Protocol):
    """What the runner needs of a log follower (logs.LogFollower)."""

    reader_gone: bool  # stdout was closed by its reader (`| head -1`)
    lost: str | None  # what the output is missing, if anything (a gap, or the rest)

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def join(self, timeout: float | None = None) -> bool: ...
    def finish(self, deadline_seconds: float) -> bool: ...
    def pod_is_gone(self) -> None: ...
    @property
    def first_timestamp(self) -> bytes: ...  # of the output's first line, b"" before it


# --- a rejected create ----------------------------------------------------------------------

# A create refused before anything was sent: kubectl could not connect at all (Go's dial
# error; also when fetching the OpenAPI document it validates against). Retried for a while.
_REFUSED = ("connect: connection refused", "was refused - did you specify the right host")
CREATE_RETRY_SECONDS = 30.0
CREATE_RETRY_FIRST_PAUSE, CREATE_RETRY_MAX_PAUSE = 0.5, 4.0


def unreachable(result: kubectl.Result) -> bool:
    """Whether a failed kubectl command did not get an answer from the API server."""
    return complaints.unreachable(result.stderr.decode("utf-8", "replace"))


def refused_before_sending(result: kubectl.Result) -> bool:
    """Whether a failed `kubectl create` never reached the API server (safe to repeat)."""
    text = result.stderr.decode("utf-8", "replace")
    if admission.classify(text) is not None:  # a webhook the API server could not reach
        return False
    return any(refused in text for refused in _REFUSED)


_NAMESPACE_MISSING = re.compile(r'namespaces? "([^"]+)" not found')


def rejection(
    result: kubectl.Result,
    kind: str,
    name: str,
    commands: Commands,
    *,
    dry_run_server: bool = False,
) -> ClusterError:
    """A failed `kubectl create` as the user should see it: kubectl's reason and what to do.

    Every command a hint names carries the run's kubeconfig, context and namespace."""
    reason = result.error_text
    lowered = reason.lower()
    ref = f"{kind.lower()}/{name}"
    namespace = commands.namespace
    plural = kind.lower() + "s"
    missing = _NAMESPACE_MISSING.search(reason)
    if missing is not None:
        return ClusterError(
            f"namespace {missing.group(1)} does not exist (creating {ref})",
            f"create it with `{_create_namespace(commands, missing.group(1))}`, "
            "or choose another with -n",
        )
    refused = admission.classify(reason, describe=lambda kind: commands.kubectl("describe", kind))
    if refused is not None:
        hint = refused.fix
        if refused.fixable and not dry_run_server:
            hint += " (`--dry-run-server` checks a change without creating anything)"
    elif "forbidden" in lowered:
        hint = (
            f"you lack permission: `{commands.kubectl('auth', 'can-i', 'create', plural)}` "
            "checks, and a cluster admin can grant it"
        )
    elif "alreadyexists" in lowered or "already exists" in lowered:
        hint = f"choose another --name, or delete the old one: `{commands.delete(kind, name)}`"
    elif "invalid" in lowered or "unknown field" in lowered:
        hint = "fix the field named above in the flags or config; `--dry-run` shows the manifest"
    elif "unauthorized" in lowered or "must be logged in" in lowered:
        whoami = commands.kubectl("auth", "whoami", namespaced=False)
        hint = f"log in to the cluster again; `{whoami}` shows who you are"
    elif complaints.credential_plugin_failed(reason):
        whoami = commands.kubectl("auth", "whoami", namespaced=False)
        hint = f"the kubeconfig's credential plugin failed, as said above; `{whoami}` runs it again"
    elif complaints.unreachable(reason):
        hint = commands.reachability_hint()
    else:
        hint = "`kubectl squarepeg run --dry-run ...` prints the manifest that was sent"
    return ClusterError(f"cannot create {ref} in namespace {namespace}: {reason}", hint)


# The API server's word for a create whose name belongs to an object being deleted
# (`AlreadyExists: object is being deleted: pods "x" already exists`).
BEING_DELETED = "object is being deleted"
# How long after its deletionTimestamp a pod may still be listed: the kubelet confirms the
# deletion once the container is stopped (0.17 s measured on the real node for a finished
# pod; a second or two more at the end of a grace period).
CONFIRM_SLACK_SECONDS = 5
# The grace period of a pod deleted before its upload completed (0290); kubectl itself
# turns 0 into 1 unless the delete is forced, which would not wait for the kubelet.
BEFORE_MAIN_GRACE_SECONDS = 1


def terminating_refusal(
    kind: str, name: str, commands: Commands, found: kubectl.Result, now: float | None = None
) -> ClusterError:
    """A create refused because the name's earlier owner is still terminating: not a name
    to delete (it is being deleted), but one to wait for, and for how long at most: its
    `deletionTimestamp` is when its grace period ends and the kubelet kills what is left."""
    ref = f"{kind.lower()}/{name}"
    where = f"in namespace {commands.namespace}"
    deadline = None
    if found.ok:
        try:
            deadline = podstate.deletion_deadline(json.loads(found.stdout))
        except ValueError:
            deadline = None
    if deadline is None:
        return ClusterError(
            f"cannot create {ref} {where}: an earlier {ref} was still terminating",
            "it is gone now, or within its grace period (--stop-timeout, 30 s by default): "
            "run again, or choose another --name",
        )
    left = max(0, math.ceil(deadline.timestamp() - (time.time() if now is None else now)))
    timeout = f"--timeout={left + CONFIRM_SLACK_SECONDS}s"
    wait = commands.kubectl("wait", "--for=delete", ref, timeout)
    return ClusterError(
        f"cannot create {ref} {where}: an earlier {ref} is still terminating; its grace "
        f"period ends in {left}s at most ({deadline:%H:%M:%S} UTC), when it is killed if "
        "it has not exited",
        f"wait for it with `{wait}` and run again, or choose another --name",
    )


def _create_namespace(commands: Commands, namespace: str) -> str:
    return commands.kubectl("create", "namespace", namespace, namespaced=False)


def _manifest_bytes(plan: Plan) -> bytes:
    return json.dumps(plan.manifest).encode("utf-8")


def dry_run_server(plan: Plan, connection: Connection, console: Console) -> int:
    """Send the manifest as a server-side dry run; print the apiserver's object as YAML."""
    try:
        result = verbs.create_dry_run(connection.target, _manifest_bytes(plan))
        if not result.ok:
            from kubectl_squarepeg.cluster import capability

            commands = Commands(connection.target, connection.in_cluster)
            raise (capability.dry_run_refusal(result.error_text)
                   or rejection(result, plan.kind, plan.name, commands, dry_run_server=True))
        sys.stdout.flush()
        sys.stdout.buffer.write(result.stdout)
        sys.stdout.buffer.flush()
        return 0
    finally:
        kubectl.terminate_all()


# --- the run --------------------------------------------------------------------------------


class _Shields(Protocol):
    """The part of interrupt.TwoStageInterrupt the run uses to keep a step whole."""

    def shield(self, *, raise_pending: bool = True) -> contextlib.AbstractContextManager[None]: ...


class _NoShields:
    def shield(self, *, raise_pending: bool = True) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


class Run:
    """One run's resource on the cluster, from its create to its cleanup."""

    def __init__(
        self,
        plan: Plan,
        connection: Connection,
        console: Console,
        *,
        out: BinaryIO | None = None,
        follower: Callable[..., Follower] | None = None,
        shields: _Shields | None = None,
        files_checked: Checked | None = None,
    ) -> None:
        self.plan = plan
        self.target = connection.target
        self.namespace = connection.namespace
        self.console = console
        self.resource = interrupt.Resource(
            plan.kind,
            plan.name,
            connection.target,
            in_cluster=connection.in_cluster,
            keep=plan.options.keep,
        )
        self._connection = connection
        self.commands = self.resource.commands
        self._out = out if out is not None else sys.stdout.buffer
        self._stdin_fd = 0  # squarepeg's own stdin: what -i hands to kubectl attach
        self._follower_factory = follower
        self.shields: _Shields = shields or _NoShields()
        self.created = False
        self.progress = interrupt.Progress()  # what a second Ctrl-C may say about it
        self.uid: str | None = None
        self._watch: watch.PodWatch | None = None
        self._logs: Follower | None = None
        self._sweep: sweep.SweepHandle | None = None
        self._pending_delete: tuple[kubectl.Child, kubectl.HeldStdin] | None = None
        self._events = watch.warning_events(self.target)
        self._keep_for_output = False
        self._cleaned = False
        self._attach: kubectl.Child | None = None
        self._attach_failed_at: float | None = None
        self._terminal: terminal.TerminalSession | None = None
        # What the cleanup of a run stopped early (a signal, a closed pipe) must tell: that
        # the container was still running, and the grace period it now has to exit.
        self.stopped_early = False
        self._container_running = False
        self._grace_seconds: int | None = None
        self._tty_log_out: Any = None  # -t without -i: the log's line ends, converted
        self._head: HeadCheck | None = None  # whether the log's head was rotated away
        self._head_lost: str | None = None
        self._files: FileTransfer | None = None  # -v SRC:DST (run/files.py)
        # Until the upload has completed, `main` waits in the pod (the helper's flags).
        self._main_held = files_checked is not None
        if files_checked is not None:
            from kubectl_squarepeg.run.files import FileTransfer

            self._files = FileTransfer(
                files_checked, self.target, self.commands, console,
                owner_kept=plan.options.user is None,
            )
        # -p: the local ports (checked free and chosen by `run` before the create:
        # run/ports.py `reserve`), and their kubectl port-forward while the container runs.
        self._published: tuple[PublishedPort, ...] = plan.options.publish
        self._forwarding: ports.Forwarding | None = None

    # -- phases

    def _new_watch(self) -> watch.PodWatch:
        if self.plan.kind == "Job":
            pod_watch = watch.PodWatch(self.target, job=self.plan.name, commands=self.commands)
        else:
            pod_watch = watch.PodWatch(self.target, pod=self.plan.name, commands=self.commands)
        self._watch = pod_watch
        return pod_watch

    def create(self) -> None:
        # Shielded: a first Ctrl-C while the create is in flight waits for it, so a created
        # resource is always known and deleted, never left behind by a create that
        # finished after we stopped looking. That it was created is recorded inside the
        # same shield, for the same reason.
        with self.shields.shield():
            result = kubectl.collect(self._start_create_and_watch())
            if not result.ok and not refused_before_sending(result):
                raise self._refusal(result)
            self._note_created(result)
        waited, pause = 0.0, CREATE_RETRY_FIRST_PAUSE
        while not result.ok:
            # The API server refused the connection (it is restarting, say): nothing was
            # sent, so trying again cannot create twice. The pause is outside the shield:
            # a Ctrl-C meanwhile ends the run at once, and nothing exists yet.
            if waited >= CREATE_RETRY_SECONDS:
                raise rejection(result, self.plan.kind, self.plan.name, self.commands)
            time.sleep(pause)
            waited, pause = waited + pause, min(pause * 2, CREATE_RETRY_MAX_PAUSE)
            with self.shields.shield():
                manifest = _manifest_bytes(self.plan)
                result = kubectl.collect(self._start_create(manifest))
                if not result.ok and not refused_before_sending(result):
                    raise self._refusal(result)
                self._note_created(result)

    def _refusal(self, result: kubectl.Result) -> ClusterError:
        """The create's refusal as the user should see it (`rejection`), or, for a name
        whose earlier owner is still terminating, how long it may take at most."""
        if BEING_DELETED not in result.error_text:
            return rejection(result, self.plan.kind, self.plan.name, self.commands)
        return terminating_refusal(
            self.plan.kind,
            self.plan.name,
            self.commands,
            verbs.get_object(self.target, self.plan.kind, self.plan.name),
        )

    def _note_created(self, result: kubectl.Result) -> None:
        if not result.ok:
            return
        self.created = self.progress.created = True
        try:
            self.uid = podstate.uid(json.loads(result.stdout)) or None
        except ValueError:
            self.uid = None

    def _start_create(self, manifest: bytes) -> kubectl.Child:
        return verbs.start_create(self.target, manifest, self.plan.kind, self.plan.namespace)

    def _start_create_and_watch(self) -> kubectl.Child:
        """The create first (it is what the run waits for), then the watch, which tolerates
        a pod that does not exist yet, so that their start-ups overlap."""
        pod_watch = self._new_watch()
        creating = self._start_create(_manifest_bytes(self.plan))
        pod_watch.start(early=True)
        return creating

    def _start_sweep(self) -> None:
        """The orphan sweep rides along from here, on its own thread (lifecycle spec)."""
        options = self.plan.options
        if not options.orphan_sweep or self._sweep is not None or not self.created:
            return
        from kubectl_squarepeg.run import sweep  # after the create: nothing before it waits

        self._sweep = sweep.sweep_in_background(
            self._connection,
            self.plan.created_by,
            min_age=options.orphan_sweep_min_age,
            console=self.console,
            exclude_uid=self.uid,
            exclude_name=self.plan.name,
        )

    def _reader_gone(self) -> bool:
        return self._logs is not None and self._logs.reader_gone

    @property
    def reader_gone(self) -> bool:
        """stdout's reader went away (`| head -1`): the run stopped early."""
        return self._reader_gone()

    def start_logs(self, pod: str, out: BinaryIO | None = None) -> None:
        if self._follower_factory is None:
            from kubectl_squarepeg.run import logs  # after the create: nothing before it waits

            self._follower_factory = logs.LogFollower
        factory = self._follower_factory
        self._logs = factory(
            self.target,
            pod,
            MAIN,
            out or self._out,
            self.console,
            logs_command=self.commands.logs("Pod", pod),
            commands=self.commands,
            on_first_line=self._head.start if self._head is not None else None,
        )
        if not self._container_running:
            # Seen ended at once (a quick container goes from Pending to Succeeded on a real
            # node): its first request reads a final log, and one that brings nothing is
            # the whole proof (logs.py, "Complete"; docs/decisions/0200).
            self._logs.finish(0)
        self._logs.start()

    # -- -i and -it: the attach

    def _start_output(self, pod: str) -> None:
        """The log stream, and for -i the attach that feeds stdin (lifecycle spec, step 5;
        README, "Interactive runs"). On a terminal (-it) the attach's output is the output,
        spliced after what the log had before it (terminal/session.py)."""
        options = self.plan.options
        if options.interactive and options.tty:
            from kubectl_squarepeg.terminal import (
                session as terminal,  # only -it needs termios and a pty
            )

            session = terminal.TerminalSession(self._out, self._stdin_fd)
            self._terminal = session
            self.console.terminal_raw(True)
            self.start_logs(pod, out=session.log_out)
            self._attach = session.start(  # type: ignore[assignment]
                lambda relay: verbs.attach_terminal(
                    self.target, pod, MAIN, stdin_fd=self._stdin_fd, stdout_fd=relay
                )
            )
            return
        if options.tty:
            # -t alone: the log is the output, with `\n` line ends on every cluster
            # (terminal/lineends.py).
            from kubectl_squarepeg.terminal.lineends import LogLineEndsOut

            self._tty_log_out = LogLineEndsOut(self._out)
            self.start_logs(pod, out=self._tty_log_out)
            return
        self.start_logs(pod)
        if options.interactive:
            self._attach = verbs.attach_stdin(self.target, pod, MAIN, stdin_fd=self._stdin_fd)

    def _attach_refused(self) -> bool:
        """Between waits for the container's end: an attach that failed, and that the
        container's end has not explained within ATTACH_GRACE_SECONDS, fails the run
        (raised here, so the wait ends); False otherwise."""
        child = self._attach
        if child is None or child.is_alive():
            return False
        code = child.wait(0)
        if code == 0:
            return False
        now = time.monotonic()
        if self._attach_failed_at is None:
            self._attach_failed_at = now
        if now - self._attach_failed_at < ATTACH_GRACE_SECONDS:
            return False
        from kubectl_squarepeg.cluster import attachment, capability

        stderr = child.stderr.decode("utf-8", "replace")
        pod = (self._watch.pod_name if self._watch else None) or self.plan.name
        tty = self.plan.options.tty
        raise (capability.attach_refusal(stderr, pod, tty=tty)
               or attachment.refusal(stderr, pod, self.commands, tty=tty))

    # -- -p: the port-forward

    def _start_forwarding(self, pod: str) -> None:
        from kubectl_squarepeg.run import ports

        self._forwarding = ports.Forwarding(
            self.target, pod, self._published, self.console, self.commands
        )
        self._forwarding.start()

    def _forward_failed(self) -> bool:
        """Between waits for the container's end: a forward that never worked fails the run
        (raised here, so the wait ends); False otherwise."""
        if self._forwarding is not None and self._forwarding.failure is not None:
            raise self._forwarding.failure
        return False

    def _stop_forwarding(self) -> None:
        if self._forwarding is not None:
            self._forwarding.stop()

    def start(self) -> tuple[watch.Event, str]:
        """Create the resource, fill its volumes, and wait until its container has started
        (or has ended, or its pod is gone): that event and the pod's name."""
        self.create()
        assert self._watch is not None
        if self._files is not None:
            # The upload helper first: main starts on the filled volumes (run/files.py).
            helper_pod = self._files.wait_for_helper(self._watch, self.plan.options.timeout)
            if helper_pod is not None:
                self._files.upload(helper_pod)
            self._main_held = False
        reporter = watch.EventReporter(self.console, self._events)
        started = watch.wait_for_start(
            self._watch,
            timeout=self.plan.options.timeout,
            reporter=reporter,
            commands=self.commands,
            progress=self.console.progress,
        )
        self.console.end_progress()
        return started, self._watch.pod_name or self.plan.name

    def execute(self) -> int:
        """Every phase in order; the exit code. Cleanup is the caller's (`run_lifecycle`)."""
        started, pod = self.start()
        assert self._watch is not None
        if started.type != "DELETED":
            self._container_running = not podstate.has_finished(started.pod)
            self._grace_seconds = podstate.grace_period(started.pod)
            if not kubectl.switched_off("head-check"):
                from kubectl_squarepeg.run.loghead import HeadCheck

                self._head = HeadCheck(self.target, started.pod, MAIN)
            self._start_output(pod)
            if self._published and self._container_running:
                self._start_forwarding(pod)
            self._prepare_delete()
        # After the log stream's start, so that its kubectl does not delay the output's.
        self._start_sweep()
        outcome = watch.wait_for_finish(
            self._watch,
            started,
            stop=lambda: self._reader_gone() or self._attach_refused() or self._forward_failed(),
        )
        self._stop_forwarding()  # the container has ended: its ports close, as docker's do
        if outcome is None:
            raise ReaderGone("stdout was closed by its reader")
        self._container_running = False
        if self._head is not None:
            self._head.start()  # now, if no line has come: what it lists is final
        # The exit code is known: a first Ctrl-C from here on lets the output drain and
        # the code be reported, then exits 130 (the shield raises it at its end).
        with self.shields.shield():
            if self._terminal is not None:
                self._terminal.finish(ATTACH_DRAIN_SECONDS)
            if self._logs is not None and outcome.pod_deleted:
                self._logs.pod_is_gone()
            if self._logs is not None and not self._logs.finish(LOG_DRAIN_SECONDS):
                # The user's only copy of the rest is the pod's log: it stays (unless
                # someone else deleted it, and the run says so).
                self._keep_for_output = not outcome.pod_deleted
            self._hear_head_check(pod)
            if self._tty_log_out is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._tty_log_out.close()
            if outcome.start_failure:
                said = outcome.message or ""
                raise StartupError(
                    said + watch.events_clause(self._events, pod, said=said),
                    "check the command and that the image has it (the words after IMAGE, "
                    f"--entrypoint); `{self.commands.events(pod)}` lists the pod's events",
                    exit_code=outcome.exit_code,
                )
            if not outcome.from_container:
                said = outcome.message or f"pod {pod} ended without an exit code"
                raise ClusterError(
                    said + watch.events_clause(self._events, pod, said=said),
                    f"the run did not finish; `{self.commands.events(pod)}` lists the "
                    "pod's events, also after the cleanup",
                    exit_code=outcome.exit_code,  # 125, or a deadline's 124
                )
            if outcome.message:
                self.console.warn(outcome.message)
            self._refuse_a_gap(outcome.exit_code)
            self._copy_back(pod, outcome)
            return outcome.exit_code

    def _hear_head_check(self, pod: str) -> None:
        """Before the delete removes the node's files: whether the output's head was
        rotated away before the first read (run/loghead.py, docs/decisions/0280)."""
        if self._head is None or self._logs is None or self._logs.lost is not None:
            return
        loss = self._head.verdict(self._logs.first_timestamp, HEAD_CHECK_SECONDS)
        if loss is not None:
            self._head_lost = loss.message(pod)
            self.console.warn(f"{self._head_lost} ({loss.hint(self.commands)})")

    def _copy_back(self, pod: str, outcome: podstate.Outcome) -> None:
        """The rw mounts back into SRC (run/files.py); a failed copy exits 125 only when the
        container succeeded, and is a warning otherwise: the exit code stays main's."""
        files = self._files
        if files is None or not files.copied_back or outcome.pod_deleted:
            return
        try:
            files.copy_back(pod)
        except ClusterError as exc:
            if outcome.exit_code == 0:
                raise
            self.console.warn(f"{exc.message}; {exc.hint}" if exc.hint else exc.message)
        finally:
            files.release(pod)

    def _refuse_a_gap(self, exit_code: int) -> None:
        """Output known to be incomplete never ends with the container's code, which would
        tell a script that all went well: exit 125, unless the user kept the pod (--keep),
        who then gets the container's code and has been warned (docs/decisions/0120)."""
        lost = self._logs.lost if self._logs is not None else None
        lost = lost or self._head_lost
        if lost is None or self.plan.options.keep:
            return
        raise ClusterError(
            f"{lost}; the container itself exited with code {exit_code}",
            "--keep keeps the pod and returns the container's code over a gap in the output",
        )

    def restore_terminal(self) -> None:
        """Give the user's terminal back as it was (-it made it raw), on the way out of an
        abandoned cleanup, once kubectl attach (which restores it to raw as it exits) has
        ended. The cleanup itself does the same through `TerminalSession.close`."""
        if self._terminal is not None:
            self._terminal.restore()

    # -- the one cleanup

    def cleanup(self) -> None:
        """Stop the watch and logs, delete the resource unless kept, let the sweep finish,
        end every child. Runs once, whatever happened before."""
        if self._cleaned:
            return
        self._cleaned = True
        try:
            if self._terminal is not None:
                self._terminal.close()
                self.console.terminal_raw(False)
            self._stop_forwarding()
            if self._logs is not None:
                self._logs.stop()
            if self._watch is not None:
                self._watch.close()
            if self.created:
                if self.plan.options.keep:
                    self._print_inspect_commands()
                elif self._keep_for_output:
                    self._keep_unread_output()
                else:
                    self._delete()
            self._start_sweep()  # now, if the container never started
            if self._sweep is not None and not self._sweep.join(SWEEP_JOIN_SECONDS):
                self.console.warn(
                    f"orphan sweep still running after {SWEEP_JOIN_SECONDS:g}s; stopped it"
                )
        finally:
            kubectl.terminate_all()

    def _prepare_delete(self) -> None:
        """Start the final delete's kubectl now, while the container runs (kubectl.py)."""
        if not self.plan.options.keep and not kubectl.switched_off("prepared-delete"):
            self._pending_delete = verbs.prepare_delete(self.target, self.plan.kind)

    def _delete(self) -> None:
        self.progress.delete_sent = True
        try:
            result = self._prepared_delete_result() or self._delete_until_reached()
        except SquarepegError as exc:
            self.console.warn(f"could not delete {self.resource.ref}: {exc.message}")
            return
        if not result.ok:
            self.console.warn(
                f"could not delete {self.resource.ref} in namespace {self.namespace}: "
                f"{result.error_text}{self.commands.permission_check(result.error_text)}; "
                f"delete it yourself: {self.resource.delete_command()}"
            )
        elif self.stopped_early and self._container_running:
            self.console.notice(self._terminating_message())

    def _terminating_message(self) -> str:
        """After a stop (a signal, a closed pipe) deleted a pod whose container still ran:
        squarepeg exits now, the pod goes on its own time (docs/decisions/0140)."""
        grace = self._grace_seconds
        within = f"within {grace}s" if grace is not None else "within its grace period"
        ref = self.resource.ref
        if self.plan.kind == "Job":
            return (
                f"{ref} is deleted; its pod is terminating: its container was sent SIGTERM "
                f"and is killed if it has not exited {within} (--stop-timeout)"
            )
        return (
            f"{ref} is terminating: its container was sent SIGTERM and is killed if it has "
            f"not exited {within} (--stop-timeout); the name {self.plan.name} is taken "
            "until then"
        )

    def _delete_until_reached(self) -> kubectl.Result:
        """The plain delete, tried again while the API server cannot be reached. The pauses
        are not shielded: a second Ctrl-C still abandons the cleanup at once."""
        waited, pause = 0.0, CREATE_RETRY_FIRST_PAUSE
        held_pod = self._main_held and self.plan.kind == "Pod"
        grace = BEFORE_MAIN_GRACE_SECONDS if held_pod else None
        while True:
            result = verbs.delete(self.target, self.plan.kind, self.plan.name, grace)
            if result.ok or not unreachable(result) or waited >= DELETE_RETRY_SECONDS:
                return result
            time.sleep(pause)
            waited, pause = waited + pause, min(pause * 2, CREATE_RETRY_MAX_PAUSE)

    def _prepared_delete_result(self) -> kubectl.Result | None:
        """The prepared delete, released; None when there is none, or it died waiting."""
        if self._pending_delete is None:
            return None
        child, held = self._pending_delete
        self._pending_delete = None
        if not child.is_alive():
            return None
        held.release(verbs.reference(self.plan.kind, self.plan.name, self.namespace))
        result = kubectl.collect(child, timeout=DELETE_SECONDS)
        return result if result.ok else None  # the plain delete, whose error is reported

    def _keep_unread_output(self) -> None:
        """Keep the resource whose output could not all be read, labelled as --keep does
        (so no sweep takes it), and say how to read the rest and delete it."""
        res = self.resource
        labelled = verbs.label(self.target, self.plan.kind, self.plan.name, f"{KEEP_LABEL}=true")
        how = "labelled " + KEEP_LABEL if labelled.ok else "not labelled (the sweep may take it)"
        self.console.warn(
            f"kept {res.ref} in namespace {self.namespace} ({how}): its output could not "
            f"all be read; the rest: `{self.commands.logs(self.plan.kind, self.plan.name)}`; "
            f"then delete it: `{res.delete_command()}`"
        )

    def _print_inspect_commands(self) -> None:
        # The name is the one thing a kept run must tell, even when quiet.
        self.console.notice(f"kept {self.resource.ref} in namespace {self.namespace}")
        self.console.status(f"inspect it: {self.resource.describe_command()}")
        self.console.status(f"its output: {self.resource.logs_command()}")


def run_lifecycle(
    plan: Plan, connection: Connection, console: Console, files_checked: Checked | None = None
) -> int:
    """Run the plan on the cluster, guarded by the two-stage interrupt; the exit code.

    A signal during the run makes the exit code 130 whatever else happened; the cleanup
    (delete unless kept, the sweep's end) runs shielded, so a first signal cannot cut it
    short, while a second one abandons it (interrupt.py).
    """
    run = Run(plan, connection, console, files_checked=files_checked)
    handler: interrupt.TwoStageInterrupt | None = None
    try:
        with interrupt.guard(
            run.resource, console, progress=run.progress, on_abandon=run.restore_terminal
        ) as handler:
            run.shields = handler
            try:
                code = run.execute()
            except Interrupted:
                code = INTERRUPTED
            except ReaderGone:
                code = READER_GONE
            except SquarepegError:
                if not handler.interrupted:
                    raise
                code = INTERRUPTED
            finally:
                handler.caught()
                run.stopped_early = handler.interrupted or run.reader_gone
                with handler.shield(raise_pending=False):
                    run.cleanup()
                handler.stopped()  # no hint about a second signal from here on
            return handler.exit_code if handler.interrupted else code
    except Interrupted:
        # A first signal in the instant before the run began or after its cleanup ended:
        # there is nothing (more) to clean up, and its one line has been printed.
        if handler is not None:
            handler.caught()
        run.cleanup()
        return handler.exit_code if handler is not None else INTERRUPTED


def execute(
    plan: Plan, connection: Connection, console: Console, files_checked: Checked | None = None
) -> int:
    """What `run` does once the plan and the connection are known: a server-side dry run,
    or the whole lifecycle."""
    if plan.options.dry_run_server:
        return dry_run_server(plan, connection, console)
    return run_lifecycle(plan, connection, console, files_checked)
