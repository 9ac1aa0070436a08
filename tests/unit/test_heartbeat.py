"""run/heartbeat.py: the renewals' value, their rhythm, and the end on a final refusal."""

from __future__ import annotations

import time

import pytest

from kubectl_squarepeg.cluster import kubectl, verbs
from kubectl_squarepeg.cluster.target import Target
from kubectl_squarepeg.run import heartbeat
from tests.helpers import wait_until


def test_the_value_is_a_utc_time_to_the_second() -> None:
    assert heartbeat.alive_at(0.9) == "1970-01-01T00:00:00Z"
    assert heartbeat.alive_at(1_796_000_000.5) == "2026-11-30T00:53:20Z"


FORBIDDEN = b'Error from server (Forbidden): pods "p" is forbidden'


@pytest.mark.parametrize(("stderr", "beats_on"), [(b"", True), (FORBIDDEN, False)])
def test_renewals_go_on_until_stopped_or_refused_for_good(
    monkeypatch: pytest.MonkeyPatch, stderr: bytes, beats_on: bool
) -> None:
    calls: list[list[str]] = []

    def annotate(target: Target, kind: str, name: str, assignment: str) -> kubectl.Result:
        calls.append([kind, name, assignment])
        return kubectl.Result((), 0 if not stderr else 1, b"", stderr)

    monkeypatch.setattr(verbs, "annotate", annotate)
    beat = heartbeat.Heartbeat(Target(namespace="ns"), "Pod", "p", clock=lambda: 0.0,
                               first=0.01, every=0.01).start()
    try:
        wait_until(lambda: len(calls) >= (3 if beats_on else 1), 5.0, "the renewals",
                   interval=0.01)
        if not beats_on:
            time.sleep(0.1)
            assert len(calls) == 1  # a final refusal ends the heartbeat
    finally:
        beat.stop()
    assert calls[0] == ["Pod", "p", "squarepeg.io/alive-at=1970-01-01T00:00:00Z"]
    assert beat.beats == (len(calls) if beats_on else 0)
