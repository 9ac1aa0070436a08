"""What a CI pipeline meets beyond a plain run (issue 37): a run stopped at its deadline is
said as a deadline with exit 124, never as the OOM kill its 137 would read as; a run killed
with SIGKILL leaves a resource the next sweep ends once its heartbeat is silent, and a rerun
of its name proceeds once it is ended.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Squarepeg, names, wait_until


@pytest.mark.parametrize("mode", ["pod", "job"])
def test_a_run_past_its_deadline_exits_124_with_a_line_that_says_deadline(
    squarepeg: Squarepeg, tmp_path: Path, mode: str
) -> None:
    config = tmp_path / "deadline.yaml"
    config.write_text("kubernetes:\n  spec:\n    activeDeadlineSeconds: 3\n")
    done = squarepeg(
        "run", "--mode", mode, "--config", str(config), "--stop-timeout", "1",
        "alpine", "sh", "-c", "echo started; sleep 120",
    )
    assert done.code == 124, done.stderr
    assert done.has_line("passed its deadline of 3s"), done.lines
    assert not done.has_line("OOM"), done.lines
    assert done.stdout == b"started\n"


# --- a run killed with SIGKILL (decision 0350) ---------------------------------------------

# A short silence, so that the tests need not wait the default 120 s.
SILENCE_SECONDS = 8
KILLED = ("--stop-timeout", "2", "alpine", "sh", "-c", "echo up; sleep 600")


def alive_at(kubesim: Any, namespace: str, ref: str) -> str:
    done = kubesim.kubectl("get", ref, "-n", namespace, "-o",
                           r"jsonpath={.metadata.annotations.squarepeg\.io/alive-at}")
    return done.stdout.decode() if done.returncode == 0 else ""


def killed_run(squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str,
               name: str) -> None:
    """A run of `name` killed with SIGKILL once its heartbeat has renewed its annotation:
    what a CI runner's hard kill leaves."""
    process = squarepeg.start("run", "--mode", mode, "--name", name, *KILLED)
    ref = f"{mode}/{name}"
    wait_until(lambda: alive_at(kubesim, namespace, ref) != "", 60, "the first heartbeat")
    process.kill()
    process.wait(timeout=30)


def silence_config(tmp_path: Path) -> str:
    config = tmp_path / "silence.yaml"
    config.write_text(f"orphan_sweep_silence: {SILENCE_SECONDS}s\n")
    return str(config)


@pytest.mark.parametrize("mode", ["pod", "job"])
def test_a_killed_runs_resource_is_ended_by_the_next_sweep_once_silent(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path, mode: str
) -> None:
    killed_run(squarepeg, kubesim, namespace, mode, "killed")
    config = silence_config(tmp_path)
    assert names(kubesim, namespace, "jobs" if mode == "job" else "pods")  # still running

    def listed() -> bool:
        dry = squarepeg("sweep", "--dry-run", "--config", config)
        return f"{mode}/killed (silent:" in dry.stderr

    wait_until(listed, SILENCE_SECONDS + 40, "the sweep's dry run to list it")
    swept = squarepeg("sweep", "--config", config)
    assert swept.code == 0, swept.stderr
    assert swept.has_line("deleted", f"{mode}/killed"), swept.lines
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the killed run's resource to go")


@pytest.mark.parametrize("mode", ["pod", "job"])
def test_a_rerun_of_a_killed_runs_name_proceeds_once_the_old_one_is_ended(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path, mode: str
) -> None:
    killed_run(squarepeg, kubesim, namespace, mode, "migrate-42")
    again = squarepeg("run", "--mode", mode, "--config", silence_config(tmp_path),
                      "--name", "migrate-42", "alpine", "echo", "again")
    assert again.code == 0, again.stderr
    assert again.stdout == b"again\n"
    assert again.has_line(f"{mode}/migrate-42", "silent", "deleting it"), again.lines


def test_the_banner_names_the_pod_or_job_a_run_creates(squarepeg: Squarepeg) -> None:
    for mode in ("pod", "job"):
        done = squarepeg("run", "--mode", mode, "--name", f"named-{mode}", "alpine", "true")
        assert done.code == 0, done.stderr
        assert done.has_line(f"squarepeg: {mode}/named-{mode}: using context"), done.lines
    quiet = squarepeg("run", "-q", "alpine", "true")
    assert quiet.code == 0 and quiet.stderr == "", quiet.stderr  # -q: no banner
