"""The sweep of run Secrets left without an owner (decision 0361).

A run with `--secret-env` creates its Secret, then its Pod or Job, then makes that the
Secret's owner; a squarepeg killed before the last step leaves a Secret the cluster's garbage
collector will never delete. This module owns finding and deleting those: a Secret of the
user's (squarepeg's `managed-by` and `created-by` labels), with no `ownerReferences`, older
than `orphan_sweep_min_age`, whose run id no Pod or Job carries any more (while one does,
that resource's own sweep comes first). Only the background sweep of a run that itself
uses a Secret does this (one more `kubectl get secrets`): runs without one, and `kubectl
squarepeg sweep`, list no Secrets, cost no more and need no right to. A user without the
right to list Secrets is not told about it. The pure selection is `unowned`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubectl_squarepeg.cluster import podstate, verbs
from kubectl_squarepeg.cluster.target import Target
from kubectl_squarepeg.plan.labels import (
    CREATED_BY_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    RUN_ID_LABEL,
)
from kubectl_squarepeg.run.orphans import format_age


@dataclass(frozen=True)
class UnownedSecret:
    name: str
    run_id: str
    age_seconds: float

    def describe(self) -> str:
        return (f"secret/{self.name} (unowned: its run was killed before its Pod or Job "
                f"owned it, created {format_age(self.age_seconds)} ago)")


def selector(created_by: str) -> str:
    return f"{MANAGED_BY_LABEL}={MANAGED_BY},{CREATED_BY_LABEL}={created_by}"


def unowned(
    items: Iterable[Mapping[str, Any]], *, created_by: str, now: datetime, min_age: float
) -> list[UnownedSecret]:
    """The listed Secrets that are candidates: squarepeg's, the user's, with a run id, no
    owner, not being deleted, at least `min_age` old."""
    found = []
    for item in items:
        meta = item.get("metadata") or {}
        labels = meta.get("labels") or {}
        if (labels.get(MANAGED_BY_LABEL) != MANAGED_BY
                or labels.get(CREATED_BY_LABEL) != created_by
                or meta.get("ownerReferences") or meta.get("deletionTimestamp")):
            continue
        run_id, created = labels.get(RUN_ID_LABEL), podstate.created_at(item)
        if not run_id or created is None:
            continue
        age = (now - created).total_seconds()
        if age >= min_age:
            found.append(UnownedSecret(str(meta.get("name")), str(run_id), age))
    return found


def _run_is_gone(target: Target, run_id: str) -> bool:
    listed = verbs.list_runs(target, f"{RUN_ID_LABEL}={run_id}")
    if not listed.ok:
        return False
    try:
        return not json.loads(listed.stdout).get("items")
    except (ValueError, AttributeError):
        return False


def sweep_secrets(
    target: Target, created_by: str, *, min_age: float, now: datetime, dry_run: bool
) -> tuple[list[UnownedSecret], list[str]]:
    """The unowned Secrets deleted (or, with `dry_run`, that would be), and the problems."""
    listed = verbs.list_secrets(target, selector(created_by))
    if not listed.ok:
        if "forbidden" in listed.error_text.lower():
            return [], []
        return [], [f"could not list secrets: {listed.error_text.strip()}"]
    try:
        items = json.loads(listed.stdout).get("items") or []
    except (ValueError, AttributeError):
        return [], ["could not read the list of secrets"]
    candidates = unowned(items, created_by=created_by, now=now, min_age=min_age)
    orphans = [c for c in candidates if _run_is_gone(target, c.run_id)]
    if dry_run:
        return orphans, []
    deleted, problems = [], []
    for orphan in orphans:
        done = verbs.delete(target, "Secret", orphan.name)
        if done.ok:
            deleted.append(orphan)
        else:
            problems.append(f"could not delete secret/{orphan.name}: {done.error_text.strip()}")
    return deleted, problems
