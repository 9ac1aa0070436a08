"""Watching the run's pod: the JSON stream parser, the watch that survives its own end, and
the two waits (for start, bounded by --timeout; for completion, unbounded).

Owns how `kubectl get -w --output-watch-events -o json` output becomes events, what a
watch that ends means (kubectl exits 0 when the server closes a watch, as a real apiserver
does every 30 to 60 minutes: it is started again, never taken for the end of the run; a
failure such as an API server restart is retried with backoff), the fail-fast decision on
the seven waiting reasons and on a Job whose pod its controller cannot create (admission
refused it: the Job's `FailedCreate` events), when a blocked pod's events are looked at
(run/podevents.py prints and quotes them), and the words of the status line a run shows
while it waits (`startup_status`: phase, reason, the image being pulled once the events have
been looked at, seconds).

One watch process serves both waits, so a clean run costs a single kubectl here. The
caller's thread waits in short slices (`SLICE_SECONDS`), so a signal handler can always cut
in. Never decides an exit code (podstate does) and never deletes anything (runner does).
"""

from __future__ import annotations

import codecs
import json
import queue
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kubectl_squarepeg.cluster import admission, kubectl, podstate, pullauth, verbs
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.errors import ClusterError, StartupError
from kubectl_squarepeg.run import nodeloss
from kubectl_squarepeg.run.podevents import EVENTS_INTERVAL_SECONDS, EventReporter, events_clause

SLICE_SECONDS = 0.1
# A Job's pod normally appears within a fraction of a second of the Job: its events are
# looked at (for the job controller's FailedCreate) only once none has appeared this long.
JOB_CREATE_GRACE_SECONDS = 1.0
# A watch that keeps failing (API server down) is retried this long before giving up; a
# restarted API server is normally back within seconds.
RETRY_WINDOW_SECONDS = 60.0
_BACKOFF_START, _BACKOFF_MAX = 0.2, 3.0
_WHITESPACE = " \t\r\n"


class JsonStream:
    """Splits a byte stream of concatenated JSON values (pretty-printed or one per line).

    Bytes may arrive in any chunking, even splitting a UTF-8 character; a value is returned
    once it is complete.
    """

    def __init__(self) -> None:
        self._decoder = json.JSONDecoder()
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""

    def feed(self, chunk: bytes) -> list[Any]:
        self._buffer += self._text.decode(chunk)
        values: list[Any] = []
        while True:
            start = len(self._buffer) - len(self._buffer.lstrip(_WHITESPACE))
            if start == len(self._buffer):
                self._buffer = ""
                return values
            try:
                value, end = self._decoder.raw_decode(self._buffer, start)
            except json.JSONDecodeError:
                self._buffer = self._buffer[start:]  # incomplete: wait for more bytes
                return values
            values.append(value)
            self._buffer = self._buffer[end:]

    @property
    def pending(self) -> str:
        """What has been received but is not a complete value yet."""
        return self._buffer


@dataclass(frozen=True)
class Event:
    """One watch event about a pod: ADDED, MODIFIED or DELETED, and the object."""

    type: str
    pod: dict[str, Any]


def parse_event(value: Any) -> Event | None:
    """A watch event from one printed value (an event, or a bare object), or None."""
    if not isinstance(value, dict):
        return None
    obj = value.get("object")
    if "type" in value and isinstance(obj, dict):
        kind = str(value["type"])
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            return Event(kind, obj)
        return None  # ERROR (a Status) or BOOKMARK: the watch decides whether to go on
    if value.get("kind") in (None, "Pod") and isinstance(value.get("metadata"), dict):
        return Event("MODIFIED", value)
    return None


def _is_not_found(stderr: bytes) -> bool:
    return b"NotFound" in stderr or b"not found" in stderr


class WatchProcess(Protocol):
    """What PodWatch needs of a running watch (a kubectl.Child)."""

    argv: tuple[str, ...]

    @property
    def stderr(self) -> bytes: ...
    def wait(self, timeout: float | None = None) -> int | None: ...
    def is_alive(self) -> bool: ...
    def terminate(self) -> None: ...


class PodWatch:
    """The run's pod, watched by one kubectl at a time, restarted whenever it ends.

    Pod mode watches the pod by name; Job mode watches pods with `job-name=JOB` and follows
    the first one that appears (backoffLimit is 0: there is only one).
    """

    def __init__(
        self,
        target: kubectl.Target,
        *,
        pod: str | None = None,
        job: str | None = None,
        start: Callable[..., WatchProcess] = verbs.watch_pods,
        clock: Callable[[], float] = time.monotonic,
        commands: Commands | None = None,
    ) -> None:
        if (pod is None) == (job is None):
            raise ValueError("watch either a pod or a job's pods")
        self._target = target
        self._commands = commands or Commands(target)
        self._pod = pod
        self._job = job
        self._start = start
        self._clock = clock
        self._queue: queue.Queue[Event | None] = queue.Queue()
        self._child: WatchProcess | None = None
        self._failing_since: float | None = None
        self._backoff = _BACKOFF_START
        self._retry_at = 0.0
        self.restarts = 0
        # Job mode: the Job's uid once its create has answered; a pod is followed only if
        # that Job owns it (the `job-name` label selects an earlier Job's pods too).
        self.job_uid: str | None = None
        # Shown every pod this watch reports (run/eventlog.py: the --events phases).
        self.observe: Callable[[Mapping[str, Any]], None] | None = None

    @property
    def pod_name(self) -> str | None:
        """The pod being followed (in Job mode, None until it has appeared)."""
        return self._pod

    @property
    def job_name(self) -> str | None:
        """The Job whose pod is followed (None in pod mode)."""
        return self._job

    def _on_stdout(self, stream: JsonStream) -> Callable[[bytes], None]:
        def deliver(chunk: bytes) -> None:
            for value in stream.feed(chunk):
                event = parse_event(value)
                if event is not None:
                    self._queue.put(event)

        return deliver

    def _launch(self, *, early: bool = False) -> None:
        deliver = self._on_stdout(JsonStream())
        if self._job is not None:
            self._child = self._start(
                self._target, selector=f"job-name={self._job}", on_stdout=deliver
            )
        elif early:
            self._child = self._start(
                self._target, field_selector=f"metadata.name={self._pod}", on_stdout=deliver
            )
        else:
            self._child = self._start(self._target, name=self._pod, on_stdout=deliver)

    def start(self, *, early: bool = False) -> None:
        """Start watching. `early`: the pod may not exist yet (its create is in flight).

        Only the first watch may be early: a restarted watch by name sees a pod that is
        gone as a 404, where a selector watch would show nothing and wait forever.
        """
        self._launch(early=early)

    def close(self) -> None:
        if self._child is not None:
            self._child.terminate()
            self._child = None

    def _child_ended(self) -> Event | None:
        """React to the watch process having ended: restart it, or report the pod gone."""
        child = self._child
        assert child is not None
        code = child.wait(0)
        assert code is not None
        self._child = None
        now = self._clock()
        if code == 0:
            self._failing_since = None
            self._backoff = _BACKOFF_START
            self.restarts += 1
            self._launch()
            return None
        if self._pod is not None and self._job is None and _is_not_found(child.stderr):
            return Event("DELETED", {"metadata": {"name": self._pod}})
        if self._failing_since is None:
            self._failing_since = now
        elif now - self._failing_since > RETRY_WINDOW_SECONDS:
            text = kubectl.Result(child.argv, code, b"", child.stderr).error_text
            raise ClusterError(
                f"lost the watch on the run's pod in namespace {self._target.namespace}: {text}",
                "check that the cluster is reachable "
                f"(`{self._commands.kubectl('cluster-info', namespaced=False)}`)",
            )
        self._retry_at = now + self._backoff
        self._backoff = min(self._backoff * 2, _BACKOFF_MAX)
        return None

    def next(self, timeout: float = SLICE_SECONDS) -> Event | None:
        """The next event about the followed pod, or None after at most `timeout` seconds."""
        if self._child is None and self._clock() >= self._retry_at:
            self.restarts += 1
            self._launch()
        try:
            event = self._queue.get(timeout=timeout)
        except queue.Empty:
            event = None
        if event is None:
            if self._child is not None and not self._child.is_alive() and self._queue.empty():
                return self._child_ended()
            return None
        self._failing_since = None
        if self._pod is None:
            if self.job_uid is not None and not _owned_by(event.pod, self.job_uid):
                return None  # an earlier Job's of the same name, still going (0340)
            self._pod = podstate.name(event.pod)
        elif podstate.name(event.pod) != self._pod:
            return None
        if self.observe is not None:
            self.observe(event.pod)
        return event


def _owned_by(pod: Mapping[str, Any], uid: str) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(o, Mapping) and o.get("uid") == uid for o in owners)


_IMAGE_HINT = (
    "check the image name and tag, and that the cluster can pull it "
    "(registry access, --image-pull-secret)"
)
_FAIL_FAST_HINTS = {
    "ImagePullBackOff": _IMAGE_HINT,
    "ErrImagePull": _IMAGE_HINT,
    "InvalidImageName": "fix the image reference (REGISTRY/REPOSITORY[:TAG|@DIGEST])",
    "CreateContainerConfigError": "check that every Secret and ConfigMap the pod refers to "
    "exists in the namespace",
    "ErrImageNeverPull": "the image is not on the node and `--pull never` forbids pulling it: "
    "use --pull missing, or an image the nodes already have",
}
_DEFAULT_FAIL_FAST_HINT = "the events above say why"


def _events_hint(commands: Commands, pod_name: str) -> str:
    return f"`{commands.events(pod_name)}` lists its events, also after the cleanup"


def startup_status(
    pod: Mapping[str, Any] | None, seconds: float, pulling: str | None = None
) -> str:
    """The status line of a run waiting for its pod: phase, the reason it waits (`pulling`,
    the event's 'Pulling image "…"', says more than ContainerCreating), seconds. No pod yet
    (a Job's, which its controller has not created) is said as such, not as Pending."""
    if pod is None:
        return f"waiting for the pod to be created ({seconds:.0f}s)"
    status = pod.get("status") or {}
    reason = None
    for container in status.get("containerStatuses") or []:
        if container.get("name") == podstate.MAIN:
            reason = ((container.get("state") or {}).get("waiting") or {}).get("reason")
    if pulling and reason in podstate.PROGRESS_REASONS:
        reason = pulling
    for condition in status.get("conditions") or []:
        if (
            not reason
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
        ):
            reason = condition.get("reason")
    phase = status.get("phase") or "Pending"
    detail = f"{phase}, {reason}" if reason else phase
    return f"waiting for the pod: {detail} ({seconds:.0f}s)"


def wait_for_start(
    watch: PodWatch,
    *,
    timeout: float,
    reporter: EventReporter,
    commands: Commands,
    clock: Callable[[], float] = time.monotonic,
    progress: Callable[[str], None] | None = None,
) -> Event:
    """Wait until the followed pod's main container has started (or already ended).

    Returns the event that showed it, or a DELETED event. Raises StartupError on a
    fail-fast reason, or when `timeout` seconds pass first; either carries the pod's events,
    since the pod itself is deleted by the cleanup that follows.
    """
    began = clock()
    deadline = began + timeout
    latest: Event | None = None
    job_creation = JobCreation(watch.job_name or "", reporter.fetch, clock)
    while True:
        if progress is not None:
            pod = latest.pod if latest else None
            progress(startup_status(pod, clock() - began, reporter.pulling))
        remaining = deadline - clock()
        if remaining <= 0:
            raise _timed_out(watch, latest, timeout, reporter, commands)
        event = watch.next(min(SLICE_SECONDS, remaining))
        if event is not None:
            latest = event
            if event.type == "DELETED" or podstate.has_started(event.pod):
                return event
            stuck = podstate.fail_fast(event.pod)
            if stuck is not None:
                pod_name = podstate.name(event.pod)
                detail = f": {stuck.message}" if stuck.message else ""
                reporter.fail_fast(stuck, pod_name)
                hint = _FAIL_FAST_HINTS.get(stuck.reason, _DEFAULT_FAIL_FAST_HINT)
                said = f"container {stuck.container} of pod {pod_name} cannot start: " + (
                    f"{stuck.reason}{detail}"
                )
                pull = pullauth.pod_refusal(
                    event.pod, stuck.container, stuck.reason, stuck.message
                )
                if pull is not None:  # decision 0424
                    hint = pull.fix(commands.kubectl(*pull.secret_args()))
                    said = (
                        f"container {stuck.container} of pod {pod_name} cannot start: "
                        f"{stuck.reason}: {pull.said()} ({stuck.message})"
                    )
                raise StartupError(
                    said + events_clause(reporter.fetch, pod_name, said=said),
                    f"{hint}; {_events_hint(commands, pod_name)}",
                )
        if latest is not None:
            reporter.poll(latest.pod)
        elif watch.job_name is not None and (refused := job_creation.poll()) is not None:
            raise _job_refused(watch.job_name, refused, reporter, commands)


class JobCreation:
    """Whether the job controller failed to create the Job's pod: its `FailedCreate`
    Warning events, looked at while no pod has appeared. A healthy Job's pod appears within
    a fraction of a second, so the first look waits `JOB_CREATE_GRACE_SECONDS` and a clean
    run pays for none; a refused one is said within that plus one events interval."""

    def __init__(
        self,
        job: str,
        fetch: Callable[[str], list[Mapping[str, Any]]],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._job = job
        self._fetch = fetch
        self._clock = clock
        self._next_fetch = clock() + JOB_CREATE_GRACE_SECONDS

    def poll(self) -> str | None:
        """The latest FailedCreate message, when it is time to look and there is one."""
        now = self._clock()
        if now < self._next_fetch:
            return None
        self._next_fetch = now + EVENTS_INTERVAL_SECONDS
        failed = [
            str(item.get("message") or "")
            for item in self._fetch(self._job)
            if item.get("type") == "Warning" and item.get("reason") == "FailedCreate"
        ]
        return failed[-1] if failed else None


def _job_refused(
    job: str, message: str, reporter: EventReporter, commands: Commands
) -> StartupError:
    said = f"job/{job} cannot create its pod: {admission.reason_of(message)}"
    refusal = admission.classify(message, describe=lambda kind: commands.kubectl("describe", kind))
    fix = refusal.fix if refusal else "the Job's events say why"
    return StartupError(said, f"{fix}; `{commands.events(job)}` lists the Job's events")


def _timed_out(
    watch: PodWatch,
    latest: Event | None,
    timeout: float,
    reporter: EventReporter,
    commands: Commands,
) -> StartupError:
    if latest is None:
        what = f"pod {watch.pod_name}" if watch.pod_name else "the job's pod"
        return StartupError(
            f"{what} did not appear within the startup timeout of {timeout:g}s",
            f"raise --timeout if the cluster is just slow; "
            f"`{commands.kubectl('get', 'events')}` lists the namespace's events",
        )
    pod_name = podstate.name(latest.pod)
    return StartupError(
        f"pod {pod_name} did not start within the startup timeout of {timeout:g}s "
        f"({podstate.pending_summary(latest.pod)}){events_clause(reporter.fetch, pod_name)}",
        f"raise --timeout if it is just slow; {_events_hint(commands, pod_name)}",
    )


def wait_for_finish(
    watch: PodWatch,
    latest: Event,
    *,
    stop: Callable[[], bool] = lambda: False,
    node: nodeloss.NodeClock | None = None,
) -> podstate.Outcome | None:
    """Wait, without a bound, until the main container has finished; its outcome, or None
    as soon as `stop()` says the wait is no longer wanted. A node that stopped answering
    ends the wait (`node`'s NodeLost, run/nodeloss.py) rather than leaving it to hang."""
    node = node or nodeloss.NodeClock()
    event = latest
    seen: Event | None = None
    while True:
        if event is not seen:
            node.see(event.pod)
            seen = event
        node.check()
        if event.type == "DELETED" and not podstate.has_finished(event.pod):
            return podstate.deleted_outcome(watch.pod_name or podstate.name(event.pod),
                                            event.pod)
        if podstate.has_finished(event.pod):
            return podstate.outcome(event.pod)
        if stop():
            return None
        following = watch.next(SLICE_SECONDS)
        if following is not None:
            event = following
