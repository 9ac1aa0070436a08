"""headstart.py's rules: the run id, the pod's labels in a Pod or a Job, and when the
children started ahead of the run may serve it. No process is started: the children are
stand-ins that only say whether they are alive."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kubectl_squarepeg import headstart, kubectl
from kubectl_squarepeg.headstart import RUN_ID_LABEL, HeadStart
from kubectl_squarepeg.kubectl import HeldStdin, Target

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
TARGET = Target(context="kind", namespace="team")


def test_run_ids_are_random_version_4_uuids() -> None:
    ids = {headstart.new_run_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(UUID4.match(run_id) for run_id in ids)


def pod(labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": labels}}


def job(template_labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "labels": {"job-level": "only"}},
        "spec": {"template": {"metadata": {"labels": template_labels}, "spec": {}}},
    }


def test_the_pod_labels_are_a_pods_own_or_a_jobs_template() -> None:
    assert headstart.pod_labels(pod({"a": "1"})) == {"a": "1"}
    assert headstart.pod_labels(job({"b": "2"})) == {"b": "2"}
    assert headstart.pod_labels({"kind": "Job", "spec": None}) == {}
    assert headstart.pod_labels({"kind": "Pod"}) == {}


def test_the_watch_selects_by_the_run_id_and_prints_events() -> None:
    args = headstart.watch_args("abc")
    assert args[args.index("-l") + 1] == f"{RUN_ID_LABEL}=abc"
    assert "--watch" in args and "--output-watch-events" in args


class StandIn:
    def __init__(self, alive: bool = True) -> None:
        self.alive = alive
        self.terminated = False

    def is_alive(self) -> bool:
        return self.alive

    def terminate(self) -> None:
        self.terminated = True
        self.alive = False


def head(create: StandIn | None = None, watch: StandIn | None = None) -> HeadStart:
    children: Any = (create or StandIn(), watch or StandIn())
    return HeadStart(TARGET, "rid", children[0], HeldStdin(), children[1])


def test_a_head_start_serves_the_run_it_was_guessed_for() -> None:
    assert head().fits(TARGET, pod({RUN_ID_LABEL: "rid"}))
    assert head().fits(TARGET, job({RUN_ID_LABEL: "rid"}))


@pytest.mark.parametrize(
    ("target", "manifest"),
    [
        # A config file's namespace (or context) made the run's target another one.
        (Target(context="kind", namespace="other"), pod({RUN_ID_LABEL: "rid"})),
        (Target(context="prod", namespace="team"), pod({RUN_ID_LABEL: "rid"})),
        (Target(context="kind", kubeconfig="/k", namespace="team"), pod({RUN_ID_LABEL: "rid"})),
        # A config patch changed or removed the label the watch selects by.
        (TARGET, pod({RUN_ID_LABEL: "changed"})),
        (TARGET, pod({})),
    ],
)
def test_a_head_start_for_anything_else_does_not_fit(
    target: Target, manifest: dict[str, Any]
) -> None:
    assert not head().fits(target, manifest)


def test_a_head_start_whose_child_died_does_not_fit() -> None:
    manifest = pod({RUN_ID_LABEL: "rid"})
    assert not head(create=StandIn(alive=False)).fits(TARGET, manifest)
    assert not head(watch=StandIn(alive=False)).fits(TARGET, manifest)


def test_discarding_ends_both_children_and_closes_the_create_input() -> None:
    create, watch = StandIn(), StandIn()
    started = head(create, watch)
    started.discard()
    assert create.terminated and watch.terminated
    started.held.release(b"{}")  # closed already: nothing is written, nothing raised


def test_a_late_callback_gets_what_arrived_before_it_in_order() -> None:
    sink = kubectl._ByteSink(None)
    sink.write(b"one ")
    sink.write(b"two ")
    got: list[bytes] = []
    sink.attach(got.append)
    sink.write(b"three")
    assert b"".join(got) == b"one two three"


def test_a_failing_callback_is_kept_and_later_chunks_dropped() -> None:
    calls: list[bytes] = []

    def explode(chunk: bytes) -> None:
        calls.append(chunk)
        raise RuntimeError("boom")

    sink = kubectl._ByteSink(explode)
    sink.write(b"a")
    sink.write(b"b")
    assert calls == [b"a"]
    assert isinstance(sink.failure, RuntimeError)
