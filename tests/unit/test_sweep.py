"""Orphan selection (pure) and the shape of the kubectl calls the sweep makes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs

import pytest

from kubectl_squarepeg.cluster import podstate
from kubectl_squarepeg.config.keys import DEFAULTS
from kubectl_squarepeg.run import orphans, runner, sweep, watch
from kubectl_squarepeg.run.orphans import Orphan

NOW = datetime(2026, 12, 2, 20, 0, 0, tzinfo=timezone.utc)
MIN_AGE = 300.0
USER = "alice"
FAIL_FAST = sorted(podstate.FAIL_FAST_REASONS)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def labels(user: str = USER, run: str = "0b7c2a52", **extra: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "squarepeg",
        "squarepeg.io/run-id": run,
        "squarepeg.io/created-by": user,
        **extra,
    }


def pod(
    name: str,
    phase: str,
    *,
    created: float = 3600,
    finished: float | None = None,
    waiting: str | None = None,
    owner_uid: str | None = None,
    user: str = USER,
    kind: bool = True,
    **meta: Any,
) -> dict[str, Any]:
    if finished is not None:
        exit_code = 0 if phase == "Succeeded" else 1
        state: dict[str, Any] = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Completed" if exit_code == 0 else "Error",
                "startedAt": ts(created - 1),
                "finishedAt": ts(finished),
            }
        }
    elif waiting is not None:
        state = {"waiting": {"reason": waiting, "message": "..."}}
    elif phase == "Running":
        state = {"running": {"startedAt": ts(created - 1)}}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "creationTimestamp": ts(created),
        "labels": meta.pop("labels", labels(user, run=f"run-{name}")),
        **meta,
    }
    if owner_uid is not None:
        metadata["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": owner_uid,
             "controller": True, "blockOwnerDeletion": True}
        ]
    item: dict[str, Any] = {
        "metadata": metadata,
        "spec": {"containers": [{"name": "main", "image": "alpine"}], "restartPolicy": "Never"},
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "main", "image": "alpine", "ready": False,
                                   "restartCount": 0, "state": state}],
        },
    }
    if kind:
        item = {"apiVersion": "v1", "kind": "Pod", **item}
    return item


def job(
    name: str,
    *,
    created: float = 3600,
    condition: str | None = None,
    finished: float | None = None,
    user: str = USER,
    kind: bool = True,
    **meta: Any,
) -> dict[str, Any]:
    conditions = []
    status: dict[str, Any] = {"startTime": ts(created)}
    if condition is not None:
        assert finished is not None
        # Current clusters add the interim condition first, then the final one.
        interim = "SuccessCriteriaMet" if condition == "Complete" else "FailureTarget"
        conditions = [
            {"type": interim, "status": "True", "lastTransitionTime": ts(finished)},
            {"type": condition, "status": "True", "lastTransitionTime": ts(finished)},
        ]
        if condition == "Complete":
            status["completionTime"] = ts(finished)
    status["conditions"] = conditions
    item: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}",
            "creationTimestamp": ts(created),
            "labels": meta.pop("labels", labels(user, run=f"run-{name}")),
            **meta,
        },
        "spec": {"backoffLimit": 0, "template": {"spec": {"containers": []}}},
        "status": status,
    }
    if kind:
        item = {"apiVersion": "batch/v1", "kind": "Job", **item}
    return item


def select(*items: dict[str, Any], **kwargs: Any) -> list[Orphan]:
    return orphans.select_orphans(items, created_by=USER, now=NOW, min_age=MIN_AGE, **kwargs)


# --- finished ---------------------------------------------------------------------------


def test_finished_pods_older_than_min_age_since_they_finished() -> None:
    assert select(
        pod("ok", "Succeeded", finished=301),
        pod("bad", "Failed", finished=7200),
    ) == [
        Orphan("Pod", "ok", "finished", "Succeeded", 301.0, "run-ok"),
        Orphan("Pod", "bad", "finished", "Failed", 7200.0, "run-bad"),
    ]


def test_a_finished_pod_is_judged_by_when_it_finished_not_when_it_was_created() -> None:
    assert select(pod("recent", "Succeeded", created=86400, finished=299)) == []


def test_running_and_unknown_pods_are_never_orphans_at_any_age() -> None:
    ancient = 400 * 86400
    assert select(pod("r", "Running", created=ancient), pod("u", "Unknown", created=ancient)) == []


# --- stuck ------------------------------------------------------------------------------


@pytest.mark.parametrize("reason", FAIL_FAST)
def test_pending_on_each_fail_fast_reason_is_stuck_once_old_enough(reason: str) -> None:
    assert select(pod("s", "Pending", created=600, waiting=reason)) == [
        Orphan("Pod", "s", "stuck", reason, 600.0, "run-s")
    ]


def test_err_image_never_pull_is_stuck() -> None:
    assert "ErrImageNeverPull" in FAIL_FAST  # --pull never, and the image is not on the node
    assert select(pod("s", "Pending", created=600, waiting="ErrImageNeverPull")) == [
        Orphan("Pod", "s", "stuck", "ErrImageNeverPull", 600.0, "run-s")
    ]


def test_a_stuck_pod_younger_than_min_age_is_left_alone() -> None:
    assert select(pod("s", "Pending", created=299, waiting="ErrImagePull")) == []


@pytest.mark.parametrize("reason", ["ContainerCreating", "PodInitializing", None])
def test_pending_without_a_fail_fast_reason_is_never_swept(reason: str | None) -> None:
    slow = pod("slow", "Pending", created=30 * 86400, waiting=reason)
    if reason is None:  # unschedulable: no container status at all
        slow["status"] = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    assert select(slow) == []


# --- exemptions -------------------------------------------------------------------------


def test_kept_other_users_unmanaged_and_terminating_resources_are_exempt() -> None:
    old = {"finished": 3000}
    assert select(
        pod("kept", "Succeeded", labels=labels(**{"squarepeg.io/keep": "true"}), **old),
        pod("bob", "Succeeded", user="bob", **old),
        pod("theirs", "Succeeded", labels={"app": "web"}, **old),
        pod("going", "Succeeded", deletionTimestamp=ts(5), **old),
        job("kept-job", condition="Complete", labels=labels(**{"squarepeg.io/keep": "true"}),
            **old),
    ) == []


def test_the_runs_own_resource_is_never_a_candidate() -> None:
    mine = pod("mine", "Failed", finished=3000)
    other = pod("other", "Failed", finished=3000)
    assert [o.name for o in select(mine, other, exclude_uid="uid-mine")] == ["other"]
    assert [o.name for o in select(mine, other, exclude_name="mine")] == ["other"]


# --- jobs -------------------------------------------------------------------------------


def test_jobs_are_judged_by_their_complete_or_failed_condition() -> None:
    assert select(
        job("done", condition="Complete", finished=301),
        job("broke", condition="Failed", finished=4000),
        job("fresh", condition="Complete", finished=10),
    ) == [
        Orphan("Job", "done", "finished", "Complete", 301.0, "run-done"),
        Orphan("Job", "broke", "finished", "Failed", 4000.0, "run-broke"),
    ]


def test_a_job_owned_pod_is_never_deleted_directly() -> None:
    # Its Job is running (no condition): neither is an orphan, though the pod looks finished.
    parent = job("j")
    child = pod("j-abcde", "Failed", finished=4000, owner_uid="uid-j")
    assert select(parent, child) == []
    # A Job we cannot see (listing denied): its pod is still not ours to delete.
    assert select(pod("k-abcde", "Succeeded", finished=4000, owner_uid="uid-k")) == []


def test_a_job_without_a_condition_is_judged_by_its_stuck_child() -> None:
    parent = job("j", created=900)
    child = pod("j-abcde", "Pending", created=899, waiting="ImagePullBackOff", owner_uid="uid-j")
    assert select(parent, child) == [
        Orphan("Job", "j", "stuck", "ImagePullBackOff", 899.0, "run-j")
    ]


def test_a_job_whose_child_is_young_running_or_slow_is_left_alone() -> None:
    assert select(
        job("young", created=100),
        pod("young-1", "Pending", created=100, waiting="ErrImagePull", owner_uid="uid-young"),
        job("run", created=9000),
        pod("run-1", "Running", created=9000, owner_uid="uid-run"),
        job("slow", created=9000),
        pod("slow-1", "Pending", created=9000, owner_uid="uid-slow"),
        job("childless", created=9000),
    ) == []


def test_the_interim_condition_alone_does_not_make_a_job_finished() -> None:
    pending = job("j")
    pending["status"]["conditions"] = [
        {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": ts(4000)}
    ]
    assert select(pending) == []


def test_items_without_kind_are_told_apart_by_their_shape() -> None:
    assert select(
        job("j", condition="Failed", finished=600, kind=False),
        pod("p", "Succeeded", finished=600, kind=False),
    ) == [
        Orphan("Job", "j", "finished", "Failed", 600.0, "run-j"),
        Orphan("Pod", "p", "finished", "Succeeded", 600.0, "run-p"),
    ]


# --- the floor under finished resources ---------------------------------------------------

FLOOR = orphans.FINISHED_FLOOR_SECONDS


@pytest.mark.parametrize("min_age", [0.0, 1.0, FLOOR - 1])
def test_below_the_floor_a_finished_resource_is_never_swept_whatever_min_age_says(
    min_age: float,
) -> None:
    just_under = FLOOR - 1
    assert orphans.select_orphans(
        [pod("p", "Succeeded", finished=just_under), pod("f", "Failed", finished=0),
         job("j", condition="Complete", finished=just_under)],
        created_by=USER, now=NOW, min_age=min_age,
    ) == []


@pytest.mark.parametrize("min_age", [0.0, 1.0])
def test_at_the_floor_a_finished_resource_is_swept_at_a_lower_min_age(min_age: float) -> None:
    assert orphans.select_orphans(
        [pod("p", "Succeeded", finished=FLOOR), job("j", condition="Failed", finished=FLOOR)],
        created_by=USER, now=NOW, min_age=min_age,
    ) == [
        Orphan("Job", "j", "finished", "Failed", FLOOR, "run-j"),
        Orphan("Pod", "p", "finished", "Succeeded", FLOOR, "run-p"),
    ]


def test_a_min_age_above_the_floor_is_what_counts() -> None:
    assert orphans.required_age("finished", MIN_AGE) == MIN_AGE > FLOOR
    assert select(pod("p", "Succeeded", finished=MIN_AGE - 1)) == []


def test_stuck_resources_have_no_floor() -> None:
    # A run whose pod is stuck decided on the event that showed why; its exit code is 125
    # whoever deletes the pod (sweep.py, next to FINISHED_FLOOR_SECONDS).
    assert orphans.required_age("stuck", 0.0) == 0.0
    assert [o.name for o in orphans.select_orphans(
        [pod("s", "Pending", created=2, waiting="ErrImagePull"),
         job("j", created=2),
         pod("j-abcde", "Pending", created=2, waiting="ImagePullBackOff", owner_uid="uid-j")],
        created_by=USER, now=NOW, min_age=1.0,
    )] == ["j", "s"]


def test_the_floor_covers_what_a_live_run_needs_after_its_container_ended() -> None:
    # The run learns of the end once its watch is back (a retry window and one pause), then
    # drains its log stream for up to LOG_DRAIN_LIMIT_SECONDS (LogFollower.finish): the floor
    # must leave room beyond that for clock skew and a loaded machine, and stay under the
    # default orphan_sweep_min_age so that only a lower configured age meets it.
    pause = 3.0  # watch.py's longest pause between two attempts
    needed = watch.RETRY_WINDOW_SECONDS + pause + runner.LOG_DRAIN_LIMIT_SECONDS
    assert needed + 30 <= FLOOR < DEFAULTS["orphan_sweep_min_age"]


def test_judge_ages_tells_young_from_held_by_the_floor() -> None:
    candidates = orphans.find_candidates(
        [pod("new", "Succeeded", finished=0),  # younger than min_age
         pod("recent", "Failed", finished=60),  # old enough for min_age, not for the floor
         pod("old", "Succeeded", finished=FLOOR + 1),
         pod("stuck", "Pending", created=60, waiting="ErrImagePull")],
        created_by=USER, now=NOW,
    )
    judged = orphans.judge_ages(candidates, 1.0)
    assert ([o.name for o in judged.orphans], judged.young, judged.below_floor) == (
        ["old", "stuck"], 1, 1)
    everything = orphans.judge_ages(candidates, 0.0)
    assert (len(everything.orphans), everything.young, everything.below_floor) == (2, 0, 2)


# --- the kubectl calls ------------------------------------------------------------------


def test_label_selector_scopes_to_the_users_own_unkept_undetached_resources() -> None:
    assert orphans.label_selector("alice") == (
        "app.kubernetes.io/managed-by=squarepeg,squarepeg.io/created-by=alice,"
        "!squarepeg.io/keep,!squarepeg.io/detached"
    )


FIXED = ["delete", "--cascade=background", "--wait=false", "--ignore-not-found"]


def _orphans(count: int, length: int = 20, run_ids: bool = False) -> list[Orphan]:
    return [
        Orphan("Job" if i % 2 else "Pod", f"o{i:05d}".ljust(length, "x"), "finished", "Failed",
               1, f"{i:08d}-6f1e-4c59-9d55-0d8c3a9e4b11" if run_ids else None)
        for i in range(count)
    ]


def plan(orphans: list[Orphan]) -> list[sweep.DeleteCall]:
    return sweep.plan_deletes(orphans, namespace="team-a", created_by=USER)


def query_of(call: sweep.DeleteCall) -> tuple[str, dict[str, list[str]]]:
    assert call.args[:2] == ["delete", "--raw"]
    path, _, query = call.args[2].partition("?")
    return path, parse_qs(query)


def test_orphans_with_run_ids_go_in_one_collection_delete_per_kind() -> None:
    calls = plan(_orphans(3, run_ids=True))
    assert [c.by_run_id for c in calls] == [True, True]
    pods_path, pods_query = query_of(calls[0])
    jobs_path, jobs_query = query_of(calls[1])
    assert pods_path == "/api/v1/namespaces/team-a/pods"
    assert jobs_path == "/apis/batch/v1/namespaces/team-a/jobs"
    assert pods_query["labelSelector"] == [
        f"{orphans.label_selector(USER)},squarepeg.io/run-id in "
        "(00000000-6f1e-4c59-9d55-0d8c3a9e4b11,00000002-6f1e-4c59-9d55-0d8c3a9e4b11)"
    ]
    assert jobs_query["propagationPolicy"] == pods_query["propagationPolicy"] == ["Background"]
    assert [o.name for o in calls[1].orphans] == ["o00001xxxxxxxxxxxxxx"]


def test_three_and_three_hundred_orphans_cost_the_same_calls() -> None:
    for with_ids, expected in ((True, 2), (False, 1)):
        assert len(plan(_orphans(3, run_ids=with_ids))) == expected
        assert len(plan(_orphans(300, length=63, run_ids=with_ids))) == expected


def test_orphans_without_run_ids_are_deleted_by_name() -> None:
    assert [c.args for c in plan(_orphans(3))] == [
        [*FIXED, "pod/o00000xxxxxxxxxxxxxx", "job/o00001xxxxxxxxxxxxxx", "pod/o00002xxxxxxxxxxxxxx"]
    ]


def test_a_huge_sweep_is_chunked_under_the_argv_limit_with_each_orphan_once() -> None:
    for with_ids in (False, True):
        orphans = _orphans(5000, length=63, run_ids=with_ids)
        calls = plan(orphans)
        assert len(calls) == (2 if with_ids else 4)  # run ids are shorter than refs
        for call in calls:
            assert sum(len(arg) + 1 for arg in call.args) < 110_000
        covered = sorted(o.name for call in calls for o in call.orphans)
        assert covered == sorted(o.name for o in orphans)


def test_a_run_id_shared_with_another_listed_resource_is_not_used() -> None:
    twin = labels(run="same")
    found = select(
        pod("old", "Succeeded", finished=3000, labels=twin),
        pod("busy", "Running", labels=twin),
    )
    assert found == [Orphan("Pod", "old", "finished", "Succeeded", 3000.0, None)]
    assert plan(found)[0].args == [*FIXED, "pod/old"]


def test_no_orphans_no_delete_call() -> None:
    assert plan([]) == []


def test_deleted_refs_reads_a_collection_delete_answer() -> None:
    answer = (b'{"kind": "PodList", "apiVersion": "v1", "items": '
              b'[{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}')
    assert sweep.deleted_refs(answer) == {"pod/a", "pod/b"}
    assert sweep.deleted_refs(b'{"kind": "JobList", "items": [{"metadata": {"name": "j"}}]}') \
        == {"job/j"}


def test_deleted_refs_reads_what_kubectl_delete_printed() -> None:
    out = (
        b'pod "a" deleted\n'
        b'job.batch "b" deleted\n'
        b'pod "c" deleted from default namespace\n'
        b"Warning: something else\n"
    )
    assert sweep.deleted_refs(out) == {"pod/a", "job/b", "pod/c"}


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (119.9, "119s"), (120, "2m"), (10799, "179m"), (10800, "3h"),
     (4 * 3600 + 60 * 7, "4h7m"), (48 * 3600, "2d"), (50 * 3600, "2d2h"), (-5, "0s")],
)
def test_format_age(seconds: float, text: str) -> None:
    assert orphans.format_age(seconds) == text


def test_describe_names_the_category_reason_and_age() -> None:
    assert Orphan("Pod", "p", "finished", "Succeeded", 420, "run-p").describe() == (
        "pod/p (finished: Succeeded 7m ago)"
    )
    assert Orphan("Job", "j", "stuck", "ErrImagePull", 360, "run-j").describe() == (
        "job/j (stuck: ErrImagePull, created 6m ago)"
    )


# --- silent: a run killed while its resource ran (decision 0350) -------------------------


def alive(seconds_ago: float) -> dict[str, str]:
    return {"squarepeg.io/alive-at": ts(seconds_ago)}


def test_a_running_pod_whose_run_went_silent_is_an_orphan_past_the_silence_only() -> None:
    silent = pod("killed", "Running", annotations=alive(150))
    beating = pod("live", "Running", annotations=alive(20))
    never = pod("old-squarepeg", "Running")  # no heartbeat: never taken for silent
    assert [o.describe() for o in select(silent, beating, never)] == [
        "pod/killed (silent: Running, its run last alive 2m ago)"
    ]
    assert select(silent, silence=200.0) == []


def test_silence_is_its_own_bound_whatever_the_minimum_age_says() -> None:
    silent = pod("killed", "Pending", annotations=alive(130))
    found = orphans.select_orphans([silent], created_by=USER, now=NOW, min_age=3600)
    assert [o.name for o in found] == ["killed"]
    judged = orphans.judge_ages(
        orphans.find_candidates([pod("live", "Running", annotations=alive(5))],
                                created_by=USER, now=NOW),
        MIN_AGE,
    )
    # A run in flight is neither an orphan nor counted as young or below the floor.
    assert (judged.orphans, judged.young, judged.below_floor) == ([], 0, 0)


def test_a_job_whose_run_went_silent_is_an_orphan_and_its_pod_is_not_deleted_directly() -> None:
    silent = job("killed-job", created=600, annotations=alive(121))
    child = pod("killed-job-abcde", "Running", owner_uid="uid-killed-job")
    assert [(o.kind, o.category, o.reason) for o in select(silent, child)] == [
        ("Job", "silent", "Active")
    ]


def test_kept_and_detached_runs_are_never_silent_orphans() -> None:
    kept = pod("kept", "Running", annotations=alive(999),
               labels=labels(**{"squarepeg.io/keep": "true"}))
    detached = pod("bg", "Running", annotations=alive(999),
                   labels=labels(**{"squarepeg.io/detached": "true"}))
    assert select(kept, detached) == []
