"""The run after the manifest: create, wait for start, stream logs, wait for completion,
exit code, cleanup (lifecycle spec, steps 4 to 7); and `--dry-run-server`.

Owns the order of the phases and the one place where cleanup happens (`Run.cleanup`,
exactly once, on every exit path: a normal end, a startup failure, an error, an
interrupt), and what a rejected create means to the user. The main thread never blocks in
one long call: it waits in short slices (watch.SLICE_SECONDS), so a signal handler can
raise `Interrupted` at any point; between phases `_checkpoint` is the place a cancellation
is honoured.

Kept costs low on purpose (scripts/bench-run): a clean run starts four kubectl processes:
the watch (started while the create is still in flight), the create, the log stream and
the delete (which does not wait for the pod to be gone).
"""

from __future__ import annotations

import importlib
import json
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO, Protocol

from kubectl_squarepeg import kubectl, podstate, watch
from kubectl_squarepeg.console import Console
from kubectl_squarepeg.errors import ClusterError, Interrupted, SquarepegError
from kubectl_squarepeg.interrupt import Resource

if TYPE_CHECKING:
    from kubectl_squarepeg.connect import Connection
    from kubectl_squarepeg.manifest import Plan

MAIN = podstate.MAIN
# How long the log stream may take to deliver what the container wrote after it ended.
LOG_DRAIN_SECONDS = 30.0


class Follower(Protocol):
    """What the runner needs of a log follower (logs.LogFollower)."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def join(self, timeout: float | None = None) -> bool: ...
    def finish(self, deadline_seconds: float) -> None: ...


class _WholeLog:
    """Stand-in for logs.LogFollower until it lands: the whole log, once the run ended."""

    def __init__(
        self, target: kubectl.Target, pod: str, container: str, out: BinaryIO, console: Console
    ) -> None:
        self._target, self._pod, self._container, self._out = target, pod, container, out
        self._console = console

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def join(self, timeout: float | None = None) -> bool:
        return True

    def finish(self, deadline_seconds: float) -> None:
        result = kubectl.logs(self._target, self._pod, self._container)
        if not result.ok:
            self._console.warn(f"could not read the log of pod {self._pod}: {result.error_text}")
        self._out.write(result.stdout)
        self._out.flush()


def _follower_factory() -> Callable[..., Follower]:
    # Imported late: logs.py is optional until it lands, and a dry run never needs it.
    try:
        logs = importlib.import_module("kubectl_squarepeg.logs")
    except ImportError:
        return _WholeLog
    factory: Callable[..., Follower] = logs.LogFollower
    return factory


# --- a rejected create ----------------------------------------------------------------------

_UNREACHABLE = (
    "connection refused",
    "was refused",
    "unable to connect",
    "no such host",
    "i/o timeout",
    "dial tcp",
    "couldn't get current server api group list",
    "did not answer within",
)


def rejection(result: kubectl.Result, kind: str, name: str, namespace: str) -> ClusterError:
    """A failed `kubectl create` as the user should see it: kubectl's reason and what to do."""
    reason = result.error_text
    lowered = reason.lower()
    ref = f"{kind.lower()}/{name}"
    ns = f"-n {namespace}"
    if "exceeded quota" in lowered:
        hint = (
            f"free some of the quota, or ask for less (--cpus, --memory); "
            f"`kubectl describe resourcequota {ns}` shows what is used"
        )
    elif "admission webhook" in lowered or "denied the request" in lowered:
        hint = (
            "the cluster's admission policy refused the manifest; change what it names "
            "(`--dry-run-server` checks without creating anything)"
        )
    elif "forbidden" in lowered:
        hint = (
            f"you lack permission: `kubectl auth can-i create {kind.lower()}s {ns}` checks, "
            "and a cluster admin can grant it"
        )
    elif "alreadyexists" in lowered or "already exists" in lowered:
        hint = f"choose another --name, or delete the old one: `kubectl delete {ref} {ns}`"
    elif "invalid" in lowered or "unknown field" in lowered:
        hint = "fix the field named above in the flags or config; `--dry-run` shows the manifest"
    elif "unauthorized" in lowered or "must be logged in" in lowered:
        hint = "log in to the cluster again; `kubectl auth whoami` shows who you are"
    elif any(word in lowered for word in _UNREACHABLE):
        hint = "check that the cluster is reachable: `kubectl cluster-info`"
    else:
        hint = "`kubectl squarepeg run --dry-run ...` prints the manifest that was sent"
    return ClusterError(f"cannot create {ref} in namespace {namespace}: {reason}", hint)


def _manifest_bytes(plan: Plan) -> bytes:
    return json.dumps(plan.manifest).encode("utf-8")


def dry_run_server(plan: Plan, connection: Connection, console: Console) -> int:
    """Send the manifest as a server-side dry run; print the apiserver's object as YAML."""
    try:
        result = kubectl.create(connection.target, _manifest_bytes(plan), dry_run_server=True)
        if not result.ok:
            raise rejection(result, plan.kind, plan.name, connection.namespace)
        sys.stdout.flush()
        sys.stdout.buffer.write(result.stdout)
        sys.stdout.buffer.flush()
        return 0
    finally:
        kubectl.terminate_all()


# --- the run --------------------------------------------------------------------------------


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
    ) -> None:
        self.plan = plan
        self.target = connection.target
        self.namespace = connection.namespace
        self.console = console
        self.resource = Resource(
            plan.kind,
            plan.name,
            connection.target,
            in_cluster=connection.in_cluster,
            keep=plan.options.keep,
        )
        self._out = out if out is not None else sys.stdout.buffer
        self._follower_factory = follower
        self.cancel = threading.Event()
        self.created = False
        self.uid: str | None = None
        self._watch: watch.PodWatch | None = None
        self._logs: Follower | None = None
        self._cleaned = False

    # -- phases

    def _checkpoint(self) -> None:
        """Between phases: stop here if the run was cancelled."""
        if self.cancel.is_set():
            raise Interrupted("the run was interrupted")

    def _start_watch(self) -> watch.PodWatch:
        if self.plan.kind == "Job":
            pod_watch = watch.PodWatch(self.target, job=self.plan.name)
        else:
            pod_watch = watch.PodWatch(self.target, pod=self.plan.name)
        self._watch = pod_watch
        return pod_watch

    def create(self) -> None:
        # The watch starts before the create returns (it tolerates a pod that does not exist
        # yet), so the two kubectl start-ups overlap.
        self._start_watch().start(early=True)
        result = kubectl.create(self.target, _manifest_bytes(self.plan))
        if not result.ok:
            raise rejection(result, self.plan.kind, self.plan.name, self.namespace)
        self.created = True
        try:
            self.uid = podstate.uid(json.loads(result.stdout)) or None
        except ValueError:
            self.uid = None

    def start_logs(self, pod: str) -> None:
        factory = self._follower_factory or _follower_factory()
        self._logs = factory(self.target, pod, MAIN, self._out, self.console)
        self._logs.start()

    def execute(self) -> int:
        """Every phase in order; the exit code. Cleanup is the caller's (`run_lifecycle`)."""
        self.create()
        self._checkpoint()
        assert self._watch is not None
        reporter = watch.EventReporter(self.console, watch.warning_events(self.target))
        started = watch.wait_for_start(
            self._watch,
            timeout=self.plan.options.timeout,
            reporter=reporter,
            target=self.target,
        )
        self._checkpoint()
        pod = self._watch.pod_name or self.plan.name
        if started.type != "DELETED":
            self.start_logs(pod)
        outcome = watch.wait_for_finish(self._watch, started)
        self._checkpoint()
        if self._logs is not None:
            self._logs.finish(LOG_DRAIN_SECONDS)
        if not outcome.from_container:
            raise ClusterError(
                outcome.message or f"pod {pod} ended without an exit code",
                f"the run did not finish; {self.resource.describe_command()} may say why",
            )
        if outcome.message:
            self.console.warn(outcome.message)
        return outcome.exit_code

    # -- the one cleanup

    def cleanup(self) -> None:
        """Stop the watch and logs, delete the resource unless kept, end every child. Once."""
        if self._cleaned:
            return
        self._cleaned = True
        try:
            if self._logs is not None:
                self._logs.stop()
            if self._watch is not None:
                self._watch.close()
            if self.created:
                if self.plan.options.keep:
                    self._print_inspect_commands()
                else:
                    self._delete()
        finally:
            kubectl.terminate_all()

    def _delete(self) -> None:
        try:
            result = kubectl.delete(self.target, self.plan.kind, self.plan.name)
        except SquarepegError as exc:
            self.console.warn(f"could not delete {self.resource.ref}: {exc.message}")
            return
        if not result.ok:
            self.console.warn(
                f"could not delete {self.resource.ref} in namespace {self.namespace}: "
                f"{result.error_text}; delete it yourself: {self.resource.delete_command()}"
            )

    def _print_inspect_commands(self) -> None:
        self.console.status(f"kept {self.resource.ref} in namespace {self.namespace}")
        self.console.status(f"inspect it: {self.resource.describe_command()}")
        self.console.status(f"its output: {self.resource.logs_command()}")


def run_lifecycle(plan: Plan, connection: Connection, console: Console) -> int:
    """Run the plan on the cluster and return the exit code squarepeg exits with."""
    run = Run(plan, connection, console)
    try:
        return run.execute()
    finally:
        run.cleanup()
