"""A run started in the background whose stdout and stderr go to files the test reads while
it runs (node loss, drains, capacity arriving), and its end read back as a `Finished`."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.e2e.conftest import Finished, Squarepeg, wait_until


def start(squarepeg: Squarepeg, tmp_path: Path,
          *args: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """`run ARGS` started, with the paths its stdout and stderr are written to."""
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as sink, err.open("wb") as complaints:
        process = squarepeg.start("run", *args, stdout=sink, stderr=complaints)
    return process, out, err


def finish(squarepeg: Squarepeg, process: subprocess.Popen[bytes], out: Path, err: Path,
           timeout: float) -> Finished:
    done = squarepeg.finish(process, timeout)
    return Finished(done.code, out.read_bytes(), err.read_text(errors="replace"))


def wait_for_up(out: Path) -> None:
    """The container's first line, `up`, in the run's stdout."""
    wait_until(lambda: out.read_bytes() == b"up\n", 120, "the container's first line")


Started = tuple[subprocess.Popen[bytes], Path, Path]


def start_on_node(squarepeg: Squarepeg, tmp_path: Path, node: str,
                  runs: tuple[tuple[str, ...], ...]) -> dict[str, Started]:
    """Each (NAME, MODE, EXTRA...) of `runs` started on `node`, printing `up` then asleep;
    returned once every one of them printed it."""
    started = {}
    for name, mode, *extra in runs:
        (tmp_path / name).mkdir()
        started[name] = start(squarepeg, tmp_path / name, "--name", name, "--mode", mode,
                              *extra, "--node-selector", f"kubernetes.io/hostname={node}",
                              "busybox", "sh", "-c", "echo up; exec sleep 600")
    for _, out, _ in started.values():
        wait_for_up(out)
    return started


def assert_ended_by_the_lost_node(name: str, done: Finished, node: str, bound: float, *,
                                  forced: bool = True) -> None:
    """Run `name` (a Job's when it ends in `job`) ended 125 naming `node` and its bound,
    its pod force-deleted unless kept, its output whole."""
    pod = f"{name}-" if name.endswith("job") else name  # a Job's pod: NAME-XXXXX
    assert done.code == 125, done.stderr
    assert done.has_line(f"error: node {node} of pod {pod}", "stopped answering and did "
                         f"not come back within {bound:g}s", "Ready Unknown",
                         "container main was last seen running"), done.stderr
    assert done.has_line(f"force-deleted pod {pod}",
                         f"its node {node} does not answer") == forced, done.stderr
    assert done.stdout == b"up\n"
