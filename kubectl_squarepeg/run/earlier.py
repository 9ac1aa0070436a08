"""A name held by an earlier run of the user's: which holder a run waits for, and the wait.

Owns what a create refused because its name is taken does before it is said as a refusal
(run/create.py sends the create again once the name is free):
- a holder of the user's own (squarepeg's `managed-by` label and the same `created-by`) that
  is being deleted is waited for (decision 0340): until its grace period ends plus the
  kubelet's confirmation (`CONFIRM_SLACK_SECONDS`);
- a live holder of the user's own, neither kept nor detached, whose run renews its
  `squarepeg.io/alive-at` annotation (run/heartbeat.py), is waited for until that run has
  been silent for orphan_sweep_silence (its squarepeg was killed: then it is deleted, and
  waited for as above) or has ended (decision 0350); a run that is alive holds the name on,
  and the wait ends with the refusal once it must have gone silent if it were dead;
- anyone else's holder, a kept or detached one, or one that never had a heartbeat, is not
  waited for.
Never longer than --timeout, on the status line, asking every GONE_POLL_SECONDS; a Job is
free once its pods are gone too (a new Job's watch selects its pods by the same
`job-name` label). A Ctrl-C during the wait ends the run at once: nothing was created.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.cluster.refusals import (
    BEING_DELETED,
    CONFIRM_SLACK_SECONDS,
    rejection,
    terminating_refusal,
)
from kubectl_squarepeg.plan.labels import (
    CREATED_BY_LABEL,
    DETACHED_LABEL,
    KEEP_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
)
from kubectl_squarepeg.run.heartbeat import HEARTBEAT_SECONDS
from kubectl_squarepeg.run.orphans import last_alive
from kubectl_squarepeg.run.state import RunState

# How often the wait asks whether the name is free.
GONE_POLL_SECONDS = 0.5


def holder_to_wait_for(state: RunState, refused: kubectl.Result) -> dict[str, Any] | None:
    """The earlier holder of the run's name that a create refused with `refused` should
    wait for, or None (the refusal stands)."""
    text = refused.error_text.lower()
    if "already exists" not in text and "alreadyexists" not in text:
        return None
    holder = _current(state)
    if holder is None or not _yours(state, holder):
        return None
    if BEING_DELETED in refused.error_text or podstate.is_deleting(holder):
        return holder
    return holder if _last_alive(holder) is not None else None


def wait_until_free(state: RunState, refused: kubectl.Result, holder: Mapping[str, Any]) -> None:
    """Wait until the name is free, ending a silent holder on the way; raise the refusal
    when the bound passes first."""
    plan = state.plan
    ref = f"{plan.kind.lower()}/{plan.name}"
    began = time.monotonic()
    silence = plan.options.orphan_sweep_silence
    current: Mapping[str, Any] | None = holder
    deleted = False  # one delete: a poll may still see the holder before its deletion shows
    while current is not None:
        waited = time.monotonic() - began
        state.console.progress(f"waiting for your earlier {ref} to go ({waited:.0f}s)")
        if not deleted and not podstate.is_deleting(current):
            last = _last_alive(current)
            if last is not None and time.time() - last >= silence:
                state.console.end_progress()
                state.console.status(
                    f"{ref} of an earlier run of yours has been silent for "
                    f"{time.time() - last:.0f}s (its squarepeg was stopped): deleting it"
                )
                verbs.delete(state.target, plan.kind, plan.name)
                deleted = True
        if time.time() > _due(current, silence) or waited >= plan.options.timeout:
            state.console.end_progress()
            raise _refusal(state, refused, current)
        time.sleep(GONE_POLL_SECONDS)
        current = _current(state)
    state.console.end_progress()


def _due(holder: Mapping[str, Any], silence: float) -> float:
    """When the holder must be gone by (epoch seconds): a deleted one at the end of its
    grace period and the kubelet's confirmation; a live one once its run, if dead, has been
    silent long enough to be deleted, and then its grace period."""
    if podstate.is_deleting(holder):
        deadline = podstate.deletion_deadline(holder)
        return (deadline.timestamp() if deadline else time.time()) + CONFIRM_SLACK_SECONDS
    last = _last_alive(holder) or time.time()
    grace = podstate.grace_period(holder) or 30
    return last + silence + HEARTBEAT_SECONDS + grace + CONFIRM_SLACK_SECONDS


def _refusal(state: RunState, refused: kubectl.Result, holder: Mapping[str, Any]) -> Exception:
    plan = state.plan
    if podstate.is_deleting(holder):
        found = verbs.get_object(state.target, plan.kind, plan.name)
        return terminating_refusal(plan.kind, plan.name, state.commands, found)
    return rejection(refused, plan.kind, plan.name, state.commands)


def _current(state: RunState) -> dict[str, Any] | None:
    """The name's holder now; None once it, and for a Job its pods, are gone."""
    plan = state.plan
    found = verbs.get_object(state.target, plan.kind, plan.name)
    holder = _parsed(found)
    if holder is not None:
        return holder
    if b"NotFound" not in found.stderr:
        return {}  # not known: asked again at the next poll
    if plan.kind == "Job":
        pods = _parsed(verbs.list_runs(state.target, f"job-name={plan.name}"))
        if pods is None or pods.get("items"):
            return {}
    return None


def _parsed(found: kubectl.Result) -> dict[str, Any] | None:
    if not found.ok:
        return None
    try:
        obj = json.loads(found.stdout)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _yours(state: RunState, holder: Mapping[str, Any]) -> bool:
    labels = (holder.get("metadata") or {}).get("labels") or {}
    return (
        labels.get(MANAGED_BY_LABEL) == MANAGED_BY
        and labels.get(CREATED_BY_LABEL) == state.plan.created_by
        and KEEP_LABEL not in labels
        and DETACHED_LABEL not in labels
    )


def _last_alive(holder: Mapping[str, Any]) -> float | None:
    when = last_alive(holder)
    return None if when is None else when.timestamp()
