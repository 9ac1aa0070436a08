"""`run --events`: the JSON lines a pipeline reads (docs/events.md), on a real run.

Every line every run here writes is validated against docs/events.schema.json
(`read_events`), and the order of the phases is asserted: a normal run (to a file, and
with `-` in stderr's place), a typo'd image, an OOM, a Ctrl-C on a terminal, `run -d`, and
a path that cannot be written. The container's stdout stays its own in each.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.e2e.conftest import Squarepeg, counting_kubectl, names, wait_until
from tests.e2e.test_interrupt_e2e import Terminal, wait_for_output

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "events.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
SH = ("alpine", "sh", "-c")
SECRET = "s3cret-value-of-the-token"


def parse_events(text: str) -> list[dict[str, Any]]:
    """Each line one JSON object, valid against the schema; the objects in order."""
    assert text.endswith("\n"), repr(text[-200:])
    events = []
    for line in text.splitlines():
        event = json.loads(line)
        errors = sorted(VALIDATOR.iter_errors(event), key=str)
        assert not errors, (line, [e.message for e in errors])
        events.append(event)
    times = [e["time"] for e in events]
    assert times == sorted(times), times  # one clock, written as it goes
    return events


def ended(events: list[dict[str, Any]], code: int) -> None:
    """The stream's last line is squarepeg's exit code, once."""
    assert events[-1] == {**events[-1], "event": "exit", "exit_code": code}, events[-1]
    assert kinds(events).count("exit") == 1


def read_events(path: Path) -> list[dict[str, Any]]:
    return parse_events(path.read_text(encoding="utf-8"))


def events_so_far(path: Path) -> list[dict[str, Any]]:
    """What a reader of the file sees now: whole lines only, each valid."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return parse_events(text) if text else []


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def one(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [e for e in events if e["event"] == kind]
    assert len(found) == 1, (kind, events)
    return found[0]


def in_order(events: list[dict[str, Any]], *order: str) -> None:
    """Each of `order` is there once, in that order."""
    places = [kinds(events).index(kind) for kind in order]
    for kind in order:
        one(events, kind)
    assert places == sorted(places), (order, kinds(events))


def test_a_normal_run_says_each_phase_in_order(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    stream = tmp_path / "events.jsonl"
    done = squarepeg("run", "--events", str(stream), "--name", "ev-ok", "-e", f"TOKEN={SECRET}",
                     *SH, "echo out; exit 3")
    assert done.code == 3, done.stderr
    assert done.stdout == b"out\n"
    assert done.has_line("squarepeg: pod/ev-ok"), done.lines  # stderr keeps its lines
    events = read_events(stream)
    assert SECRET not in stream.read_text()  # decision 0026
    in_order(events, "created", "scheduled", "running", "exited", "deleted")
    ended(events, 3)
    created = one(events, "created")
    assert (created["kind"], created["name"], created["namespace"]) == ("Pod", "ev-ok", namespace)
    assert one(events, "scheduled")["node"]
    exited = one(events, "exited")
    assert (exited["exit_code"], exited["container_exit_code"], exited["reason"]) == (3, 3, "Error")
    for pulled in (e for e in events if e["event"] == "pulled"):
        assert kinds(events).index("pulled") < kinds(events).index("running")
        assert pulled["image"].endswith("alpine") or "alpine" in pulled["image"]
    assert "error" not in kinds(events)
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the pod to go")


def test_a_job_run_to_stderr_in_place_of_squarepegs_lines(
    squarepeg: Squarepeg, namespace: str
) -> None:
    done = squarepeg("run", "--events", "-", "--mode", "job", "--name", "ev-job", *SH,
                     "echo from-job")
    assert done.code == 0, done.stderr
    assert done.stdout == b"from-job\n"  # stdout is the container's alone
    events = parse_events(done.stderr)  # every stderr line is an event: no `squarepeg:` text
    in_order(events, "created", "scheduled", "running", "exited", "deleted")
    assert one(events, "created")["kind"] == "Job"
    ended(events, 0)
    exited = one(events, "exited")
    assert (exited["exit_code"], exited["reason"]) == (0, "Completed")
    assert exited["pod"].startswith("ev-job-")


def test_a_typod_image_says_why_it_cannot_start(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    stream = tmp_path / "events.jsonl"
    done = squarepeg("run", "--events", str(stream), "--name", "ev-typo", "alpnie:3.19", "true")
    assert done.code == 125, done.stderr
    events = read_events(stream)
    in_order(events, "created", "fail_fast", "deleted", "error")
    ended(events, 125)
    failed = one(events, "fail_fast")
    assert failed["reason"] in ("ErrImagePull", "ImagePullBackOff"), failed
    assert failed["container"] == "main"
    error = one(events, "error")
    assert error["exit_code"] == 125 and "ErrImagePull" in error["message"] + failed["reason"]
    assert "running" not in kinds(events) and "exited" not in kinds(events)
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the pod to go")


def test_an_oom_is_exited_oomkilled_137(squarepeg: Squarepeg, tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    hog = "python3 -c \"import time; b = bytearray(300 * 1024 * 1024); time.sleep(30)\""
    done = squarepeg("run", "--events", str(stream), "-m", "64m", "python:3", "sh", "-c", hog)
    assert done.code == 137, done.stderr
    events = read_events(stream)
    in_order(events, "created", "running", "exited", "deleted")
    exited = one(events, "exited")
    assert (exited["exit_code"], exited["reason"]) == (137, "OOMKilled"), exited
    ended(events, 137)


def test_a_ctrl_c_is_interrupted_then_deleted(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    stream = tmp_path / "events.jsonl"
    term = Terminal(squarepeg, tmp_path, "run", "--events", str(stream), "--stop-timeout", "3",
                    "--name", "ev-int", *SH, "echo ready; sleep 120")
    try:
        wait_for_output(term)
        wait_until(lambda: "running" in kinds(events_so_far(stream)), 10, "the running line")
        term.ctrl_c()
        assert term.wait() == 130, term.stderr()
    finally:
        term.close()
    events = read_events(stream)
    in_order(events, "created", "running", "interrupted", "deleted")
    assert one(events, "interrupted")["signal"] == "SIGINT"
    ended(events, 130)
    assert "exited" not in kinds(events)
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the pod to go")


def test_run_d_is_kept_detached(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    stream = tmp_path / "events.jsonl"
    # A 1 s grace: `rm -f` of a sleeping PID 1 that ignores SIGTERM is not the test.
    done = squarepeg("run", "-d", "--events", str(stream), "--stop-timeout", "1",
                     "--name", "ev-det", *SH, "sleep 60")
    try:
        assert done.code == 0, done.stderr
        assert done.stdout == b"ev-det\n"
        events = read_events(stream)
        in_order(events, "created", "scheduled", "running", "kept")
        assert one(events, "kept")["why"] == "detached"
        ended(events, 0)
        assert "deleted" not in kinds(events) and "exited" not in kinds(events)
    finally:
        assert squarepeg("rm", "-f", "ev-det").code == 0
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the pod to go")


def test_a_path_that_cannot_be_written_is_one_line_and_creates_nothing(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    done = squarepeg("run", "--events", str(tmp_path / "no-dir" / "e.jsonl"), *SH, "true")
    assert done.code == 125
    assert len(done.lines) == 1 and done.lines[0].startswith("squarepeg: error: --events"), \
        done.lines
    assert names(kubesim, namespace) == []


@pytest.mark.kubesim_only("counts kubectl calls of a healthy start; on a real node an image "
                          "pull's timing can make the status line look at events")
def test_events_cost_one_kubectl_and_nothing_without_the_flag(
    squarepeg: Squarepeg, tmp_path: Path
) -> None:
    # Only the `get events` calls are compared: the heartbeat's renewals vary with time.
    env, log = counting_kubectl(tmp_path)
    assert squarepeg("run", *SH, "true", env=env).code == 0
    without = log.read_text().splitlines()
    log.write_text("")
    assert squarepeg("run", "--events", str(tmp_path / "e.jsonl"), *SH, "true", env=env).code == 0
    with_events = log.read_text().splitlines()
    assert not [c for c in without if " get events " in f" {c} "], without
    assert len([c for c in with_events if " get events " in f" {c} "]) == 1, with_events


# Longer than podevents.CREATING_GRACE_SECONDS, after which the wait looks at the pod's events.
SLOW_PULL = {"images": {"slowpull": {"cmd": ["sh", "-c", "echo pulled"], "pull_seconds": 4}}}


def test_a_slow_pull_is_said_as_it_happens_with_its_seconds(
    kubesim_factory: Any, tmp_path: Path
) -> None:
    sim = kubesim_factory(SLOW_PULL)
    runner = Squarepeg(sim, "default", tmp_path)
    stream = tmp_path / "events.jsonl"
    try:
        running = runner.start("run", "--events", str(stream), "slowpull")
        # Live: `pulling` is in the file while the pull goes on, before the container runs.
        wait_until(lambda: "pulling" in kinds(events_so_far(stream)), 30, "the pulling line")
        assert "running" not in kinds(read_events(stream))
        done = runner.finish(running)
    finally:
        runner.close()
    assert done.code == 0, done.stderr
    assert done.stdout == b"pulled\n"
    events = read_events(stream)
    in_order(events, "created", "scheduled", "pulling", "pulled", "running", "exited", "deleted")
    pulled = one(events, "pulled")
    assert pulled["image"] == "slowpull" and pulled["cached"] is False
    assert 3.5 <= pulled["seconds"] < 30, pulled
    wait_until(lambda: names(sim, "default") == [], 30, "default to be empty")


LINES = 200_000
EXPECTED = b"".join(b"%d\n" % i for i in range(1, LINES + 1))
HALF = LINES // 2


@pytest.mark.kubesim_only("the cut stream and the rotation behind it are kubesim's scenario "
                          "(tests/e2e/test_output_complete.py says why localkube differs)")
def test_a_gap_in_the_output_is_said_with_its_place(
    kubesim_factory: Any, tmp_path: Path
) -> None:
    sim = kubesim_factory({"options": {"log_rotate_bytes": 300_000, "log_rotate_seconds": 0}})
    runner = Squarepeg(sim, "default", tmp_path)
    stream = tmp_path / "events.jsonl"
    sim.ctl("drop-logs", "--after-bytes", "100000", "--times", "1")
    try:
        done = runner("run", "--context", sim.context, "--events", str(stream), "alpine",
                      "sh", "-c", f"sleep 3; seq 1 {HALF}; sleep 0.2; seq {HALF + 1} {LINES}; "
                      "exit 3", namespaced=False)
    finally:
        runner.close()
    assert done.code == 125, done.stderr
    events = read_events(stream)
    # The gap is found as the output drains, which may be after the container has exited.
    in_order(events, "created", "running", "gap", "deleted", "error")
    in_order(events, "running", "exited", "deleted")
    ended(events, 125)
    gap = one(events, "gap")
    # The place is where the output has its hole: what came before it is exact.
    assert done.stdout[:gap["byte"]] == EXPECTED[:gap["byte"]]
    assert done.stdout[:gap["byte"]].count(b"\n") in (gap["line"], gap["line"] - 1)
    assert done.has_line(f"output lost after line {gap['line']}"), done.lines
    assert one(events, "exited")["container_exit_code"] == 3
    wait_until(lambda: names(sim, "default") == [], 30, "default to be empty")
