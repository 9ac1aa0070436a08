"""The pure parts of the cluster half: CRI record splitting, log blocks, image references,
command and env resolution, pod phase rules, scheduler messages, the work queue."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest

from tests.kubesim import containerconfig, images, podstatus
from tests.kubesim.container import go_duration
from tests.kubesim.informer import WorkQueue
from tests.kubesim.logbook import LogBook, parse_timestamp
from tests.kubesim.process import MAX_RECORD, LineSplitter, rfc3339_nano
from tests.kubesim.scheduler import NodeFit, fit_error, pod_request, tolerates

# -- records ---------------------------------------------------------------------------------


def test_splitter_keeps_partial_lines_until_complete() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"a\nb") == [b"a\n"]
    assert splitter.feed(b"c\nd\ne") == [b"bc\nd\n"]
    assert splitter.flush() == [b"e"]
    assert splitter.flush() == []


def test_splitter_cuts_long_lines_at_16k() -> None:
    splitter = LineSplitter()
    first = splitter.feed(b"y" * (MAX_RECORD + 10))
    assert first == [b"y" * MAX_RECORD]
    records = splitter.feed(b"z" * (2 * MAX_RECORD) + b"\nshort\n")
    assert records == [b"y" * 10 + b"z" * (MAX_RECORD - 10), b"z" * MAX_RECORD,
                       b"z" * 10 + b"\n", b"short\n"]
    block = b"a\n" + b"q" * (MAX_RECORD + 1) + b"\nb\n"
    assert LineSplitter().feed(block) == [b"a\n", b"q" * MAX_RECORD, b"q\n", b"b\n"]


def test_log_timestamps_have_nine_digits() -> None:
    text, moment = rfc3339_nano(1_700_000_000_123_456_789)
    assert text == "2023-11-14T22:13:20.123456789Z"
    assert moment == parse_timestamp(text)


def test_logbook_blocks_prefix_every_line_and_filter_by_line() -> None:
    book = LogBook()
    t1, t2 = "2024-01-01T00:00:01.000000001Z", "2024-01-01T00:00:02.000000002Z"
    book.append("ns", "p", "c", b"one\ntwo\nthr", timestamp=t1)
    book.append("ns", "p", "c", b"ee\nfour\n", timestamp=t2)

    def read(**kw: object) -> bytes:
        return b"".join(book.read("ns", "p", "c", **kw))  # type: ignore[arg-type]

    assert read() == b"one\ntwo\nthree\nfour\n"
    assert read(timestamps=True) == (f"{t1} one\n{t1} two\n{t1} three\n{t2} four\n").encode()
    assert read(tail_lines=2) == b"three\nfour\n"
    assert read(tail_lines=0) == b""
    assert read(since_time=parse_timestamp(t2)) == b"four\n"
    assert read(since_time=parse_timestamp(t1) - timedelta(seconds=5), tail_lines=3) == \
        b"two\nthree\nfour\n"


# -- images ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("ref", "normalized", "policy"), [
    ("alpine", "docker.io/library/alpine:latest", "Always"),
    ("alpine:3.19", "docker.io/library/alpine:3.19", "IfNotPresent"),
    ("team/app:v1", "docker.io/team/app:v1", "IfNotPresent"),
    ("registry.example.com:5000/team/app", "registry.example.com:5000/team/app:latest", "Always"),
])
def test_references_normalize_like_containerd(ref: str, normalized: str, policy: str) -> None:
    parsed = images.parse_reference(ref)
    assert parsed.normalized == normalized
    assert parsed.image_id.startswith(parsed.repository + "@sha256:")
    assert images.default_pull_policy(ref) == policy


@pytest.mark.parametrize("ref", ["", "no spaces", "alpine::1", "-alpine", "UPPER"])
def test_malformed_references_are_refused(ref: str) -> None:
    with pytest.raises(images.InvalidReference, match="invalid reference format"):
        images.parse_reference(ref)


# -- command and env --------------------------------------------------------------------------


def test_argv_resolution_and_expansion() -> None:
    env = {"WHO": "world"}
    assert containerconfig.resolve_argv({}, ["ep"], ["cmd"], env) == ["ep", "cmd"]
    assert containerconfig.resolve_argv({"args": ["a"]}, ["ep"], ["cmd"], env) == ["ep", "a"]
    assert containerconfig.resolve_argv({"command": ["c"]}, ["ep"], ["cmd"], env) == ["c"]
    assert containerconfig.resolve_argv({"command": ["echo", "$(WHO)", "$$(WHO)", "$(NOPE)"]},
                                        [], [], env) == ["echo", "world", "$(WHO)", "$(NOPE)"]


def test_env_from_sources_and_missing_ones() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}},
           "spec": {"nodeName": "n1"}, "status": {"podIP": "10.244.0.9"}}
    container = {"name": "main", "resources": {"limits": {"memory": "64Mi"}}, "env": [
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        {"name": "B", "value": "$(A)-b"},
        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory",
                                                           "divisor": "1Mi"}}},
    ], "envFrom": [{"secretRef": {"name": "s"}, "prefix": "S_"}]}
    env = containerconfig.build_env(pod, container, secrets={"ns": {"s": {"x": "1"}}},
                                    configmaps={"ns": {"cm": {"k": "v"}}}, node_allocatable={})
    assert (env["A"], env["B"], env["APP"], env["IP"], env["MEM"], env["S_x"]) == (
        "v", "v-b", "x", "10.244.0.9", "64", "1")
    assert env["HOSTNAME"] == "p" and "PATH" in env
    with pytest.raises(containerconfig.ConfigError, match='secret "s" not found'):
        containerconfig.build_env(pod, container, secrets={}, configmaps={"ns": ["cm"]},
                                  node_allocatable={})
    with pytest.raises(containerconfig.ConfigError,
                       match="couldn't find key k in ConfigMap ns/cm"):
        containerconfig.build_env(pod, container, secrets={"ns": ["s"]},
                                  configmaps={"ns": {"cm": {}}}, node_allocatable={})


def test_go_durations() -> None:
    assert [go_duration(s) for s in (0, 0.25, 1, 1.5, 10, 75.5)] == [
        "0s", "250ms", "1s", "1.5s", "10s", "1m15.5s"]


# -- pod phase --------------------------------------------------------------------------------


def _pod(policy: str, *states: dict[str, Any]) -> dict[str, Any]:
    names = [f"c{i}" for i in range(len(states))]
    return {"spec": {"restartPolicy": policy, "containers": [{"name": n} for n in names]},
            "status": {"containerStatuses": [{"name": n, "state": s}
                                             for n, s in zip(names, states, strict=True)]}}


RUN: dict[str, Any] = {"running": {}}
OK: dict[str, Any] = {"terminated": {"exitCode": 0}}
BAD: dict[str, Any] = {"terminated": {"exitCode": 1}}
WAIT: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}


@pytest.mark.parametrize(("policy", "states", "phase"), [
    ("Never", [WAIT], "Pending"),
    ("Never", [RUN, WAIT], "Pending"),
    ("Never", [RUN, BAD], "Running"),
    ("Never", [OK, OK], "Succeeded"),
    ("Never", [OK, BAD], "Failed"),
    ("OnFailure", [BAD], "Running"),
    ("OnFailure", [OK], "Succeeded"),
    ("Always", [OK], "Running"),
])
def test_phase_rules(policy: str, states: list[dict[str, Any]], phase: str) -> None:
    assert podstatus.phase(_pod(policy, *states)) == phase


def test_terminating_pod_ends_terminal_whatever_its_restart_policy() -> None:
    assert podstatus.phase(_pod("Always", {"terminated": {"exitCode": 143}}),
                           terminating=True) == "Failed"
    assert podstatus.phase(_pod("Always", OK), terminating=True) == "Succeeded"


def test_conditions_keep_transition_times_while_unchanged() -> None:
    pod = _pod("Never", RUN)
    pod["status"]["containerStatuses"][0]["ready"] = True
    first = podstatus.merge_conditions(None, podstatus.conditions(pod, "Running", sandbox=True),
                                       "T1")
    again = podstatus.merge_conditions(first, podstatus.conditions(pod, "Running", sandbox=True),
                                       "T2")
    assert {c["lastTransitionTime"] for c in again} == {"T1"}
    done = podstatus.merge_conditions(again, podstatus.conditions(pod, "Succeeded",
                                                                  sandbox=False), "T3")
    ready = next(c for c in done if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["lastTransitionTime"]) == (
        "False", "PodCompleted", "T3")


# -- scheduler --------------------------------------------------------------------------------


def test_fit_error_wording() -> None:
    fits = [NodeFit(["Insufficient cpu", "Insufficient memory"]),
            NodeFit(["Insufficient memory"]),
            NodeFit(["node(s) didn't match Pod's node affinity/selector"], resolvable=False)]
    assert fit_error(3, fits) == (
        "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node "
        "affinity/selector, 2 Insufficient memory. preemption: 0/3 nodes are available: 1 "
        "Preemption is not helpful for scheduling, 2 No preemption victims found for incoming "
        "pod.")


def test_requests_and_tolerations() -> None:
    spec = {"containers": [{"resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                           {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
            "initContainers": [{"resources": {"requests": {"memory": "2Gi"}}}]}
    request = pod_request(spec)
    assert (request.cpu, request.memory) == (1.25, 2 << 30)
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    assert tolerates([{"key": "k", "operator": "Equal", "value": "v"}], taint)
    assert tolerates([{"operator": "Exists"}], taint)
    assert not tolerates([{"key": "k", "value": "w"}], taint)
    assert not tolerates([{"key": "k", "operator": "Exists", "effect": "NoExecute"}], taint)


# -- work queue -------------------------------------------------------------------------------


def test_work_queue_dedupes_and_requeues_keys_added_while_processing() -> None:
    queue = WorkQueue()
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert queue.get() == "a"
    queue.add("a")  # while "a" is processed: once more afterwards
    assert queue.get() == "b"
    queue.done("b")
    queue.done("a")
    assert queue.get() == "a"
    queue.done("a")
    queue.add_after("later", 0.05)
    assert queue.get() == "later"
    got: list[object] = []
    waiter = threading.Thread(target=lambda: got.append(queue.get()))
    waiter.start()
    queue.shutdown()
    waiter.join(2)
    assert got == [None]
