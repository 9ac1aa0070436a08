"""splice.Splice: the log until the attach speaks, then the attach, nothing twice."""

from __future__ import annotations

from kubectl_squarepeg.terminal.splice import Splice


def test_the_log_is_shown_until_the_attach_speaks() -> None:
    splice = Splice()
    assert splice.from_log(b"banner\n") == b"banner\n"
    splice.attach_launched()
    assert splice.from_log(b"# ") == b"# "
    assert splice.from_attach(b"ls\r\n") == b"ls\r\n"
    assert splice.from_log(b"ls\r\n") == b""  # the log is not the output any more
    assert splice.from_attach(b"a b\r\n") == b"a b\r\n"


def test_what_the_log_already_showed_of_the_attach_is_skipped() -> None:
    splice = Splice()
    splice.attach_launched()
    assert splice.from_log(b"early\nboth saw this\n") == b"early\nboth saw this\n"
    assert splice.from_attach(b"both saw this\nonly the attach\n") == b"only the attach\n"


def test_nothing_before_the_launch_counts_as_overlap() -> None:
    splice = Splice()
    assert splice.from_log(b"x\n") == b"x\n"
    splice.attach_launched()
    assert splice.from_attach(b"x\n") == b"x\n"
