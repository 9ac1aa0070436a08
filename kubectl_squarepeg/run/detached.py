"""Detached runs and docker's verbs for them: `run -d`, `ps`, `logs`, `wait`, `rm`.

Owns finding a run by name (one `kubectl get pods,jobs -l managed-by=squarepeg`: a name
that is not a squarepeg run, or is another user's, is refused naming its owner, before
anything is done), and what each verb does with it:

- `run -d` (`run_detached`): the run's own create phase (run/create.py, so the fail-fast
  reasons, scheduling events and --timeout are a run's), then the resource is released by
  the cleanup phase (run/cleanup.py `release`): left on the cluster, its name printed on
  stdout, exit 0. A run that never started is deleted as a run's would be, exit 125 (or
  126/127 for a command that could not start).
  The orphan sweep rides along as on every run.
- `ps`: the user's runs (server-side selector on `created-by`, as the sweep), in the
  namespace or with -A in every one, filtered and formatted by run/listing.py.
- `logs`: the run's `main` container as raw bytes. `-f` follows it with the run's own
  follower (run/logs.py: resume and de-duplication on a dropped stream) until the
  container has ended, as a run's watch sees it. Without -f, or with -t (the follower
  strips the timestamps it resumes by), it is `kubectl logs` writing straight to stdout,
  without resumption. Exit 0, as docker's, whatever the container's code (`wait` gives
  that); 125 when the output could not all be delivered.
- `wait`: each run's main container's end, by the run's watch (run/watch.py) and exit-code
  reading (cluster/podstate.py); its code on stdout, one a line, the OOM line on stderr;
  a run that never finished (deleted, evicted) gets its reason on stderr and exit 125.
- `rm`: background deletion of finished runs, running ones only with -f; a 404 (gone
  meanwhile, or by a TTL) is not an error. Every name is checked before anything is
  deleted.
"""

from __future__ import annotations

import json
import sys
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, BinaryIO

from kubectl_squarepeg.cluster import kubectl, podstate, refusals, verbs
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.errors import READER_GONE, ClusterError, StartupError, UsageError
from kubectl_squarepeg.plan.labels import CREATED_BY_LABEL, MANAGED_BY_SELECTOR
from kubectl_squarepeg.run import cleanup, create, interrupt, listing, output, watch
from kubectl_squarepeg.run.state import RunState, new_state
from kubectl_squarepeg.terminal.console import Console

if TYPE_CHECKING:
    from kubectl_squarepeg.cluster.connect import Connection
    from kubectl_squarepeg.plan.detached import Since
    from kubectl_squarepeg.plan.manifest import Plan
    from kubectl_squarepeg.plan.psfilter import Filters

LIST_SECONDS = 60.0
LOG_DRAIN_SECONDS = output.LOG_DRAIN_SECONDS
LOG_DRAIN_LIMIT_SECONDS = output.LOG_DRAIN_LIMIT_SECONDS


def _target_of(connection: Any) -> kubectl.Target:
    target: kubectl.Target = connection.target
    return target


def _commands(connection: Any) -> Commands:
    return Commands(_target_of(connection), bool(getattr(connection, "in_cluster", False)))


def _listed(
    target: kubectl.Target,
    selector: str,
    commands: Commands,
    timeout: float = LIST_SECONDS,
    *,
    all_namespaces: bool = False,
) -> list[dict[str, Any]]:
    result = verbs.list_runs(target, selector, timeout=timeout, all_namespaces=all_namespaces)
    if not result.ok:
        where = "any namespace" if all_namespaces else f"namespace {commands.namespace}"
        raise ClusterError(
            f"cannot list pods and jobs in {where}: {result.error_text}",
            commands.reachability_hint()
            if refusals.unreachable(result)
            else f"`{commands.kubectl('auth', 'can-i', 'list', 'pods')}` checks your permission",
        )
    try:
        document = json.loads(result.stdout or b"{}")
    except ValueError:
        document = {}
    items = document.get("items") if isinstance(document, dict) else None
    return [item for item in items or () if isinstance(item, dict)]


def user_selector(created_by: str) -> str:
    return f"{MANAGED_BY_SELECTOR},{CREATED_BY_LABEL}={created_by}"


# --- finding a run by name ---------------------------------------------------------------


def find_runs(
    connection: Any, created_by: str, names: Sequence[str]
) -> list[listing.Found]:
    """The user's runs called `names` (a Job's pod's name finds its Job), in that order;
    a UsageError for the first that is no squarepeg run, or is another user's."""
    commands = _commands(connection)
    runs = listing.runs_in(_listed(_target_of(connection), MANAGED_BY_SELECTOR, commands))
    found = []
    for name in names:
        match = next(
            (
                run
                for run in runs
                if run.name == name or (run.pod is not None and podstate.name(run.pod) == name)
            ),
            None,
        )
        if match is None:
            raise UsageError(
                f"no squarepeg run named {name} in namespace {commands.namespace}",
                "`kubectl squarepeg ps -a` lists your runs (-n picks another namespace)",
            )
        if match.created_by != created_by:
            owner = match.created_by or "nobody named"
            raise UsageError(
                f"{match.kind.lower()}/{match.name} in namespace {commands.namespace} is a run "
                f"of {owner}, not yours ({created_by})",
                f"squarepeg acts on your own runs only; ask {owner}",
            )
        found.append(match)
    return found


def run_names(connection: Any, created_by: str, *, timeout: float) -> list[str]:
    """The names of the user's runs, newest first: completion's candidates."""
    items = _listed(
        _target_of(connection), user_selector(created_by), _commands(connection), timeout
    )
    now = datetime.now(timezone.utc)
    return [row.name for row in listing.rows(items, now, all_runs=True)]


# --- ps ------------------------------------------------------------------------------------


def ps(
    connection: Any,
    created_by: str,
    *,
    all_runs: bool,
    quiet: bool,
    as_json: bool,
    all_namespaces: bool = False,
    filters: Filters | None = None,
    out: Callable[[str], Any] = sys.stdout.write,
) -> int:
    items = _listed(
        _target_of(connection),
        user_selector(created_by),
        _commands(connection),
        all_namespaces=all_namespaces,
    )
    now = datetime.now(timezone.utc)
    rows = listing.rows(items, now, all_runs=all_runs, filters=filters)
    if quiet:
        out(listing.names(rows))
    elif as_json:
        out(listing.json_lines(rows, now))
    else:
        out(listing.table(rows, now, all_namespaces=all_namespaces))
    return 0


# --- logs ----------------------------------------------------------------------------------


def _wait_child(child: kubectl.Child) -> int:
    """Wait for a child in short slices, so Ctrl-C stays responsive."""
    while True:
        code = child.wait(0.2)
        if code is not None:
            return code


def _first_event(pod_watch: watch.PodWatch) -> watch.Event:
    while True:
        event = pod_watch.next(watch.SLICE_SECONDS)
        if event is not None:
            return event


def _until_started(pod_watch: watch.PodWatch, first: watch.Event) -> watch.Event:
    """Wait, without a bound (Ctrl-C ends it), until the pod's main container has started
    or the pod is gone."""
    event = first
    while event.type != "DELETED" and not podstate.has_started(event.pod):
        following = pod_watch.next(watch.SLICE_SECONDS)
        if following is not None:
            event = following
    return event


def _pod_watch(target: kubectl.Target, run: listing.Found, commands: Commands) -> watch.PodWatch:
    if run.pod is not None:
        pod_watch = watch.PodWatch(target, pod=podstate.name(run.pod), commands=commands)
    else:  # a Job whose pod is not there yet
        pod_watch = watch.PodWatch(target, job=run.name, commands=commands)
    pod_watch.start()
    return pod_watch


def logs(
    connection: Any,
    created_by: str,
    name: str,
    *,
    follow: bool,
    since: Since | None,
    timestamps: bool,
    tail: int | None,
    console: Console,
    out: BinaryIO | None = None,
) -> int:
    """`logs [-f] [--since D] [-t] [--tail N] NAME`; the exit code (see the module docstring)."""
    target, commands = _target_of(connection), _commands(connection)
    run = find_runs(connection, created_by, [name])[0]
    if not follow or timestamps:
        return _logs_by_kubectl(target, run, commands, follow, since, timestamps, tail)
    from kubectl_squarepeg.run import logs as follower_module

    pod_watch = _pod_watch(target, run, commands)
    try:
        started = _until_started(pod_watch, _first_event(pod_watch))
        pod = pod_watch.pod_name or run.name
        if started.type == "DELETED" and not podstate.has_started(started.pod):
            raise ClusterError(
                f"pod {pod} was deleted before its container started",
                "`kubectl squarepeg ps -a` lists your runs",
            )
        query: dict[str, str] = {}
        if tail is not None:
            query["tailLines"] = str(tail)
        if since is not None:
            query.update(since.query())
        follower = follower_module.LogFollower(
            target,
            pod,
            podstate.MAIN,
            out or sys.stdout.buffer,
            console,
            start=_starter(target, query) if query else None,
            logs_command=commands.logs("Pod", pod),
        )
        follower.start()
        watch.wait_for_finish(pod_watch, started, stop=lambda: follower.reader_gone)
        if follower.reader_gone:
            return READER_GONE
        complete = follower.finish(LOG_DRAIN_SECONDS, LOG_DRAIN_LIMIT_SECONDS)
        return 0 if complete else podstate.RUNNER_FAILED
    finally:
        pod_watch.close()
        kubectl.terminate_all()


def _starter(target: kubectl.Target, query: Mapping[str, str]) -> Callable[..., Any]:
    """A log follower's stream starter that adds `query` (--since, --tail) to a request
    that does not resume (has no sinceTime yet): only what the user asked for is fetched
    first, and a resumed stream starts where the output stopped."""

    def start(args: Sequence[str], on_stdout: Callable[[bytes], None]) -> kubectl.Child:
        words = list(args)
        if "sinceTime=" not in words[-1]:
            words[-1] += "&" + urllib.parse.urlencode(query)
        return kubectl.start(
            words, target, on_stdout=on_stdout, out_bufsize=128 * 1024, namespaced=False
        )

    return start


def _logs_by_kubectl(
    target: kubectl.Target,
    run: listing.Found,
    commands: Commands,
    follow: bool,
    since: Since | None,
    timestamps: bool,
    tail: int | None,
) -> int:
    """`kubectl logs`, writing to our stdout itself: raw bytes, nothing held here."""
    if run.pod is None:
        raise UsageError(
            f"job/{run.name} has no pod (yet, or any more): there is no log to show",
            f"`kubectl squarepeg ps -a` shows its state; `{commands.events(run.name)}`",
        )
    args = ["logs", podstate.name(run.pod), "-c", podstate.MAIN]
    if follow:
        args.append("--follow")
    if timestamps:
        args.append("--timestamps")
    if since is not None:
        args += since.kubectl_flag()
    if tail is not None:
        args.append(f"--tail={tail}")
    sys.stdout.flush()
    child = kubectl.start(args, target, stdout_fd=sys.stdout.fileno())
    try:
        code = _wait_child(child)
    finally:
        child.terminate()
    if code != 0:
        text = kubectl.Result(child.argv, code, b"", child.stderr).error_text
        raise ClusterError(
            f"cannot read the log of pod {podstate.name(run.pod)}: {text}",
            f"`{commands.events(podstate.name(run.pod))}` lists the pod's events",
        )
    return 0


# --- wait ----------------------------------------------------------------------------------


def _outcome(target: kubectl.Target, run: listing.Found, commands: Commands) -> podstate.Outcome:
    """The outcome of one run's main container, waiting for its end."""
    if run.pod is None:
        condition = podstate.job_finished_condition(run.obj)
        if condition is not None:  # its pod is gone; a Complete Job's one pod exited 0
            if condition[0] == "Complete":
                return podstate.Outcome(0)
            return podstate.Outcome(
                podstate.RUNNER_FAILED,
                f"job {run.name} failed and its pod is gone: its exit code is lost",
                from_container=False,
            )
    elif podstate.has_finished(run.pod):
        return podstate.outcome(run.pod)
    pod_watch = _pod_watch(target, run, commands)
    try:
        first = _first_event(pod_watch)
        result = watch.wait_for_finish(pod_watch, first)
        assert result is not None  # no stop condition
        return result
    finally:
        pod_watch.close()


def wait(
    connection: Any,
    created_by: str,
    names: Sequence[str],
    *,
    console: Console,
    out: Callable[[str], Any] = sys.stdout.write,
) -> int:
    """`wait NAME...`: each run's exit code, one a line; 125 when one never finished."""
    target, commands = _target_of(connection), _commands(connection)
    runs = find_runs(connection, created_by, names)
    failed = False
    try:
        for run in runs:
            result = _outcome(target, run, commands)
            if result.from_container or result.start_failure:
                out(f"{result.exit_code}\n")
                sys.stdout.flush()
                if result.message:
                    console.warn(result.message)
                continue
            failed = True
            console.error(
                ClusterError(
                    result.message or f"{run.name} ended without an exit code",
                    f"`{commands.events(podstate.name(run.pod) if run.pod else run.name)}` "
                    "lists its events",
                ).one_line()
            )
    finally:
        kubectl.terminate_all()
    return podstate.RUNNER_FAILED if failed else 0


# --- rm ------------------------------------------------------------------------------------


def rm(
    connection: Any,
    created_by: str,
    names: Sequence[str],
    *,
    force: bool,
    console: Console,
    out: Callable[[str], Any] = sys.stdout.write,
) -> int:
    """`rm [-f] NAME...`: every name checked first, then each deleted; its name on stdout."""
    target, commands = _target_of(connection), _commands(connection)
    runs = find_runs(connection, created_by, names)
    now = datetime.now(timezone.utc)
    if not force:
        for run in runs:
            shown = listing.row(run, now)
            if shown.state in ("running", "pending"):
                raise UsageError(
                    f"{run.kind.lower()}/{run.name} is {shown.state} ({shown.status}); "
                    "rm removes finished runs",
                    f"stop and remove it with `kubectl squarepeg rm -f {run.name}`, or wait "
                    f"for its end with `kubectl squarepeg wait {run.name}`",
                )
    problems = []
    for run in runs:
        result = verbs.delete(target, run.kind, run.name)  # --ignore-not-found: 404 is fine
        if result.ok:
            out(f"{run.name}\n")
        else:
            problems.append(f"{run.kind.lower()}/{run.name}: {result.error_text}")
    if problems:
        raise ClusterError(
            "could not delete " + "; ".join(problems),
            f"`{commands.kubectl('auth', 'can-i', 'delete', 'pods')}` checks your permission",
        )
    return 0


# --- run -d --------------------------------------------------------------------------------


def start_detached(state: RunState) -> str:
    """The create phase, as a run has it; the pod's name. A start that fails raises, and
    the caller's cleanup deletes what was made."""
    started, pod = create.start(state)
    if started.type == "DELETED" and not podstate.has_started(started.pod):
        raise ClusterError(
            f"pod {pod} was deleted before its container started",
            f"`{state.commands.events(pod)}` lists the pod's events",
        )
    if podstate.has_finished(started.pod):
        ended = podstate.outcome(started.pod)
        if ended.start_failure:
            raise StartupError(
                ended.message or f"the command of pod {pod} could not start",
                "check the command and that the image has it (the words after IMAGE, "
                f"--entrypoint); `{state.commands.events(pod)}` lists the pod's events",
                exit_code=ended.exit_code,
            )
    return pod


def run_detached(plan: Plan, connection: Connection, console: Console) -> int:
    """`run -d`: the run started and left running; its name on stdout (see the module
    docstring). The create and cleanup phases of a run, guarded by the two-stage interrupt
    as a run is: a Ctrl-C before the start deletes what was created."""
    state = new_state(plan, connection, console)

    def body(handler: interrupt.TwoStageInterrupt) -> int:
        state.shields = handler
        start_detached(state)
        return 0

    def finish(handler: interrupt.TwoStageInterrupt, started: bool) -> None:
        if started:
            cleanup.release(state)
        else:
            cleanup.cleanup(state)

    def say_name() -> None:
        sys.stdout.write(f"{plan.name}\n")
        sys.stdout.flush()
        console.status(
            f"detached: {plan.kind.lower()}/{plan.name} runs on; "
            f"`kubectl squarepeg logs -f {plan.name}`, `kubectl squarepeg wait "
            f"{plan.name}`, then `kubectl squarepeg rm {plan.name}`"
        )
        options = plan.options
        if options.publish:  # no process is left to forward them (decision 0231)
            shown = ", ".join(port.shown() for port in options.publish)
            console.notice(
                f"ports recorded, not forwarded ({shown}): "
                f"`kubectl squarepeg port {plan.name}` forwards them until Ctrl-C"
            )
        if options.interactive:
            console.status(f"`kubectl squarepeg attach {plan.name}` reaches its stdin")

    return interrupt.guarded(
        state.resource,
        console,
        progress=state.progress,
        body=body,
        finish=finish,
        late_cleanup=lambda: cleanup.cleanup(state),
        on_success=say_name,
    )
