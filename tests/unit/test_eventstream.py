"""`--events`: the pure encoding of a line (terminal/eventstream.py), the readings of the
pod behind the phases (run/eventlog.py), each line against docs/events.schema.json."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kubectl_squarepeg.cluster.podstate import Outcome
from kubectl_squarepeg.run import eventlog
from kubectl_squarepeg.terminal.console import Console, NullSink
from kubectl_squarepeg.terminal.eventstream import (
    SCHEMA_VERSION,
    JsonLinesSink,
    encode,
    timestamp,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "events.schema.json").read_text(encoding="utf-8"))


def valid(line: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(line)
    jsonschema.validate(record, SCHEMA, cls=jsonschema.Draft202012Validator)
    return record


def test_a_line_is_version_time_event_then_the_fields_without_nones() -> None:
    line = encode("created", {"kind": "Pod", "namespace": "ns", "name": "a", "uid": None}, 0.5)
    assert line == ('{"version":1,"time":"1970-01-01T00:00:00.500Z","event":"created",'
                    '"kind":"Pod","namespace":"ns","name":"a"}\n')
    assert valid(line)["version"] == SCHEMA_VERSION


def test_a_message_with_newlines_and_non_ascii_stays_one_line() -> None:
    line = encode("warning", {"message": "naïve\nsecond line \"quoted\""}, 1.0)
    assert line.count("\n") == 1 and line.endswith("\n")
    assert valid(line)["message"] == "naïve\nsecond line \"quoted\""


def test_a_field_cannot_replace_the_envelope() -> None:
    record = json.loads(encode("exit", {"event": "other", "version": 9, "exit_code": 0}, 0))
    assert (record["event"], record["version"]) == ("exit", 1)


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "1970-01-01T00:00:00.000Z"),
    (1_796_630_400.0999, "2026-12-07T08:00:00.099Z"),  # cut, never rounded up into a second
])
def test_times_are_utc_with_milliseconds(seconds: float, text: str) -> None:
    assert timestamp(seconds) == text


def test_the_sink_writes_whole_flushed_lines_and_survives_a_closed_reader() -> None:
    flushed: list[str] = []

    class Flushing(io.StringIO):
        def flush(self) -> None:
            flushed.append(self.getvalue())

    out = Flushing()
    sink = JsonLinesSink(out, clock=lambda: 2.0)
    sink.emit("running", pod="p")
    assert flushed[-1].endswith('"event":"running","pod":"p"}\n')  # a reader has it now
    out.close()
    sink.emit("exit", exit_code=0)  # no exception: the run goes on without its reader


def test_the_null_sink_is_inactive() -> None:
    assert NullSink().active is False and JsonLinesSink(io.StringIO()).active is True


def test_every_warning_shown_is_an_event_and_dash_silences_the_lines() -> None:
    err, stream = io.StringIO(), io.StringIO()
    console = Console(err)
    console.stream_events(JsonLinesSink(stream, clock=lambda: 0.0), instead_of_lines=True)
    console.warn("pod p: Failed:  two   spaces")
    console.status("not a line any more")
    assert err.getvalue() == ""
    assert valid(stream.getvalue())["message"] == "pod p: Failed: two spaces"


@pytest.mark.parametrize(("text", "seconds"), [
    ("2s", 2.0), ("1.234s", 1.234), ("850ms", 0.85), ("1m2.5s", 62.5), ("1h0m0s", 3600.0),
    ("500µs", 0.001), ("soon", None), ("2s and more", None), ("", None),
])
def test_go_durations(text: str, seconds: float | None) -> None:
    assert eventlog.go_duration_seconds(text) == seconds


def event(reason: str, message: str, type_: str = "Normal") -> dict[str, str]:
    return {"type": type_, "reason": reason, "message": message}


def test_pull_facts_from_the_kubelets_words() -> None:
    facts = eventlog.pull_facts([
        event("Scheduled", "Successfully assigned ns/p to node"),
        event("Pulling", 'Pulling image "python:3"'),
        event("Pulled", 'Successfully pulled image "python:3" in 12.5s (13.1s including '
                        "waiting). Image size: 1000 bytes."),
        event("Pulled", 'Container image "busybox" already present on machine'),
    ])
    assert facts == [
        {"event": "pulling", "image": "python:3"},
        {"event": "pulled", "image": "python:3", "seconds": 12.5, "cached": False},
        {"event": "pulled", "image": "busybox", "seconds": 0.0, "cached": True},
    ]
    for fact in facts:
        kind = fact.pop("event")
        valid(encode(kind, fact, 0))


def pod(terminated: dict[str, Any] | None = None, **status: Any) -> dict[str, Any]:
    state = {"terminated": terminated} if terminated else {"running": {}}
    return {"metadata": {"name": "p"}, "spec": {"nodeName": "n1"},
            "status": {**status, "containerStatuses": [{"name": "main", "state": state}]}}


@pytest.mark.parametrize(("the_pod", "outcome", "reason"), [
    (pod({"exitCode": 0, "reason": "Completed"}), Outcome(0), "Completed"),
    (pod({"exitCode": 2, "reason": "Error"}), Outcome(2), "Error"),
    (pod({"exitCode": 137, "reason": "OOMKilled"}), Outcome(137, "OOMKilled"), "OOMKilled"),
    (pod({"exitCode": 0, "reason": "OOMKilled"}), Outcome(137, "was OOMKilled"), "OOMKilled"),
    (pod(reason="DeadlineExceeded"), Outcome(124, "deadline", False), "DeadlineExceeded"),
    (pod(reason="Evicted"), Outcome(125, "evicted", False), "Evicted"),
    (None, Outcome(125, "deleted", False, pod_deleted=True), "Deleted"),
    (pod({"exitCode": 128, "reason": "StartError"}),
     Outcome(127, "not found", False, start_failure=True), "StartError"),
])
def test_exit_reasons(the_pod: dict[str, Any] | None, outcome: Outcome, reason: str) -> None:
    assert eventlog.exit_reason(the_pod, outcome) == reason


class Recorder:
    active = True

    def __init__(self) -> None:
        self.said: list[tuple[str, dict[str, Any]]] = []

    def emit(self, event: str, **fields: Any) -> None:
        self.said.append((event, fields))


def test_phases_are_said_once_each_with_the_pull_read_at_the_start() -> None:
    sink, asked = Recorder(), []

    def fetch(name: str) -> list[dict[str, str]]:
        asked.append(name)
        return [event("Pulling", 'Pulling image "alpine"'),
                event("Pulled", 'Successfully pulled image "alpine" in 2s (2s including waiting)')]

    phases = eventlog.PodPhases(sink, fetch)
    pending = pod()
    waiting = {"waiting": {"reason": "ContainerCreating"}}
    pending["status"]["containerStatuses"][0]["state"] = waiting
    phases.observe(pending)
    phases.pulling('Pulling image "alpine"')  # the wait's status line saw it first
    phases.observe(pod())
    phases.observe(pod())
    assert [name for name, _ in sink.said] == ["scheduled", "pulling", "pulled", "running"]
    assert sink.said[2][1] == {"image": "alpine", "seconds": 2.0, "cached": False}
    assert asked == ["p"]  # one look at the events, at the start


def test_without_events_the_phases_ask_nothing() -> None:
    def fetch(name: str) -> list[dict[str, str]]:
        raise AssertionError("no --events: no question to the cluster")

    phases = eventlog.PodPhases(NullSink(), fetch)
    phases.observe(pod())
    assert phases.latest == pod()
