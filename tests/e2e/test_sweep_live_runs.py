"""Sweeps never touch a live run: while many runs of one user are in flight, other runs of
the same user with `orphan_sweep_min_age: 0` (and `kubectl squarepeg sweep` with it) sweep
the namespace over and over; every run in flight keeps its pod, its whole output and its
exit code. The dangerous moment is a live run's pod just after it finished, before its
run has read the exit code and the last of the log: sweep.py's floor (FINISHED_FLOOR)
keeps the sweep away from it whatever orphan_sweep_min_age says."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.e2e.conftest import Squarepeg

LIVE_RUNS = 16
SWEEPERS = 2


@pytest.mark.kubesim_only("not yet tried on localkube")
def test_sweeps_at_min_age_0_never_touch_a_run_in_flight(
        squarepeg: Squarepeg, tmp_path: Path) -> None:
    config = tmp_path / "min-age-0.yaml"
    config.write_text("orphan_sweep_min_age: 0\n")
    live = [
        squarepeg.start("run", "alpine", "sh", "-c",
                        f"echo start {i}; sleep {1 + i % 3}; echo end {i}; exit {10 + i}")
        for i in range(LIVE_RUNS)
    ]
    stop = threading.Event()
    sweeps: list[int] = []
    problems: list[str] = []

    def sweep_over_and_over(which: int) -> None:
        while not stop.is_set():
            if which == 0:
                done = squarepeg("sweep", "--config", str(config))
                ok = done.code == 0
            else:
                done = squarepeg("run", "--config", str(config), "alpine", "true")
                ok = done.code == 0
            sweeps.append(done.code)
            if not ok:
                problems.append(done.stderr)

    sweepers = [threading.Thread(target=sweep_over_and_over, args=(k % 2,), daemon=True)
                for k in range(SWEEPERS)]
    for thread in sweepers:
        thread.start()
    try:
        finished = [squarepeg.finish(process, timeout=300) for process in live]
    finally:
        stop.set()
        for thread in sweepers:
            thread.join(180)
    assert len(sweeps) >= SWEEPERS, "the sweepers did not sweep while the runs were in flight"
    assert not problems, problems[:3]
    for i, done in enumerate(finished):
        assert (done.code, done.stdout) == (10 + i, f"start {i}\nend {i}\n".encode()), (
            f"run {i}: exit {done.code}, stdout {done.stdout!r}\n{done.stderr}")

