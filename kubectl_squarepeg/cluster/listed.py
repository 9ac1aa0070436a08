"""Pure reading of listed Pods and Jobs as runs: kind, metadata, and which pods are a Job's.

Owns the one grouping that `ps`/`rm` (run/listing.py) and the orphan sweep (run/sweep.py)
both make of a mixed list of Pods and Jobs: a pod with an owner is its Job's, a pod without
one is a run of its own. No I/O and no imports of the package.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Listed = Mapping[str, Any]


def meta(item: Listed) -> Mapping[str, Any]:
    found = item.get("metadata")
    return found if isinstance(found, Mapping) else {}


def kind_of(item: Listed) -> Literal["Pod", "Job"]:
    """A listed item's kind; list items may omit it (a Job is the one with a pod template)."""
    kind = item.get("kind")
    if kind == "Pod" or kind == "Job":
        return "Pod" if kind == "Pod" else "Job"
    return "Job" if "template" in (item.get("spec") or {}) else "Pod"


def owner_uids(pod: Listed) -> set[str]:
    refs = meta(pod).get("ownerReferences") or []
    return {str(ref.get("uid")) for ref in refs if isinstance(ref, Mapping)}


@dataclass
class Grouped:
    """A list split into Jobs (with their pods, by the Job's uid) and bare Pods."""

    jobs: list[Listed] = field(default_factory=list)
    bare_pods: list[Listed] = field(default_factory=list)
    pods_by_owner: dict[str, list[Listed]] = field(default_factory=dict)

    def pods_of(self, job: Listed) -> list[Listed]:
        return self.pods_by_owner.get(str(meta(job).get("uid")), [])


def grouped(items: Iterable[Listed]) -> Grouped:
    """Jobs first in listing order, each pod under every owner it names; a pod that names
    none is a bare run."""
    result = Grouped()
    pods: list[Listed] = []
    for item in items:
        (result.jobs if kind_of(item) == "Job" else pods).append(item)
    for pod in pods:
        uids = owner_uids(pod)
        if not uids:
            result.bare_pods.append(pod)
        for uid in uids:
            result.pods_by_owner.setdefault(uid, []).append(pod)
    return result
