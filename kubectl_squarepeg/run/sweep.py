"""The orphan sweep's execution: listing the user's Pods and Jobs, deleting the orphans
orphans.py selects, and reporting it.

Best effort: one `kubectl get pods,jobs -l SELECTOR -o json` (the selector scopes it
server-side to the user's own, unkept resources), then one collection delete per kind
(`kubectl delete --raw`, selecting the orphans by their unique run-id label, so one request
removes any number of them: kubectl's own delete sends one request per name and its rate
limit makes 1,000 names take minutes), and a `kubectl delete` by name for orphans without a
usable run id, or when collection deletes are not allowed. Its cost does not grow with the
namespace or the number of orphans. During a run it works on a background thread
(`sweep_in_background`), and any failure is one line on stderr that never changes the run's
exit code; the `sweep` command (`sweep_now`) reports failures as errors instead.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any, Protocol

from kubectl_squarepeg.cluster import complaints, kubectl
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.listed import meta
from kubectl_squarepeg.errors import ClusterError, SquarepegError
from kubectl_squarepeg.plan.labels import RUN_ID_LABEL
from kubectl_squarepeg.run import secretsweep
from kubectl_squarepeg.run.orphans import (
    DEFAULT_SILENCE_SECONDS,
    FINISHED_FLOOR_SECONDS,
    Orphan,
    find_candidates,
    judge_ages,
    label_selector,
)
from kubectl_squarepeg.run.secretsweep import UnownedSecret
from kubectl_squarepeg.terminal.console import Console

# Well under Linux's per-call argument limit (ARG_MAX is usually 2 MiB, shared with the
# environment); names are at most 63 characters, so one call takes about 1,500 resources.
_ARGV_BUDGET_BYTES = 100_000
_LIST_TIMEOUT_SECONDS = 60.0
_DELETE_TIMEOUT_SECONDS = 120.0
# `kubectl delete` prints one `KIND[.GROUP] "NAME" deleted` line per resource it removed.
_DELETED_LINE = re.compile(r'^([a-z]+)(?:\.[\w.]+)? "([^"]+)" deleted')
_SUMMARY_NAMES = 3


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
    # Run Secrets left without an owner by a killed run (run/secretsweep.py), deleted or,
    # on a dry run, listed.
    secrets: tuple[UnownedSecret, ...] = ()


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
    silence: float = DEFAULT_SILENCE_SECONDS,
    exclude_uid: str | None = None,
    exclude_name: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    secrets: bool = False,
) -> SweepResult:
    """List, select, delete (unless `dry_run`); with `secrets`, the unowned run Secrets
    too. Raises only what kubectl.run raises."""
    result = _run_sweep(target, created_by, min_age=min_age, silence=silence,
                        exclude_uid=exclude_uid, exclude_name=exclude_name, dry_run=dry_run,
                        now=now)
    if not secrets:
        return result
    found, problems = secretsweep.sweep_secrets(
        target, created_by, min_age=min_age, now=now or datetime.now(timezone.utc),
        dry_run=dry_run)
    return replace(result, secrets=tuple(found), problems=[*result.problems, *problems])


def _run_sweep(
    target: kubectl.Target,
    created_by: str,
    *,
    min_age: float,
    silence: float,
    exclude_uid: str | None,
    exclude_name: str | None,
    dry_run: bool,
    now: datetime | None,
) -> SweepResult:
    items, problem = _list(target, created_by)
    problems = [problem] if problem else []
    candidates = find_candidates(
        items,
        created_by=created_by,
        now=now or datetime.now(timezone.utc),
        exclude_uid=exclude_uid,
        exclude_name=exclude_name,
    )
    judged = judge_ages(candidates, min_age, silence)
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
    silence: float = DEFAULT_SILENCE_SECONDS,
    console: Console,
    exclude_uid: str | None = None,
    exclude_name: str | None = None,
    secrets: bool = False,
) -> SweepHandle:
    """Start the run's sweep. It reports on `console` (stderr) and never raises."""
    target = connection.target

    def work() -> None:
        try:
            result = run_sweep(
                target,
                created_by,
                min_age=min_age,
                silence=silence,
                exclude_uid=exclude_uid,
                exclude_name=exclude_name,
                secrets=secrets,
            )
        except SquarepegError as exc:
            console.warn(f"orphan sweep skipped: {exc.message}")
            return
        except Exception as exc:  # best effort: nothing may escape into the run
            console.warn(f"orphan sweep skipped: {type(exc).__name__}: {exc}")
            return
        if result.deleted:
            console.status(_summary(result.deleted))
        for secret in result.secrets:
            console.status(f"orphan sweep: deleted {secret.describe()}")
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
    silence: float = DEFAULT_SILENCE_SECONDS,
    console: Console,
    dry_run: bool = False,
) -> int:
    """`kubectl squarepeg sweep`: sweep now, one line per orphan; 0, or a ClusterError."""
    target = connection.target
    result = run_sweep(target, created_by, min_age=min_age, silence=silence, dry_run=dry_run)
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
