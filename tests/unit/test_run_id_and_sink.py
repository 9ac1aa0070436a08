"""Two small pure pieces of a run: the run id (prepare/prepared.py new_run_id) and the sink
that hands a child's stdout to a callback without ever losing the callback's error
(kubectl._ByteSink).
No process is started."""

from __future__ import annotations

import re

from kubectl_squarepeg.cluster import kubectl
from kubectl_squarepeg.prepare.prepared import new_run_id

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_run_ids_are_random_version_4_uuids() -> None:
    ids = {new_run_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(UUID4.match(run_id) for run_id in ids)


def test_every_chunk_reaches_the_callback_in_order() -> None:
    got: list[bytes] = []
    sink = kubectl._ByteSink(got.append)
    for chunk in (b"one ", b"\xff\x00 ", b"three"):
        sink.write(chunk)
    assert b"".join(got) == b"one \xff\x00 three"
    assert sink.failure is None


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
