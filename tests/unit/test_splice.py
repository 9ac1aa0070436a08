"""splice.Splice: the log until the attach speaks, then the attach, nothing twice, with a
raw terminal's line ends; lineends: the conversions both ways, across chunk boundaries."""

from __future__ import annotations

import io

from kubectl_squarepeg.terminal.lineends import LogLineEnds, LogLineEndsOut, RawLineEnds
from kubectl_squarepeg.terminal.splice import JOIN_WAIT_SECONDS, Splice


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_what_no_log_has_waits_for_the_log_then_shows() -> None:
    clock = Clock()
    splice = Splice(clock)
    assert splice.from_log(b"banner\n") == b"banner\r\n"
    splice.attach_launched()
    assert splice.from_attach(b"/ # ") == b""  # a prompt: in no log; the log may be behind
    clock.now += JOIN_WAIT_SECONDS - 0.1
    assert splice.tick() == b""
    clock.now += 0.2
    assert splice.tick() == b"/ # "
    assert splice.from_log(b"ls\n") == b""  # the log is not the output any more
    assert splice.from_attach(b"a b\r\n") == b"a b\r\n"


def test_a_log_behind_the_attach_is_shown_before_it_and_nothing_twice() -> None:
    splice = Splice(Clock())
    splice.attach_launched()
    assert splice.from_attach(b"line 10\r\n") == b""  # came before the log's first line
    assert splice.from_log(b"line 1\n") == b"line 1\r\n"
    assert splice.from_log(b"line 9\nline 10\n") == b"line 9\r\nline 10\r\n"
    assert splice.from_attach(b"line 11\r\n") == b"line 11\r\n"
    assert splice.joined


def test_a_log_ahead_of_the_attach_stays_the_output_until_the_attach_has_more() -> None:
    clock = Clock()
    splice = Splice(clock)
    splice.attach_launched()
    assert splice.from_log(b"line 1\nline 2\nline 3\n") == b"line 1\r\nline 2\r\nline 3\r\n"
    assert splice.from_attach(b"line 2\r\n") == b""
    clock.now += 10  # the log showed it: no wait is over
    assert splice.tick() == b""
    assert splice.from_attach(b"line 3\r\nline 4\r\n") == b"line 4\r\n"


def test_what_the_log_already_showed_of_the_attach_is_skipped() -> None:
    splice = Splice(Clock())
    splice.attach_launched()
    assert splice.from_log(b"early\nboth saw this\n") == b"early\r\nboth saw this\r\n"
    assert splice.from_attach(b"both saw this\r\nonly the attach\r\n") == b"only the attach\r\n"


def test_a_line_logged_with_containerds_line_end_is_not_shown_twice() -> None:
    # The real node: `after\n` in the log, `after\r\n` from the attach (2 runs of 5 showed
    # `after\nafter\r\n` before the log's line ends were the terminal's).
    splice = Splice(Clock())
    assert splice.from_log(b"before\n") == b"before\r\n"
    splice.attach_launched()
    assert splice.from_log(b"after\n") == b"after\r\n"
    assert splice.from_attach(b"after\r\n# ") == b"# "


def test_a_line_end_a_runtime_kept_stays_one() -> None:
    splice = Splice(Clock())
    splice.attach_launched()
    assert splice.from_log(b"kept\r\n") == b"kept\r\n"
    assert splice.from_attach(b"kept\r\nnext\r\n") == b"next\r\n"


def test_nothing_before_the_launch_counts_as_overlap() -> None:
    clock = Clock()
    splice = Splice(clock)
    assert splice.from_log(b"x\n") == b"x\r\n"
    splice.attach_launched()
    assert splice.from_attach(b"x\r\n") == b""
    clock.now += JOIN_WAIT_SECONDS
    assert splice.tick() == b"x\r\n"


def test_raw_line_ends_across_chunks() -> None:
    convert = RawLineEnds()
    shown = b"".join(convert(chunk) for chunk in (b"a\nb\r", b"\nc", b"\r", b"x\n", b"\n"))
    assert shown == b"a\r\nb\r\nc\rx\r\n\r\n"  # a `\r` alone (a progress bar) stays alone


def test_log_line_ends_across_chunks_and_at_the_end() -> None:
    convert = LogLineEnds()
    parts = [convert(chunk) for chunk in (b"a\r\nb\r", b"\nc\r", b"d\r")]
    assert b"".join(parts) + convert.flush() == b"a\nb\nc\rd\r"
    assert parts[1] == b"\nc"  # the `\r` before `d` waited for the next byte


def test_log_line_ends_out_writes_through_and_lets_the_last_cr_go_on_close() -> None:
    sink = io.BytesIO()
    out = LogLineEndsOut(sink)
    assert out.write(b"terminal\r\n50%\r") == len(b"terminal\r\n50%\r")
    out.flush()
    assert sink.getvalue() == b"terminal\n50%"
    out.close()
    assert sink.getvalue() == b"terminal\n50%\r"
