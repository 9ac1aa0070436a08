"""Faults either cluster can make, asserted only by what a user sees.

The node's end of a log stream breaking: kubesim cuts kubectl's connection (kubectl reports
`unexpected EOF`), while the real API server, proxying from its kubelet, ends the stream
cleanly; squarepeg must reconnect either way, resume after the last byte it wrote, and lose
or repeat nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import Squarepeg, needs_the_node_agent, wait_until
from tests.e2e.test_run import COUNTED, counted_output


@needs_the_node_agent("ctl drop-logs: the node's end of a log stream cut on demand, which "
                      "only the node agent makes")
def test_log_streams_cut_at_the_node_twice_lose_and_repeat_nothing(
    squarepeg: Squarepeg, kubesim: Any, tmp_path: Path
) -> None:
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        running = squarepeg.start("run", "--name", "cut", "alpine", "sh", "-c", COUNTED,
                                  stdout=stdout, stderr=stderr)

    def written() -> int:
        return out.stat().st_size

    wait_until(lambda: written() > 0, 30, "the first output")
    kubesim.ctl("drop-logs", "--after-bytes", "500")  # mid-line, a little later
    seen = written()
    wait_until(lambda: written() > seen + 1000, 30, "output after the first cut")
    kubesim.ctl("drop-logs")
    done = squarepeg.finish(running)
    assert done.code == 0, err.read_text()
    assert out.read_bytes() == counted_output()
