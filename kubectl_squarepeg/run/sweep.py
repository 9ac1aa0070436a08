"""The orphan sweep ("The orphan sweep" in the lifecycle spec): what to delete, and deleting it.

Owns two things, kept apart:

- `select_orphans`, pure: from the listed Pods and Jobs and "now", the resources left behind
  by earlier runs. Two categories: *finished* (a Pod Succeeded/Failed, a Job Complete/Failed,
  older than the minimum age since it finished) and *stuck* (a Pod Pending with a container
  waiting on a fail-fast reason, or a Job with no condition yet whose child pod is so stuck,
  older than the minimum age since that pod was created). Anything else (Running, Pending
  without a fail-fast reason, Unknown, terminating) is never an orphan at any age; a pod with
  an owner (a Job's) is never deleted directly; the run's own resource is never a candidate.
  A detached run (`run -d`, labelled `squarepeg.io/detached`) is never a candidate either,
  running or finished, at any age: docker keeps an exited container until `docker rm`, and
  `kubectl squarepeg rm` is that (plan/detached.py; docs/decisions/0160).
  A finished resource is never taken before FINISHED_FLOOR_SECONDS since it finished,
  whatever `orphan_sweep_min_age` says (`required_age`): until then a run of the user's may
  still be reading its exit code and output. Stuck resources have no floor (see there).
- the best-effort execution: one `kubectl get pods,jobs -l SELECTOR -o json` (the selector
  scopes it server-side to the user's own, unkept resources), then one collection delete per
  kind (`kubectl delete --raw`, selecting the orphans by their unique run-id label, so one
  request removes any number of them: kubectl's own delete sends one request per name and
  its rate limit makes 1,000 names take minutes), and a `kubectl delete` by name for orphans
  without a usable run id, or when collection deletes are not allowed. Its cost does not
  grow with the namespace or the number of orphans. During a run it works on a background
  thread (`sweep_in_background`), and any failure is one line on stderr that never changes
  the run's exit code; the `sweep` command (`sweep_now`) reports failures as errors instead.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Final, Literal, Protocol

from kubectl_squarepeg.cluster import complaints, kubectl, listed, podstate
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.listed import kind_of, meta
from kubectl_squarepeg.errors import ClusterError, SquarepegError
from kubectl_squarepeg.plan.labels import (
    CREATED_BY_LABEL,
    DETACHED_LABEL,
    KEEP_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    RUN_ID_LABEL,
)
from kubectl_squarepeg.terminal.console import Console

# The labels manifest.py writes (importing it would pull in the whole manifest chain).

FINISHED: Final = "finished"
STUCK: Final = "stuck"
Category = Literal["finished", "stuck"]

# The sweep never takes a finished Pod or Job younger than this since it finished, whatever
# orphan_sweep_min_age says: it may be the resource of a run still in flight, which needs it
# after its container ended. That run may learn of the end only when its watch is back from
# a cut (watch.RETRY_WINDOW_SECONDS, 60 s, plus one pause of at most 3 s): a sweep deleting
# the pod before that turns the exit code into 125 ("deleted before its container
# finished"). Then its log stream gets runner.LOG_DRAIN_SECONDS (30 s) to deliver the rest,
# twice when its reconnects had been used up (logs.LogFollower.finish), and a reconnect
# finds nothing once the pod is gone; a run that could not read everything then labels the
# pod to keep it (one kubectl call). That is 123 s and a call; the rest, to 180 s, is for
# the clock of the machine that sweeps running ahead of the node's that wrote finishedAt,
# and for a loaded machine. Below the default orphan_sweep_min_age (300 s), so only a lower
# configured age meets it. tests/unit/test_sweep.py checks it still covers those constants.
FINISHED_FLOOR_SECONDS: Final = 180.0
# Stuck resources have no floor. A run whose pod is stuck decides on the watch event that
# shows the fail-fast reason, which arrives before the event of a deletion, and quotes the
# pod's events, which outlive the pod; nothing of its container's was ever there to lose,
# and its exit code is 125 either way. What a sweep at a low age can change is one message:
# a run whose watch is cut in the second its pod gets stuck, and whose pod is swept before
# the watch is back, says its pod "was deleted" instead of naming the ErrImagePull. And a
# floor could not measure the right thing: how long a pod has been stuck is nowhere in its
# status (the age is since it was created, which includes its pull).

# Well under Linux's per-call argument limit (ARG_MAX is usually 2 MiB, shared with the
# environment); names are at most 63 characters, so one call takes about 1,500 resources.
_ARGV_BUDGET_BYTES = 100_000
_LIST_TIMEOUT_SECONDS = 60.0
_DELETE_TIMEOUT_SECONDS = 120.0
# `kubectl delete` prints one `KIND[.GROUP] "NAME" deleted` line per resource it removed.
_DELETED_LINE = re.compile(r'^([a-z]+)(?:\.[\w.]+)? "([^"]+)" deleted')
_SUMMARY_NAMES = 3


def label_selector(created_by: str) -> str:
    """The server-side scope: squarepeg's resources, of this user, neither kept nor
    detached."""
    return (
        f"{MANAGED_BY_LABEL}={MANAGED_BY},{CREATED_BY_LABEL}={created_by},!{KEEP_LABEL},"
        f"!{DETACHED_LABEL}"
    )


@dataclass(frozen=True)
class Orphan:
    """A resource the sweep deletes: what it is, why, and how old it is in that respect."""

    kind: Literal["Pod", "Job"]
    name: str
    category: Category
    reason: str  # the phase, the Job condition, or the waiting reason that makes it one
    age_seconds: float  # since it finished (finished) or since it was created (stuck)
    run_id: str | None = None  # its squarepeg.io/run-id label, when it can select it alone

    @property
    def ref(self) -> str:
        return f"{self.kind.lower()}/{self.name}"

    def describe(self) -> str:
        """`pod/x (finished: Succeeded 7m ago)`, `job/y (stuck: ErrImagePull, created 6m ago)`."""
        age = format_age(self.age_seconds)
        if self.category == FINISHED:
            return f"{self.ref} ({FINISHED}: {self.reason} {age} ago)"
        return f"{self.ref} ({STUCK}: {self.reason}, created {age} ago)"


def format_age(seconds: float) -> str:
    """A short human age, in the spirit of kubectl's AGE column: 45s, 7m, 5h3m, 2d4h."""
    total = max(0, int(seconds))
    if total < 120:
        return f"{total}s"
    minutes = total // 60
    if minutes < 180:
        return f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours}h" if hours else f"{days}d"


# --- selection (pure) -------------------------------------------------------------------

def _in_scope(item: Mapping[str, Any], created_by: str) -> bool:
    """The selector, checked again: the sweep must never act on what it was not sent for."""
    item_meta = meta(item)
    labels = item_meta.get("labels") or {}
    return (
        labels.get(MANAGED_BY_LABEL) == MANAGED_BY
        and labels.get(CREATED_BY_LABEL) == created_by
        and KEEP_LABEL not in labels
        and DETACHED_LABEL not in labels
        and not item_meta.get("deletionTimestamp")  # already going away
    )


def _age(since: datetime | None, now: datetime) -> float | None:
    return None if since is None else (now - since).total_seconds()


def _stuck_pod(pod: Mapping[str, Any], now: datetime) -> tuple[str, float] | None:
    """(the fail-fast reason, seconds since created) for a Pending pod stuck on one."""
    if podstate.phase(pod) != "Pending":
        return None
    reason = podstate.fail_fast_reason(pod)
    age = _age(podstate.created_at(pod), now)
    if reason is None or age is None:
        return None
    return reason, age


def _pod_candidate(pod: Mapping[str, Any], now: datetime) -> Orphan | None:
    """A finished (with a known finish time) or stuck bare Pod, whatever its age."""
    name = str(meta(pod).get("name", ""))
    phase = podstate.phase(pod)
    if phase in ("Succeeded", "Failed"):
        age = _age(podstate.finished_at(pod), now)
        return None if age is None else Orphan("Pod", name, FINISHED, phase, age, _run_id(pod))
    stuck = _stuck_pod(pod, now)
    if stuck is None:
        return None
    return Orphan("Pod", name, STUCK, stuck[0], stuck[1], _run_id(pod))


_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


def _run_id(item: Mapping[str, Any]) -> str | None:
    value = (meta(item).get("labels") or {}).get(RUN_ID_LABEL)
    return value if isinstance(value, str) and _LABEL_VALUE.match(value) else None


def _job_candidate(
    job: Mapping[str, Any], children: Sequence[Mapping[str, Any]], now: datetime
) -> Orphan | None:
    """A finished (with a known finish time) or stuck Job, whatever its age."""
    name = str(meta(job).get("name", ""))
    condition = podstate.job_finished_condition(job)
    if condition is not None:
        reason, finished = condition
        age = _age(finished, now)
        return None if age is None else Orphan("Job", name, FINISHED, reason, age, _run_id(job))
    # backoffLimit 0 never records a failure while the only pod retries its pull: judge the
    # Job by that pod (by the oldest, should there be more).
    stuck = [found for child in children if (found := _stuck_pod(child, now)) is not None]
    if not stuck:
        return None
    reason, age = max(stuck, key=lambda found: found[1])
    return Orphan("Job", name, STUCK, reason, age, _run_id(job))


def required_age(category: Category, min_age: float) -> float:
    """How old an orphan of `category` must be to be swept: `min_age` (orphan_sweep_min_age),
    and for a finished one at least FINISHED_FLOOR_SECONDS."""
    return max(min_age, FINISHED_FLOOR_SECONDS) if category == FINISHED else min_age


def find_candidates(
    items: Iterable[Mapping[str, Any]],
    *,
    created_by: str,
    now: datetime,
    exclude_uid: str | None = None,
    exclude_name: str | None = None,
) -> list[Orphan]:
    """Every finished or stuck resource among listed Pods and Jobs, whatever its age: Jobs
    first, each kind in listing order. `select_orphans` keeps those old enough.

    `exclude_uid`/`exclude_name` name the run's own resource (its uid when known, else its
    name), which is never a candidate, whatever state it is in.
    """
    in_scope = [
        item
        for item in items
        if _in_scope(item, created_by)
        and not (exclude_uid is not None and meta(item).get("uid") == exclude_uid)
        and not (exclude_name is not None and meta(item).get("name") == exclude_name)
    ]
    runs = listed.grouped(in_scope)
    candidates: list[Orphan] = []
    for job in runs.jobs:
        found = _job_candidate(job, runs.pods_of(job), now)
        if found is not None:
            candidates.append(found)
    for pod in runs.bare_pods:
        found = _pod_candidate(pod, now)
        if found is not None:
            candidates.append(found)
    return _unshared_run_ids(candidates, in_scope)


def select_orphans(
    items: Iterable[Mapping[str, Any]],
    *,
    created_by: str,
    now: datetime,
    min_age: float,
    exclude_uid: str | None = None,
    exclude_name: str | None = None,
) -> list[Orphan]:
    """The orphans among listed Pods and Jobs: the candidates (`find_candidates`) that are
    old enough (`required_age`)."""
    candidates = find_candidates(
        items, created_by=created_by, now=now, exclude_uid=exclude_uid, exclude_name=exclude_name
    )
    return judge_ages(candidates, min_age).orphans


@dataclass(frozen=True)
class Judged:
    """The candidates, sorted by their age: what is swept, and why the rest is not."""

    orphans: list[Orphan]  # old enough
    young: int  # younger than orphan_sweep_min_age
    below_floor: int  # old enough for it, but finished less than FINISHED_FLOOR_SECONDS ago


def judge_ages(candidates: Sequence[Orphan], min_age: float) -> Judged:
    orphans = [c for c in candidates if c.age_seconds >= required_age(c.category, min_age)]
    young = sum(c.age_seconds < min_age for c in candidates)
    return Judged(orphans, young, len(candidates) - len(orphans) - young)


def _unshared_run_ids(
    orphans: list[Orphan], listed: Sequence[Mapping[str, Any]]
) -> list[Orphan]:
    """Drop the run id of an orphan that shares it with another listed resource of its kind.

    A run id is unique to one run, which creates one Pod or one Job, so a collection delete
    by run id removes exactly the orphan. A copied label would make it remove a neighbour
    too; such an orphan is deleted by name instead.
    """
    counts: dict[tuple[str, str], int] = {}
    for item in listed:
        run_id = _run_id(item)
        if run_id is not None:
            key = (kind_of(item), run_id)
            counts[key] = counts.get(key, 0) + 1
    return [
        o if o.run_id is None or counts.get((o.kind, o.run_id), 0) == 1
        else replace(o, run_id=None)
        for o in orphans
    ]


@dataclass(frozen=True)
class DeleteCall:
    """One `kubectl delete` of the sweep, and the orphans it removes."""

    args: list[str]
    orphans: tuple[Orphan, ...]
    by_run_id: bool  # a collection delete (`--raw`) selecting the orphans by their run id


_COLLECTION_PATHS = {
    "Pod": "/api/v1/namespaces/{}/pods",
    "Job": "/apis/batch/v1/namespaces/{}/jobs",
}
_BY_NAME = ["delete", "--cascade=background", "--wait=false", "--ignore-not-found"]


def _chunks(
    orphans: Sequence[Orphan], size_of: Callable[[Orphan], int]
) -> list[list[Orphan]]:
    """`orphans` cut into runs whose words fit in one argv (see _ARGV_BUDGET_BYTES)."""
    chunks: list[list[Orphan]] = []
    current: list[Orphan] = []
    size = 0
    for orphan in orphans:
        cost = size_of(orphan) + 1
        if current and size + cost > _ARGV_BUDGET_BYTES:
            chunks.append(current)
            current, size = [], 0
        current.append(orphan)
        size += cost
    if current:
        chunks.append(current)
    return chunks


def delete_by_name(orphans: Sequence[Orphan]) -> list[DeleteCall]:
    """`kubectl delete KIND/NAME...` calls: every orphan once, as few calls as argv allows.

    Pods and Jobs go in the same call: Background propagation is what a Job needs (so its
    pod goes too) and what a Pod gets anyway. kubectl sends one DELETE per name, and its
    client-side rate limit (5 a second after a burst of 10) makes this slow for many.
    """
    return [
        DeleteCall([*_BY_NAME, *(o.ref for o in chunk)], tuple(chunk), False)
        for chunk in _chunks(orphans, lambda o: len(o.ref))
    ]


def plan_deletes(orphans: Sequence[Orphan], *, namespace: str, created_by: str) -> list[DeleteCall]:
    """The sweep's deletes: a collection delete per kind for the orphans with a run id of
    their own, by name for the rest.

    A collection delete is one request however many orphans it takes, so it escapes
    kubectl's rate limit. It selects on the sweep's own scope plus `run-id in (...)`, so it
    can only ever remove resources of those (dead) runs, never a run started since the list.
    """
    calls: list[DeleteCall] = []
    for kind, path in _COLLECTION_PATHS.items():
        by_id = [o for o in orphans if o.kind == kind and o.run_id]
        # Each id costs its length plus an encoded comma (%2C) in the URL.
        for chunk in _chunks(by_id, lambda o: len(o.run_id or "") + 2):
            ids = ",".join(str(o.run_id) for o in chunk)
            query = urllib.parse.urlencode(
                {
                    "labelSelector": f"{label_selector(created_by)},{RUN_ID_LABEL} in ({ids})",
                    "propagationPolicy": "Background",
                }
            )
            raw = f"{path.format(urllib.parse.quote(namespace, safe=''))}?{query}"
            calls.append(DeleteCall(["delete", "--raw", raw], tuple(chunk), True))
    calls += delete_by_name([o for o in orphans if not o.run_id])
    return calls


def deleted_refs(stdout: bytes) -> set[str]:
    """The `kind/name` of every resource a `kubectl delete` reported as deleted: the lines
    of a delete by name, or the items of the list a collection delete answers with."""
    refs = set()
    text = stdout.decode("utf-8", "replace")
    if text.lstrip().startswith("{"):
        try:
            answer = json.loads(text)
        except ValueError:
            answer = {}
        kind = str(answer.get("kind") or "").removesuffix("List").lower()
        for item in answer.get("items") or ():
            if isinstance(item, dict) and kind:
                refs.add(f"{kind}/{meta(item).get('name')}")
        return refs
    for line in text.splitlines():
        match = _DELETED_LINE.match(line.strip())
        if match:
            refs.add(f"{match.group(1)}/{match.group(2)}")
    return refs


# --- execution --------------------------------------------------------------------------


class _HasTarget(Protocol):
    @property
    def target(self) -> kubectl.Target: ...


@dataclass(frozen=True)
class SweepResult:
    """What one sweep found and removed, and what went wrong (each a short sentence)."""

    orphans: list[Orphan]
    deleted: list[Orphan]
    problems: list[str]
    kubectl_calls: int
    # Finished or stuck resources left alone because they are younger than the minimum age.
    young: int = 0
    # Finished resources old enough for the minimum age, left alone because they finished
    # less than FINISHED_FLOOR_SECONDS ago.
    below_floor: int = 0


def _list(target: kubectl.Target, created_by: str) -> tuple[list[dict[str, Any]], str | None]:
    result = kubectl.run(
        ["get", "pods,jobs", "-l", label_selector(created_by), "-o", "json"],
        target,
        timeout=_LIST_TIMEOUT_SECONDS,
    )
    items: list[dict[str, Any]] = []
    try:
        document = json.loads(result.stdout) if result.stdout.strip() else {}
    except ValueError:
        document = {}
    if isinstance(document, dict):
        found = document.get("items") or ([document] if "metadata" in document else [])
        items = [item for item in found if isinstance(item, dict)]
    # kubectl prints what it could list even when one kind is denied: sweep that much.
    problem = None if result.ok else f"could not list pods,jobs: {result.error_text}"
    return items, problem


def run_sweep(
    target: kubectl.Target,
    created_by: str,
    *,
    min_age: float,
    exclude_uid: str | None = None,
    exclude_name: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
) -> SweepResult:
    """List, select, delete (unless `dry_run`). Raises only what kubectl.run raises."""
    items, problem = _list(target, created_by)
    problems = [problem] if problem else []
    candidates = find_candidates(
        items,
        created_by=created_by,
        now=now or datetime.now(timezone.utc),
        exclude_uid=exclude_uid,
        exclude_name=exclude_name,
    )
    judged = judge_ages(candidates, min_age)
    orphans, young, below_floor = judged.orphans, judged.young, judged.below_floor
    calls = 1
    if dry_run or not orphans:
        return SweepResult(orphans, [], problems, calls, young, below_floor)
    gone: set[str] = set()
    pending = plan_deletes(orphans, namespace=target.namespace or "default", created_by=created_by)
    while pending:
        call = pending.pop(0)
        result = kubectl.run(call.args, target, timeout=_DELETE_TIMEOUT_SECONDS)
        calls += 1
        gone |= deleted_refs(result.stdout)
        if result.ok:
            continue
        if call.by_run_id:
            # No deletecollection permission, or a proxy that refuses long URLs: the slow
            # way instead, for what that call did not remove.
            pending += delete_by_name([o for o in call.orphans if o.ref not in gone])
        else:
            problems.append(f"could not delete every orphan: {result.error_text}")
    deleted = [o for o in orphans if o.ref in gone]
    return SweepResult(orphans, deleted, problems, calls, young, below_floor)


def _summary(deleted: Sequence[Orphan]) -> str:
    shown = ", ".join(o.describe() for o in deleted[:_SUMMARY_NAMES])
    more = len(deleted) - _SUMMARY_NAMES
    noun = "resource" if len(deleted) == 1 else "resources"
    tail = f" and {more} more" if more > 0 else ""
    return f"orphan sweep: deleted {len(deleted)} {noun} left by earlier runs: {shown}{tail}"


class SweepHandle:
    """A sweep running on its own thread; `join` it before the process exits."""

    def __init__(self, thread: threading.Thread) -> None:
        self._thread = thread

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to `timeout` seconds; True when the sweep has finished."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


def sweep_in_background(
    connection: _HasTarget,
    created_by: str,
    *,
    min_age: float,
    console: Console,
    exclude_uid: str | None = None,
    exclude_name: str | None = None,
) -> SweepHandle:
    """Start the run's sweep. It reports on `console` (stderr) and never raises."""
    target = connection.target

    def work() -> None:
        try:
            result = run_sweep(
                target,
                created_by,
                min_age=min_age,
                exclude_uid=exclude_uid,
                exclude_name=exclude_name,
            )
        except SquarepegError as exc:
            console.warn(f"orphan sweep skipped: {exc.message}")
            return
        except Exception as exc:  # best effort: nothing may escape into the run
            console.warn(f"orphan sweep skipped: {type(exc).__name__}: {exc}")
            return
        if result.deleted:
            console.status(_summary(result.deleted))
        if result.problems:
            said = "; ".join(result.problems)
            check = Commands(target, getattr(connection, "in_cluster", False)).permission_check(
                said
            )
            console.warn(f"orphan sweep incomplete in namespace {target.namespace}: {said}{check}")

    thread = threading.Thread(target=work, name="orphan-sweep", daemon=True)
    thread.start()
    return SweepHandle(thread)


def sweep_now(
    connection: _HasTarget,
    created_by: str,
    *,
    min_age: float,
    console: Console,
    dry_run: bool = False,
) -> int:
    """`kubectl squarepeg sweep`: sweep now, one line per orphan; 0, or a ClusterError."""
    target = connection.target
    result = run_sweep(target, created_by, min_age=min_age, dry_run=dry_run)
    verb = "would delete" if dry_run else "deleted"
    listed = result.orphans if dry_run else result.deleted
    for orphan in listed:
        console.status(f"{verb} {orphan.describe()}")
    if result.problems:
        said = "; ".join(result.problems)
        commands = Commands(target, getattr(connection, "in_cluster", False))
        if complaints.unreachable(said):
            hint = commands.reachability_hint()
        else:
            can_i = commands.kubectl("auth", "can-i", "delete", "pods")
            hint = (
                "the sweep needs list and delete permission on pods and jobs in the "
                f"namespace (`{can_i}`)"
            )
        raise ClusterError(f"orphan sweep in namespace {target.namespace}: {said}", hint)
    noun = "resource" if len(listed) == 1 else "resources"
    if listed:
        done = "would be deleted" if dry_run else "deleted"
        what = f"{len(listed)} orphaned {noun} {done}"
    elif result.young or result.below_floor:
        what = "no orphaned resources old enough to sweep"
    else:
        what = f"no orphaned resources of {created_by}"
    console.status(f"{what} in namespace {target.namespace}")
    if result.young:
        console.status(_young_summary(result.young, min_age))
    if result.below_floor:
        console.status(_below_floor_summary(result.below_floor, min_age))
    return 0


def _young_summary(young: int, min_age: float) -> str:
    noun = "resource" if young == 1 else "resources"
    return (
        f"left {young} finished or stuck {noun} younger than orphan_sweep_min_age "
        f"({min_age:g}s): a run may still be using them; they are swept once older "
        "(a config file's orphan_sweep_min_age sets the age)"
    )


def _below_floor_summary(count: int, min_age: float) -> str:
    noun = "resource" if count == 1 else "resources"
    return (
        f"left {count} finished {noun} that finished less than {FINISHED_FLOOR_SECONDS:g}s "
        f"ago, the sweep's floor whatever orphan_sweep_min_age ({min_age:g}s) says: a run "
        "may still be reading its exit code and output; they are swept once older"
    )
