"""What a CI pipeline meets beyond a plain run (issue 37): a run stopped at its deadline is
said as a deadline with exit 124, never as the OOM kill its 137 would read as.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Squarepeg


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
