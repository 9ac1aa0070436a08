"""kubectl.HeldStdin: a child's stdin squarepeg writes once, later; no process needed."""

from __future__ import annotations

import os

from kubectl_squarepeg.cluster.kubectl import HeldStdin


def test_release_hands_over_everything_then_end_of_file() -> None:
    held = HeldStdin()
    reader = os.dup(held.read_fd)
    held.started()
    held.release(b'{"kind": "Pod"}')
    with os.fdopen(reader, "rb") as stream:
        assert stream.read() == b'{"kind": "Pod"}'
    held.release(b"again")  # once only: a second release is a no-op


def test_release_to_a_child_that_died_does_not_raise() -> None:
    held = HeldStdin()
    held.started()  # the only read end is gone, as when the child has exited
    held.release(b"x" * 100_000)
