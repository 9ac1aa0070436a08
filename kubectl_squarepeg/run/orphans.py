"""Which of the user's Pods and Jobs are orphans ("The orphan sweep" in the lifecycle spec).

Pure: from the listed Pods and Jobs and "now", the resources left behind by earlier runs
(`select_orphans`). Three categories: *finished* (a Pod Succeeded/Failed, a Job
Complete/Failed, older than the minimum age since it finished), *stuck* (a Pod Pending with
a container waiting on a fail-fast reason, or a Job with no condition yet whose child pod is
so stuck, older than the minimum age since that pod was created), and *silent* (a Pod or Job not
finished whose run has not renewed its `squarepeg.io/alive-at` annotation for
orphan_sweep_silence: the run was killed, decision 0350). Anything else (Running or Pending
without that annotation, Unknown, terminating) is never an orphan at any age; a pod with
an owner (a Job's) is never deleted directly; the run's own resource is never a candidate.
A detached run (`run -d`, labelled `squarepeg.io/detached`) is never a candidate either,
running or finished, at any age: docker keeps an exited container until `docker rm`, and
`kubectl squarepeg rm` is that (plan/detached.py; docs/decisions/0160).
A finished resource is never taken before FINISHED_FLOOR_SECONDS since it finished,
whatever `orphan_sweep_min_age` says (`required_age`): until then a run of the user's may
still be reading its exit code and output. Stuck resources have no floor (see there).
Deleting them is sweep.py's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final, Literal

from kubectl_squarepeg.cluster import listed, podstate
from kubectl_squarepeg.cluster.listed import kind_of, meta
from kubectl_squarepeg.plan.labels import (
    ALIVE_AT_ANNOTATION,
    CREATED_BY_LABEL,
    DETACHED_LABEL,
    KEEP_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    RUN_ID_LABEL,
)

# The labels manifest.py writes (importing it would pull in the whole manifest chain).

FINISHED: Final = "finished"
STUCK: Final = "stuck"
SILENT: Final = "silent"
Category = Literal["finished", "stuck", "silent"]
# A running resource whose run has not renewed its ALIVE_AT_ANNOTATION for this long is an
# orphan (orphan_sweep_silence): the run renews it every HEARTBEAT_SECONDS
# (run/heartbeat.py), so four renewals in a row were missed, which leaves a minute and a half
# for a slow API server and for the clocks of two machines that disagree (decision 0350).
DEFAULT_SILENCE_SECONDS: Final = 120.0

# The sweep never takes a finished Pod or Job younger than this since it finished, whatever
# orphan_sweep_min_age says: it may be the resource of a run still in flight, which needs it
# after its container ended. That run may learn of the end only when its watch is back from
# a cut (watch.RETRY_WINDOW_SECONDS, 60 s, plus one pause of at most 3 s): a sweep deleting
# the pod before that turns the exit code into 125 ("deleted before its container
# finished"). Then its log stream gets at most runner.LOG_DRAIN_LIMIT_SECONDS (80 s) to
# deliver the rest (logs.LogFollower.finish), and a reconnect finds nothing once the pod is
# gone; a run that could not read everything then labels the pod to keep it (one kubectl
# call). That is 143 s and a call; the rest, to 180 s, is for the clock of the machine that
# sweeps running ahead of the node's that wrote finishedAt, and for a loaded machine. Below
# the default orphan_sweep_min_age (300 s), so only a lower configured age meets it.
# tests/unit/test_sweep.py checks it still covers those constants.
FINISHED_FLOOR_SECONDS: Final = 180.0
# Stuck resources have no floor. A run whose pod is stuck decides on the watch event that
# shows the fail-fast reason, which arrives before the event of a deletion, and quotes the
# pod's events, which outlive the pod; nothing of its container's was ever there to lose,
# and its exit code is 125 either way. What a sweep at a low age can change is one message:
# a run whose watch is cut in the second its pod gets stuck, and whose pod is swept before
# the watch is back, says its pod "was deleted" instead of naming the ErrImagePull. And a
# floor could not measure the right thing: how long a pod has been stuck is nowhere in its
# status (the age is since it was created, which includes its pull).

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
    age_seconds: float  # since it finished, was created (stuck), or its run was last alive
    run_id: str | None = None  # its squarepeg.io/run-id label, when it can select it alone

    @property
    def ref(self) -> str:
        return f"{self.kind.lower()}/{self.name}"

    def describe(self) -> str:
        """`pod/x (finished: Succeeded 7m ago)`, `job/y (stuck: ErrImagePull, created 6m ago)`."""
        age = format_age(self.age_seconds)
        if self.category == FINISHED:
            return f"{self.ref} ({FINISHED}: {self.reason} {age} ago)"
        if self.category == SILENT:
            return f"{self.ref} ({SILENT}: {self.reason}, its run last alive {age} ago)"
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


def last_alive(item: Mapping[str, Any]) -> datetime | None:
    """When the run of a resource last said it was alive (run/heartbeat.py); None for a
    resource that never said so (a run that could not annotate it, an older squarepeg's)."""
    annotations = meta(item).get("annotations") or {}
    return podstate.parse_time(annotations.get(ALIVE_AT_ANNOTATION))


def _silent_for(item: Mapping[str, Any], now: datetime) -> float | None:
    return _age(last_alive(item), now)


def _pod_candidate(pod: Mapping[str, Any], now: datetime) -> Orphan | None:
    """A finished (with a known finish time), stuck or silent bare Pod, whatever its age."""
    name = str(meta(pod).get("name", ""))
    phase = podstate.phase(pod)
    if phase in ("Succeeded", "Failed"):
        age = _age(podstate.finished_at(pod), now)
        return None if age is None else Orphan("Pod", name, FINISHED, phase, age, _run_id(pod))
    stuck = _stuck_pod(pod, now)
    if stuck is not None:
        return Orphan("Pod", name, STUCK, stuck[0], stuck[1], _run_id(pod))
    silent = _silent_for(pod, now)
    if silent is None:
        return None
    return Orphan("Pod", name, SILENT, phase or "Pending", silent, _run_id(pod))


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
    if stuck:
        reason, age = max(stuck, key=lambda found: found[1])
        return Orphan("Job", name, STUCK, reason, age, _run_id(job))
    silent = _silent_for(job, now)
    return None if silent is None else Orphan("Job", name, SILENT, "Active", silent, _run_id(job))


def required_age(
    category: Category, min_age: float, silence: float = DEFAULT_SILENCE_SECONDS
) -> float:
    """How old an orphan of `category` must be to be swept: `min_age` (orphan_sweep_min_age),
    and for a finished one at least FINISHED_FLOOR_SECONDS; a silent one, `silence`
    (orphan_sweep_silence), whatever min_age says."""
    if category == SILENT:
        return silence
    return max(min_age, FINISHED_FLOOR_SECONDS) if category == FINISHED else min_age


def find_candidates(
    items: Iterable[Mapping[str, Any]],
    *,
    created_by: str,
    now: datetime,
    exclude_uid: str | None = None,
    exclude_name: str | None = None,
) -> list[Orphan]:
    """Every finished, stuck or silent resource among listed Pods and Jobs, whatever its
    age: Jobs
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
    silence: float = DEFAULT_SILENCE_SECONDS,
    exclude_uid: str | None = None,
    exclude_name: str | None = None,
) -> list[Orphan]:
    """The orphans among listed Pods and Jobs: the candidates (`find_candidates`) that are
    old enough (`required_age`)."""
    candidates = find_candidates(
        items, created_by=created_by, now=now, exclude_uid=exclude_uid, exclude_name=exclude_name
    )
    return judge_ages(candidates, min_age, silence).orphans


@dataclass(frozen=True)
class Judged:
    """The candidates, sorted by their age: what is swept, and why the rest is not."""

    orphans: list[Orphan]  # old enough
    young: int  # finished or stuck, younger than orphan_sweep_min_age
    below_floor: int  # old enough for it, but finished less than FINISHED_FLOOR_SECONDS ago


def judge_ages(
    candidates: Sequence[Orphan], min_age: float, silence: float = DEFAULT_SILENCE_SECONDS
) -> Judged:
    """Silent resources not yet silent for long enough are runs in flight, and not counted:
    only finished and stuck ones are said as young or below the floor."""
    orphans = [
        c for c in candidates if c.age_seconds >= required_age(c.category, min_age, silence)
    ]
    waiting = [c for c in candidates if c.category != SILENT and c not in orphans]
    young = sum(c.age_seconds < min_age for c in waiting)
    return Judged(orphans, young, len(waiting) - young)


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
