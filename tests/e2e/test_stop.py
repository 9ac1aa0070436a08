"""`stop` end to end (issue 35): the installed `kubectl-squarepeg` with the real kubectl
against the selected cluster. A PID 1 that traps SIGTERM runs its trap and its own code is
kept; `sleep` as PID 1 ignores SIGTERM and gets SIGKILL after the run's --stop-timeout
(137, within -t plus 10 s); in both the run stays, with its log and its exit code, until
`rm` (decision 0370). After each: no pod, no kubectl."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Squarepeg, names
from tests.helpers import wait_until

TRAPS = ("sh", "-c", "trap 'echo got TERM; exit 7' TERM; echo started; "
         "while true; do sleep 1; done")
# docker's figure for `stop -t 2` of a PID 1 that ignores SIGTERM: the timeout plus a few
# seconds; the bound is 10.
SLEEP_BOUND_SECONDS = 2 + 10


@pytest.fixture(autouse=True)
def nothing_left(squarepeg: Squarepeg, kubesim: Any, namespace: str) -> Iterator[None]:
    yield
    if names(kubesim, namespace):
        kubesim.kubectl("delete", "pods,jobs", "--all", "-n", namespace, "--wait=false",
                        "--cascade=background")
        wait_until(lambda: names(kubesim, namespace) == [], 60, "the leftovers to be gone")


def _status(squarepeg: Squarepeg, name: str) -> dict[str, Any]:
    done = squarepeg("ps", "-a", "--format", "json")
    assert done.code == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    [row] = [r for r in rows if r["Names"] == name]
    return row


def _until_logged(squarepeg: Squarepeg, name: str, text: bytes) -> None:
    wait_until(lambda: text in squarepeg("logs", name).stdout, 120, f"{text!r} in {name}'s log")


@pytest.mark.parametrize("mode", ["pod", "job"])
def test_a_trapping_pid_1_keeps_its_code_and_its_log(
        squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str) -> None:
    job = ("--mode", "job") if mode == "job" else ()
    started = squarepeg("run", "-d", "-q", "--name", "trapper", *job, "alpine", *TRAPS)
    assert started.code == 0, started.stderr
    _until_logged(squarepeg, "trapper", b"started\n")
    stopped = squarepeg("stop", "trapper")
    assert (stopped.code, stopped.stdout, stopped.stderr) == (0, b"trapper\n", "")
    row = _status(squarepeg, "trapper")
    assert row["Status"].startswith("Exited (7)") and row["ExitCode"] == 7, row
    assert squarepeg("wait", "trapper").stdout == b"7\n"
    assert squarepeg("logs", "trapper").stdout == b"started\ngot TERM\n"
    # Stopped is finished: a plain rm takes it, and a second stop has nothing to do.
    again = squarepeg("stop", "trapper")
    assert (again.code, again.stdout) == (0, b"trapper\n"), again.stderr
    assert squarepeg("wait", "trapper").stdout == b"7\n"
    assert squarepeg("rm", "trapper").code == 0
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the run to be gone")


def test_sleep_as_pid_1_is_killed_after_the_stop_timeout(
        squarepeg: Squarepeg, kubesim: Any, namespace: str) -> None:
    started = squarepeg("run", "-d", "-q", "--name", "sleeper", "--stop-timeout", "2",
                        "alpine", "sleep", "600")
    assert started.code == 0, started.stderr
    wait_until(lambda: _status(squarepeg, "sleeper")["Status"].startswith("Up"), 120,
               "the sleeper to run")
    began = time.monotonic()
    stopped = squarepeg("stop", "-t", "2", "sleeper")
    took = time.monotonic() - began
    assert (stopped.code, stopped.stdout) == (0, b"sleeper\n"), stopped.stderr
    assert took < SLEEP_BOUND_SECONDS, took
    row = _status(squarepeg, "sleeper")
    assert row["Status"].startswith("Exited (137)") and row["ExitCode"] == 137, row
    assert squarepeg("wait", "sleeper").stdout == b"137\n"
    assert squarepeg("rm", "sleeper").code == 0
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the run to be gone")


def test_t_other_than_the_stop_timeout_says_so_and_wrong_names_are_125(
        squarepeg: Squarepeg, kubesim: Any, namespace: str) -> None:
    done = squarepeg("stop", "no-such-run")
    assert done.code == 125 and done.stderr.count("\n") == 1, done.stderr
    assert "no squarepeg run named no-such-run" in done.stderr
    done = squarepeg("stop", "-t", "soon", "no-such-run")
    assert done.code == 125 and "-t/--time" in done.stderr, done.stderr
    started = squarepeg("run", "-d", "-q", "--name", "warned", "--stop-timeout", "1",
                        "alpine", *TRAPS)
    assert started.code == 0, started.stderr
    _until_logged(squarepeg, "warned", b"started\n")
    stopped = squarepeg("stop", "-t", "5", "warned")
    assert (stopped.code, stopped.stdout) == (0, b"warned\n"), stopped.stderr
    assert "SIGKILL 1s after SIGTERM, its --stop-timeout, not -t 5" in stopped.stderr
    assert squarepeg("wait", "warned").stdout == b"7\n"
    assert squarepeg("rm", "warned").code == 0
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the run to be gone")
