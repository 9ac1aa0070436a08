"""What `run -d` changes in a run's plan, and the pure checks of the detached verbs' input.

Owns the detached run's contract with the cluster, decided here (docs/decisions/0160):

- A `run -d` Pod or Job carries the label `squarepeg.io/detached=true`. The orphan sweep
  never takes a resource with it (run/sweep.py selects `!squarepeg.io/detached`
  server-side), running or finished, at any age: docker keeps an exited container until
  `docker rm`, and `kubectl squarepeg rm` is that.
- Without `--rm`, a detached Job has no `ttlSecondsAfterFinished`, for the same reason.
- `-d --rm` runs as a Job with `ttlSecondsAfterFinished: 0`: the cluster's TTL controller
  deletes it (and, by background propagation, its pod) as soon as it has finished, with no
  squarepeg process left to do it. A bare Pod has no TTL, and the sweep only runs when the
  user runs something, so a Pod would be removed at an unbounded later time: that is why
  `-d --rm` is a Job, and `-d --rm --mode pod` is refused.
- `-d -i` (and `-dit`) keeps the container's stdin open for `kubectl squarepeg attach`:
  `stdinOnce` is false, so the end of one attach does not close it, as docker keeps a
  detached container's stdin open (docs/decisions/0161, 0391).
- `-d -p` records its ports in the annotation `squarepeg.io/ports`, which `port NAME`
  forwards and `ps` shows: no process of squarepeg is left to forward them (0231).

Also the parsing of `logs --since` and the name check the verbs make before asking the
cluster. Pure: no I/O.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan import names, quantities, values
from kubectl_squarepeg.plan.labels import DETACHED_LABEL, PORTS_ANNOTATION
from kubectl_squarepeg.plan.manifest import Plan
from kubectl_squarepeg.plan.options import RunOptions
from kubectl_squarepeg.plan.podspec import MAIN
from kubectl_squarepeg.plan.ports import recorded

DETACHED_VALUE = "true"
# `-d --rm`: the Job is deleted by the TTL controller this many seconds after it finished.
REMOVE_AFTER_SECONDS = 0


def detach_options(options: RunOptions, *, remove_when_done: bool) -> tuple[RunOptions, list[str]]:
    """The options of a `run -d` (its refusals are plan/rules.py's), and the status notes to
    print about what -d changed."""
    if not remove_when_done:
        return options, []
    notes = []
    if options.mode == "pod":
        notes.append(
            "-d --rm runs as a Job: the cluster deletes it as soon as it exits "
            "(ttlSecondsAfterFinished: 0)"
        )
    replaced = dataclasses.replace(
        options, mode="job", job_ttl_seconds_after_finished=REMOVE_AFTER_SECONDS
    )
    return replaced, notes


def detach_plan(plan: Plan, *, remove_when_done: bool) -> Plan:
    """`plan` with the detached label on the Pod (or the Job and its pod template), and the
    Job's time-to-live: 0 with --rm, none without (kept until `rm`, as docker keeps it)."""
    manifest: dict[str, Any] = copy.deepcopy(plan.manifest)
    _label(manifest)
    if plan.options.publish:
        annotations = manifest.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[PORTS_ANNOTATION] = recorded(plan.options.publish)
    pod_spec = manifest.get("spec", {})
    if plan.kind == "Job":
        spec = manifest.setdefault("spec", {})
        _label(spec.setdefault("template", {}))
        pod_spec = spec["template"].get("spec", {})
        if remove_when_done and not plan.options.keep:
            spec["ttlSecondsAfterFinished"] = REMOVE_AFTER_SECONDS
        else:
            spec.pop("ttlSecondsAfterFinished", None)
    for container in pod_spec.get("containers", ()):
        if container.get("name") == MAIN and container.get("stdin"):
            container["stdinOnce"] = False  # open for every later attach, not only the first
    return dataclasses.replace(plan, manifest=manifest)


def _label(obj: dict[str, Any]) -> None:
    metadata = obj.setdefault("metadata", {})
    labels = metadata.setdefault("labels", {})
    labels[DETACHED_LABEL] = DETACHED_VALUE


def check_run_name(name: str) -> str:
    """A NAME given to ps/logs/wait/rm: it must be able to be a Pod or Job name."""
    try:
        return names.validate_name(name)
    except values.ValueProblem as problem:
        raise UsageError(
            f"{name!r} cannot be the name of a squarepeg run", f"{problem}; "
            "`kubectl squarepeg ps -a` lists your runs"
        ) from None


@dataclass(frozen=True)
class Since:
    """`logs --since`: seconds back from now, or a moment (RFC 3339, UTC)."""

    seconds: int | None = None
    time: str | None = None

    def kubectl_flag(self) -> list[str]:
        """The `kubectl logs` flag that says the same."""
        if self.time is not None:
            return [f"--since-time={self.time}"]
        return [f"--since={self.seconds}s"]

    def query(self) -> dict[str, str]:
        """The log API's query parameter that says the same."""
        if self.time is not None:
            return {"sinceTime": self.time}
        return {"sinceSeconds": str(self.seconds)}


_RFC3339 = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)", re.IGNORECASE
)


def parse_since(text: str) -> Since:
    """docker's `--since`: a duration back from now (`42m`, `1h30m`, `90s`, or seconds) or
    a timestamp (`2026-12-04T16:20:00Z`). A bare number is seconds here; docker reads it as
    a Unix time, which no one types."""
    cleaned = text.strip()
    if _RFC3339.fullmatch(cleaned):
        try:
            moment = datetime.fromisoformat(cleaned.upper().replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None:
            utc = moment.astimezone(timezone.utc).replace(microsecond=0)
            return Since(time=utc.strftime("%Y-%m-%dT%H:%M:%SZ"))
    try:
        seconds = quantities.parse_duration_seconds(cleaned)
    except values.ValueProblem:
        raise UsageError(
            f"invalid value {text!r} for --since",
            "give a duration like 42m, 1h30m or 90s, or a time like 2026-12-04T16:20:00Z",
        ) from None
    return Since(seconds=max(1, int(seconds)))
