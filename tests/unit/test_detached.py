"""The pure parts of detached runs: `ps`'s rows and words (run/listing.py), and what -d
changes in a plan and which combinations it refuses (plan/detached.py)."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan import detached, ports, rules
from kubectl_squarepeg.plan.labels import PORTS_ANNOTATION
from kubectl_squarepeg.plan.options import RunOptions
from kubectl_squarepeg.run import listing, orphans

NOW = datetime(2026, 12, 4, 17, 0, 0, tzinfo=timezone.utc)


def _at(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod(name: str, state: dict[str, Any], *, phase: str = "Running", created: float = 300,
         owner: str | None = None, labels: dict[str, str] | None = None,
         deleting: bool = False, status_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name, "uid": f"uid-{name}", "creationTimestamp": _at(created),
        "labels": {"squarepeg.io/created-by": "alice", **(labels or {})},
    }
    if owner:
        meta["ownerReferences"] = [{"uid": owner, "kind": "Job"}]
    if deleting:
        meta["deletionTimestamp"] = _at(1)
    return {
        "kind": "Pod", "metadata": meta,
        "spec": {"containers": [{"name": "main", "image": "alpine",
                                 "command": ["sh", "-c"], "args": ["echo hello; exit 3"]}]},
        "status": {"phase": phase,
                   "containerStatuses": [{"name": "main", "state": state}],
                   **(status_extra or {})},
    }


def _job(name: str, *, created: float = 400) -> dict[str, Any]:
    return {
        "kind": "Job",
        "metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": _at(created),
                     "labels": {"squarepeg.io/created-by": "alice"}},
        "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox",
                                                       "command": ["sleep", "60"]}]}}},
        "status": {},
    }


RUNNING = {"running": {"startedAt": _at(180)}}
EXITED = {"terminated": {"exitCode": 3, "finishedAt": _at(120)}}


@pytest.mark.parametrize(("seconds", "words"), [
    (0.4, "Less than a second"), (1, "1 second"), (45, "45 seconds"), (90, "About a minute"),
    (180, "3 minutes"), (3600, "About an hour"), (5 * 3600, "5 hours"),
    (3 * 86400, "3 days"), (21 * 86400, "3 weeks"), (120 * 86400, "4 months"),
    (800 * 86400, "2 years"),
])
def test_durations_read_as_dockers(seconds: float, words: str) -> None:
    assert listing.human_duration(seconds) == words


def test_statuses_are_dockers_words_with_the_clusters_additions() -> None:
    assert listing.pod_status(_pod("a", RUNNING), NOW)[:2] == ("running", "Up 3 minutes")
    assert listing.pod_status(_pod("b", EXITED, phase="Failed"), NOW) == (
        "exited", "Exited (3) 2 minutes ago", 3)
    pulling = {"waiting": {"reason": "ErrImagePull"}}
    assert listing.pod_status(_pod("c", pulling, phase="Pending"), NOW)[1] == (
        "Pending: ErrImagePull")
    assert listing.pod_status(_pod("d", RUNNING, deleting=True), NOW)[1] == "Terminating"
    evicted = _pod("e", {}, phase="Failed", status_extra={"reason": "Evicted"})
    assert listing.pod_status(evicted, NOW)[1] == "Failed (Evicted)"
    assert listing.pod_status(None, NOW)[1] == "Pending"


def test_a_job_and_its_pod_are_one_run_named_by_the_job() -> None:
    items = [_job("j"), _pod("j-abcde", RUNNING, owner="uid-j"), _pod("p", EXITED,
                                                                       phase="Failed")]
    rows = listing.rows(items, NOW, all_runs=True)
    assert [(r.name, r.mode, r.pod, r.state) for r in rows] == [
        ("p", "pod", "p", "exited"), ("j", "job", "j-abcde", "running")]
    assert [r.name for r in listing.rows(items, NOW, all_runs=False)] == ["j"]


def test_the_table_has_dockers_columns_and_a_truncated_command() -> None:
    rows = listing.rows([_pod("web", RUNNING)], NOW, all_runs=False)
    lines = listing.table(rows, NOW).splitlines()
    assert lines[0].split() == ["NAME", "IMAGE", "COMMAND", "CREATED", "STATUS", "MODE"]
    assert lines[1].startswith("web    alpine   \"sh -c 'echo hello; …\"   5 minutes ago")
    assert lines[1].endswith("Up 3 minutes   pod")
    assert listing.names(rows) == "web\n"


def test_json_is_one_object_a_line_with_the_whole_command() -> None:
    rows = listing.rows([_pod("a", EXITED, phase="Failed", labels={
        "squarepeg.io/detached": "true"})], NOW, all_runs=True)
    [line] = listing.json_lines(rows, NOW).splitlines()
    record = json.loads(line)
    assert record["Command"] == "sh -c 'echo hello; exit 3'"
    assert record["ExitCode"] == 3 and record["Detached"] is True and record["State"] == "exited"


# --- plan/detached.py ---------------------------------------------------------------------


def _plan(kind: str = "Pod", keep: bool = False) -> Any:
    from kubectl_squarepeg.plan.manifest import Plan

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "labels": {"a": "b"}},
           "spec": {}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x", "labels": {}},
           "spec": {"ttlSecondsAfterFinished": 600,
                    "template": {"metadata": {"labels": {}}, "spec": {}}}}
    options = RunOptions(image="alpine", keep=keep, mode="job" if kind == "Job" else "pod")
    return Plan(options=options, manifest=job if kind == "Job" else pod,
                kind="Job" if kind == "Job" else "Pod", name="x", namespace="ns",
                run_id="r", created_by="alice")


def test_a_detached_pod_is_labelled_and_a_job_keeps_no_ttl_without_rm() -> None:
    pod = detached.detach_plan(_plan(), remove_when_done=False).manifest
    assert pod["metadata"]["labels"] == {"a": "b", "squarepeg.io/detached": "true"}
    job = detached.detach_plan(_plan("Job"), remove_when_done=False).manifest
    assert "ttlSecondsAfterFinished" not in job["spec"]
    assert job["spec"]["template"]["metadata"]["labels"]["squarepeg.io/detached"] == "true"
    removed = detached.detach_plan(_plan("Job"), remove_when_done=True).manifest
    assert removed["spec"]["ttlSecondsAfterFinished"] == 0


def test_d_rm_makes_a_job_and_refuses_an_explicit_pod_mode() -> None:
    options, notes = detached.detach_options(RunOptions(image="alpine"), remove_when_done=True)
    assert options.mode == "job" and options.job_ttl_seconds_after_finished == 0
    assert notes and "Job" in notes[0]
    with pytest.raises(UsageError, match="--mode pod"):
        rules.validate(RunOptions(image="alpine"),
                       rules.Asked(detach=True, rm=True, mode_given=True))


def _planned(options: RunOptions) -> Any:
    """A Pod plan whose main container has what podspec.py writes for -i and -t."""
    from kubectl_squarepeg.plan.manifest import Plan

    main: dict[str, Any] = {"name": "main", "image": "alpine"}
    if options.interactive:
        main.update(stdin=True, stdinOnce=True)
    if options.tty:
        main["tty"] = True
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "labels": {}},
           "spec": {"containers": [main]}}
    return Plan(options=options, manifest=pod, kind="Pod", name="x", namespace="ns",
                run_id="r", created_by="alice")


@pytest.mark.parametrize(("interactive", "tty"), [(True, False), (False, True), (True, True)])
def test_d_with_a_terminal_or_stdin_is_a_run_to_attach_to(interactive: bool, tty: bool) -> None:
    """Decision 0161's refusal became `attach`: validated, and stdin left open (not
    stdinOnce) for every attach, not only the first."""
    options = dataclasses.replace(RunOptions(image="alpine"), interactive=interactive, tty=tty)
    rules.validate(options, rules.Asked(detach=True))
    plan = detached.detach_plan(_planned(options), remove_when_done=False)
    [main] = plan.manifest["spec"]["containers"]
    assert main.get("stdin", False) is interactive and main.get("tty", False) is tty
    assert main.get("stdinOnce", False) is False


def test_d_with_p_records_the_ports_for_port() -> None:
    published = ports.parse_publish("8080:80") + ports.parse_publish("[::1]::81")
    options = dataclasses.replace(RunOptions(image="alpine"), publish=published)
    rules.validate(options, rules.Asked(detach=True))
    plan = detached.detach_plan(_planned(options), remove_when_done=False)
    text = plan.manifest["metadata"]["annotations"][PORTS_ANNOTATION]
    assert text == "127.0.0.1:8080:80,[::1]:0:81"
    assert ports.parse_recorded(text) == published
    assert ports.parse_recorded("garbage,127.0.0.1:1:2") == ports.parse_publish("1:2")


def test_since_reads_durations_and_times_and_refuses_garbage() -> None:
    assert detached.parse_since("42m").query() == {"sinceSeconds": "2520"}
    assert detached.parse_since("1h30m").kubectl_flag() == ["--since=5400s"]
    moment = detached.parse_since("2026-12-04T18:20:00+02:00")
    assert moment.query() == {"sinceTime": "2026-12-04T16:20:00Z"}
    with pytest.raises(UsageError, match="--since"):
        detached.parse_since("yesterday")


def test_the_sweep_never_takes_a_detached_run_however_old() -> None:
    old = _pod("gone", {"terminated": {"exitCode": 0, "finishedAt": _at(86400)}},
               phase="Succeeded",
               labels={"app.kubernetes.io/managed-by": "squarepeg",
                       "squarepeg.io/detached": "true"})
    plain = json.loads(json.dumps(old))
    del plain["metadata"]["labels"]["squarepeg.io/detached"]
    plain["metadata"]["name"] = "plain"
    found = orphans.select_orphans([old, plain], created_by="alice", now=NOW, min_age=0)
    assert [o.name for o in found] == ["plain"]


def test_ps_rows_keep_what_the_filters_match_and_a_status_filter_lists_finished_runs() -> None:
    from kubectl_squarepeg.plan.psfilter import parse_filters

    running = _pod("web-1", {"running": {"startedAt": _at(60)}}, labels={"app": "web"})
    ended = _pod("web-2", {"terminated": {"exitCode": 3, "finishedAt": _at(30)}},
                 phase="Failed", labels={"app": "web"})
    other = _pod("db-1", {"running": {"startedAt": _at(60)}})
    items = [running, ended, other]
    shown = listing.rows(items, NOW, all_runs=False, filters=parse_filters(["label=app=web"]))
    assert [r.name for r in shown] == ["web-1"]
    exited = listing.rows(items, NOW, all_runs=False, filters=parse_filters(["status=exited"]))
    assert [r.name for r in exited] == ["web-2"]  # without -a, as docker's
    both = listing.rows(items, NOW, all_runs=True, filters=parse_filters(["name=web"]))
    assert sorted(r.name for r in both) == ["web-1", "web-2"]


def test_ps_table_has_namespace_with_a_and_ports_when_a_run_recorded_them() -> None:
    pod = _pod("web-1", {"running": {"startedAt": _at(60)}})
    pod["metadata"]["namespace"] = "team-a"
    plain = listing.table(listing.rows([pod], NOW, all_runs=True), NOW, all_namespaces=True)
    head, line = plain.splitlines()
    assert head.split()[:2] == ["NAMESPACE", "NAME"] and "PORTS" not in head
    assert line.split()[:2] == ["team-a", "web-1"]
    pod["metadata"]["annotations"] = {PORTS_ANNOTATION: "127.0.0.1:8080:80,0.0.0.0:0:81"}
    [row] = listing.rows([pod], NOW, all_runs=True)
    assert row.ports == "127.0.0.1:8080->80/tcp, 0.0.0.0:0->81/tcp"
    head = listing.table([row], NOW).splitlines()[0]
    assert head.split() == ["NAME", "IMAGE", "COMMAND", "CREATED", "STATUS", "PORTS", "MODE"]
    [shown] = [json.loads(line) for line in listing.json_lines([row], NOW).splitlines()]
    assert shown["Ports"] == row.ports and shown["Namespace"] == "team-a"
