"""watch: the JSON stream parser in any chunking, restarts, fail-fast and timeout decisions."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from kubectl_squarepeg.cluster import kubectl
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.podstate import Outcome
from kubectl_squarepeg.errors import StartupError
from kubectl_squarepeg.run import podevents, watch
from kubectl_squarepeg.terminal.console import Console

TARGET = kubectl.Target(namespace="ns")


def pod(state: dict[str, Any], phase: str = "Pending", name: str = "p", **extra: Any) -> Any:
    return {
        "kind": "Pod",
        "metadata": {"name": name},
        "status": {"phase": phase, "containerStatuses": [{"name": "main", "state": state}],
                   **extra},
    }


PODS = [
    pod({"waiting": {"reason": "ContainerCreating"}}),
    pod({"running": {}}, "Running"),
    pod({"terminated": {"exitCode": 3, "reason": "Error", "message": "ünïcode ✓"}}, "Failed"),
]


def stream_bytes(pretty: bool) -> bytes:
    if pretty:  # what `-o json` prints: pretty objects back to back
        return b"".join(json.dumps(p, indent=4, ensure_ascii=False).encode() + b"\n" for p in PODS)
    return b"".join(  # what --output-watch-events prints: one compact event a line
        json.dumps({"type": "MODIFIED", "object": p}, ensure_ascii=False).encode() + b"\n"
        for p in PODS
    )


@pytest.mark.parametrize("pretty", [True, False])
@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 100000])
def test_stream_parser_any_chunking(pretty: bool, size: int) -> None:
    data = stream_bytes(pretty)
    parser = watch.JsonStream()
    values: list[Any] = []
    for i in range(0, len(data), size):
        values.extend(parser.feed(data[i : i + size]))
    events = [watch.parse_event(v) for v in values]
    assert [e.pod if e else None for e in events] == PODS
    assert parser.pending == ""


def test_parse_event_kinds() -> None:
    assert watch.parse_event({"type": "DELETED", "object": PODS[0]}) == watch.Event(
        "DELETED", PODS[0]
    )
    status = {"kind": "Status", "status": "Failure", "metadata": {}}
    assert watch.parse_event({"type": "ERROR", "object": status}) is None
    assert watch.parse_event(status) is None
    assert watch.parse_event([1, 2]) is None


class FakeChild:
    """A watch process that printed `data`, then ended with `code` (or is still running)."""

    def __init__(self, code: int | None, stderr: bytes = b"") -> None:
        self.code = code
        self.stderr = stderr
        self.argv: tuple[str, ...] = ("get", "pod")
        self.terminated = False

    def wait(self, timeout: float | None = None) -> int | None:
        return self.code

    def is_alive(self) -> bool:
        return self.code is None and not self.terminated

    def terminate(self) -> None:
        self.terminated = True


class FakeStarter:
    """Stands in for verbs.watch_pods: each start plays the next script."""

    def __init__(self, scripts: list[tuple[list[Any], int | None, bytes]]) -> None:
        self.scripts = scripts
        self.calls: list[dict[str, Any]] = []

    def __call__(self, target: kubectl.Target, **kwargs: Any) -> FakeChild:
        on_stdout: Callable[[bytes], None] = kwargs.pop("on_stdout")
        self.calls.append(kwargs)
        values, code, stderr = self.scripts.pop(0)
        data = b"".join(json.dumps(v).encode() for v in values)
        on_stdout(data[: len(data) // 2])
        on_stdout(data[len(data) // 2 :])
        return FakeChild(code, stderr)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.5  # every look at the clock costs half a second
        return self.now


def ev(p: Any, kind: str = "MODIFIED") -> dict[str, Any]:
    return {"type": kind, "object": p}


class Lines(io.StringIO):
    """A stderr stand-in that keeps each written line."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def write(self, text: str) -> int:
        self.lines.append(text)
        return len(text)


def reporter(
    lines: list[str],
    events: list[dict[str, Any]] | None = None,
    clock: Callable[[], float] | None = None,
) -> podevents.EventReporter:
    def fetch(name: str) -> list[Mapping[str, Any]]:
        return list(events or [])

    return podevents.EventReporter(Console(Lines(lines)), fetch, clock=clock or Clock())


def test_a_watch_that_ends_cleanly_is_restarted_not_taken_for_the_end() -> None:
    starter = FakeStarter([
        ([ev(PODS[0])], 0, b""),
        ([ev(PODS[1])], 0, b""),
        ([ev(PODS[2])], None, b""),
    ])
    w = watch.PodWatch(TARGET, pod="p", start=starter)
    w.start(early=True)
    started = watch.wait_for_start(w, timeout=60, reporter=reporter([]), commands=Commands(TARGET))
    assert started.pod == PODS[1]
    assert watch.wait_for_finish(w, started) == Outcome(3)
    assert starter.calls == [
        {"field_selector": "metadata.name=p"}, {"name": "p"}, {"name": "p"}
    ]
    assert w.restarts == 2


def test_not_found_on_restart_means_deleted() -> None:
    starter = FakeStarter([
        ([ev(PODS[1])], 0, b""),
        ([], 1, b'Error from server (NotFound): pods "p" not found\n'),
    ])
    w = watch.PodWatch(TARGET, pod="p", start=starter)
    w.start()
    started = watch.wait_for_start(w, timeout=60, reporter=reporter([]), commands=Commands(TARGET))
    assert watch.wait_for_finish(w, started) == Outcome(
        125, "pod p was deleted before its container finished", False, pod_deleted=True
    )


def test_deleted_event_while_running_is_125() -> None:
    starter = FakeStarter([([ev(PODS[1]), ev(PODS[1], "DELETED")], None, b"")])
    w = watch.PodWatch(TARGET, pod="p", start=starter)
    w.start()
    started = watch.wait_for_start(w, timeout=60, reporter=reporter([]), commands=Commands(TARGET))
    assert watch.wait_for_finish(w, started).exit_code == 125


def test_failing_watch_is_retried_with_backoff() -> None:
    starter = FakeStarter([
        ([], 1, b"The connection to the server 127.0.0.1:1 was refused\n"),
        ([], 1, b"The connection to the server 127.0.0.1:1 was refused\n"),
        ([ev(PODS[2])], None, b""),
    ])
    w = watch.PodWatch(TARGET, pod="p", start=starter, clock=Clock())
    w.start()
    started = watch.wait_for_start(w, timeout=60, reporter=reporter([]), commands=Commands(TARGET))
    assert watch.wait_for_finish(w, started) == Outcome(3)
    assert len(starter.calls) == 3


def test_job_mode_follows_the_first_pod_of_the_job() -> None:
    other = pod({"running": {}}, "Running", name="other")
    mine = pod({"running": {}}, "Running", name="job-abcde")
    starter = FakeStarter([([ev(mine), ev(other)], None, b"")])
    w = watch.PodWatch(TARGET, job="job", start=starter)
    w.start(early=True)
    started = watch.wait_for_start(w, timeout=60, reporter=reporter([]), commands=Commands(TARGET))
    assert started.pod == mine
    assert w.pod_name == "job-abcde"
    assert starter.calls == [{"selector": "job-name=job"}]


def test_fail_fast_far_inside_the_timeout_quotes_the_events() -> None:
    stuck = pod({"waiting": {"reason": "ErrImagePull", "message": 'pull "nope": not found'}})
    w = watch.PodWatch(TARGET, pod="p", start=FakeStarter([([ev(stuck)], None, b"")]))
    w.start()
    events = [
        {"type": "Normal", "reason": "Pulling", "message": 'Pulling image "nope"'},
        {"type": "Warning", "reason": "Failed", "message": "Error: ErrImagePull"},
        {"type": "Warning", "reason": "Failed", "message": "Error: ErrImagePull"},
    ]
    with pytest.raises(StartupError) as caught:
        watch.wait_for_start(
            w, timeout=300, reporter=reporter([], events), commands=Commands(TARGET)
        )
    assert caught.value.one_line() == (
        'container main of pod p cannot start: ErrImagePull: pull "nope": not found '
        "(events: Warning Failed: Error: ErrImagePull); "
        "check the image name and tag, and that the cluster can pull it (registry access, "
        "--image-pull-secret); `kubectl get events --field-selector involvedObject.name=p "
        "--namespace=ns` lists its events, also after the cleanup"
    )


def test_a_registry_refusing_credentials_names_the_flag_and_the_secret() -> None:
    message = ('failed to pull and unpack image "reg.example:5001/p/a:1": failed to resolve '
               "image: pull access denied, repository does not exist or may require "
               "authorization: authorization failed: no basic auth credentials")
    stuck = pod({"waiting": {"reason": "ErrImagePull", "message": message}})
    stuck["spec"] = {"containers": [{"name": "main", "image": "reg.example:5001/p/a:1"}]}
    w = watch.PodWatch(TARGET, pod="p", start=FakeStarter([([ev(stuck)], None, b"")]))
    w.start()
    with pytest.raises(StartupError) as caught:
        watch.wait_for_start(w, timeout=300, reporter=reporter([], []), commands=Commands(TARGET))
    assert caught.value.one_line() == (
        "container main of pod p cannot start: ErrImagePull: the registry reg.example:5001 "
        f"refused to pull reg.example:5001/p/a:1 without credentials ({message}); "
        "pass `--image-pull-secret NAME`, NAME a docker-registry Secret in the namespace "
        "(`kubectl create secret docker-registry NAME --docker-server=reg.example:5001 "
        "--docker-username=USER --docker-password=PASSWORD --namespace=ns`); `kubectl get events "
        "--field-selector involvedObject.name=p --namespace=ns` lists its events, also after "
        "the cleanup"
    )


def test_described_events_are_the_warnings_or_else_the_last_normal_ones() -> None:
    normal = [{"type": "Normal", "reason": f"R{i}", "message": f"m{i}"} for i in range(7)]
    assert podevents.describe_events(normal) == (
        "Normal R2: m2; Normal R3: m3; Normal R4: m4; Normal R5: m5; Normal R6: m6"
    )
    assert podevents.describe_events([]) == ""


def test_unschedulable_prints_warning_events_once_then_times_out() -> None:
    blocked = pod(
        {"waiting": {"reason": "ContainerCreating"}},
        conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/1 nodes are available: 1 Insufficient memory."}],
    )
    warning = {"type": "Warning", "reason": "FailedScheduling",
               "message": "0/1 nodes are available: 1 Insufficient memory."}
    normal = {"type": "Normal", "reason": "Scheduled", "message": "ignored"}
    lines: list[str] = []
    events = [warning, normal, warning]
    w = watch.PodWatch(TARGET, pod="p", start=FakeStarter([([ev(blocked)], None, b"")]))
    w.start()
    clock = Clock()
    rep = reporter(lines, events, clock)
    with pytest.raises(StartupError) as caught:
        watch.wait_for_start(w, timeout=10, reporter=rep, commands=Commands(TARGET), clock=clock)
    assert lines == [
        "squarepeg: warning: pod p: FailedScheduling: 0/1 nodes are available: "
        "1 Insufficient memory.\n"
    ]
    assert caught.value.one_line() == (
        "pod p did not start within the startup timeout of 10s (not scheduled: 0/1 nodes are "
        "available: 1 Insufficient memory.) (events: Warning FailedScheduling: 0/1 nodes are "
        "available: 1 Insufficient memory.); raise --timeout if it is just slow; "
        "`kubectl get events --field-selector involvedObject.name=p --namespace=ns` lists "
        "its events, also after the cleanup"
    )


def test_scheduling_and_the_autoscalers_words_are_shown_once_per_reason() -> None:
    # Seen on localkube: an uncordoned node's taint outlives its flag for an instant, and
    # the scheduler's second FailedScheduling says so in other words.
    blocked = pod(
        {"waiting": {"reason": "ContainerCreating"}},
        conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    )
    events = [
        {"type": "Warning", "reason": "FailedScheduling", "message": "1 node(s) were "
         "unschedulable"},
        {"type": "Normal", "reason": "NotTriggerScaleUp", "message": "pod didn't trigger "
         "scale-up: 1 max node group size reached"},
        {"type": "Warning", "reason": "FailedScheduling", "message": "1 node(s) had "
         "untolerated taint(s)"},
        {"type": "Normal", "reason": "TriggeredScaleUp", "message": "pod triggered scale-up: "
         "[{pool 1->2 (max: 3)}]"},
        {"type": "Normal", "reason": "Pulled", "message": "not shown"},
        {"type": "Warning", "reason": "FailedMount", "message": "one"},
        {"type": "Warning", "reason": "FailedMount", "message": "two"},
    ]
    lines: list[str] = []
    reporter(lines, events).poll(blocked)
    assert lines == [
        "squarepeg: warning: pod p: FailedScheduling: 1 node(s) were unschedulable\n",
        "squarepeg: warning: pod p: NotTriggerScaleUp: pod didn't trigger scale-up: 1 max "
        "node group size reached\n",
        "squarepeg: warning: pod p: TriggeredScaleUp: pod triggered scale-up: [{pool 1->2 "
        "(max: 3)}]\n",
        "squarepeg: warning: pod p: FailedMount: one\n",
        "squarepeg: warning: pod p: FailedMount: two\n",
    ]


def test_real_watch_child_delivers_to_the_queue_from_another_thread() -> None:
    # The callback runs on sh's reader thread in real life; the queue hands events over.
    holder: dict[str, Callable[[bytes], None]] = {}

    def start(target: kubectl.Target, **kwargs: Any) -> FakeChild:
        holder["cb"] = kwargs["on_stdout"]
        return FakeChild(None)

    w = watch.PodWatch(TARGET, pod="p", start=start)
    w.start()
    thread = threading.Thread(target=holder["cb"], args=(json.dumps(ev(PODS[1])).encode(),))
    thread.start()
    thread.join()
    assert w.next(1.0) == watch.Event("MODIFIED", PODS[1])


def test_a_pod_being_created_asks_for_events_only_after_the_grace() -> None:
    creating = pod({"waiting": {"reason": "ContainerCreating"}})
    fetched: list[str] = []

    def fetch(name: str) -> list[Mapping[str, Any]]:
        fetched.append(name)
        return []

    now = [0.0]
    rep = podevents.EventReporter(Console(Lines([])), fetch, clock=lambda: now[0])
    rep.poll(creating)
    now[0] = podevents.CREATING_GRACE_SECONDS - 0.1
    rep.poll(creating)
    assert fetched == []  # a healthy start costs no `kubectl get events`
    now[0] = podevents.CREATING_GRACE_SECONDS + 0.1
    rep.poll(creating)
    assert fetched == ["p"]
