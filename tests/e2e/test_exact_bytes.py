"""`run -i` without `-t` gives the container's exact bytes on the real node: the log, whose
lines containerd stores without the `\\r` before each `\\n`, has them put back from the
attach's copy (run/exactlines.py, docs/decisions/0422-exact-bytes-under-i.md).

kubesim's CRI log keeps every byte of a container without a terminal (only a terminal's
`\\r\\n` is logged as `\\n`, tests/kubesim/process.py), so there these tests pass through the
log alone and show only that nothing else changed; the kubelet node (localkube) is where a
run without the attach's copy would lose the `\\r`s.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Squarepeg
from tests.e2e.test_interactive import attach_served, nothing_left, run_with_input

__all__ = ["attach_served", "nothing_left"]  # fixtures, used by name

pytestmark = pytest.mark.usefixtures("nothing_left", "attach_served")


def test_i_cat_gives_back_every_byte_value_and_crlf_pairs(squarepeg: Squarepeg) -> None:
    data = bytes(range(256)) * 4 + b"a\r\nb\r\n"
    done = run_with_input(squarepeg, data, "-q", "-i", "alpine", "cat")
    assert (done.code, done.stdout) == (0, data), done.stderr


def test_i_crlf_on_stdout_and_stderr_both_arrive_exact(squarepeg: Squarepeg) -> None:
    script = ("cat; printf 'to stderr\\r\\n' >&2; printf 'to stdout\\r\\n'; "
              "printf 'both\\r\\n' >&2; printf 'last\\r\\n'; exit 4")
    done = run_with_input(squarepeg, b"piped in\r\n", "-q", "-i", "alpine", "sh", "-c", script)
    assert done.code == 4, done.stderr
    # The log merges the two streams; lines written in the same instant may come in either
    # order on a real node, so the lines are compared as a set, each with its exact end.
    assert sorted(done.stdout.splitlines(keepends=True)) == sorted(
        [b"piped in\r\n", b"to stderr\r\n", b"to stdout\r\n", b"both\r\n", b"last\r\n"]
    ), done.stderr
    assert "to stderr" not in done.stderr
