"""exactlines.ExactLines: the log's bytes with the `\\r`s containerd dropped put back from the
attach's copy of each line; what the attach never saw as the log has it; kubectl's own words
never written; bounded waits."""

from __future__ import annotations

import io
import random
import time

import pytest

from kubectl_squarepeg.run.exactlines import WAIT_SECONDS, ExactLines
from kubectl_squarepeg.run.exactout import ExactOut

OUT, ERR = 1, 2


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def as_logged(data: bytes) -> bytes:
    """What containerd's CRI log keeps of a stream: a `\\r` before each `\\n` dropped."""
    return data.replace(b"\r\n", b"\n")


def test_an_attach_ahead_of_the_log_restores_each_crlf_at_once() -> None:
    lines = ExactLines(Clock())
    assert lines.from_attach(b"a\r\nb\n", OUT) == b""
    assert lines.from_log(b"a\nb\n") == b"a\r\nb\n"
    assert lines.restored == 1


def test_a_line_end_waits_for_an_attach_behind_the_log_but_its_bytes_do_not() -> None:
    clock = Clock()
    lines = ExactLines(clock)
    assert lines.from_log(b"progress 50%\r100%\nnext") == b"progress 50%\r100%"
    assert lines.deadline() == 100.0 + WAIT_SECONDS
    assert lines.from_attach(b"progress 50%\r100%\r\n", OUT) == b"\r\nnext"


def test_what_the_attach_never_saw_comes_as_the_log_has_it_after_the_wait() -> None:
    clock = Clock()
    lines = ExactLines(clock)
    assert lines.from_log(b"before the attach\n") == b"before the attach"
    clock.now += WAIT_SECONDS - 0.01
    assert lines.tick() == b""
    clock.now += 0.02
    assert lines.tick() == b"\n"
    assert lines.deadline() is None
    assert lines.from_attach(b"after\r\n", OUT) == b""
    assert lines.from_log(b"after\n") == b"after\r\n"


def test_once_the_attach_has_ended_nothing_waits() -> None:
    lines = ExactLines(Clock())
    lines.from_attach(b"seen\r\n", OUT)
    assert lines.attach_ended() == b""
    assert lines.from_log(b"seen\nunseen\n") == b"seen\r\nunseen\n"
    assert lines.deadline() is None


def test_stderr_lines_match_and_kubectls_own_words_are_never_written() -> None:
    lines = ExactLines(Clock())
    lines.from_attach(b"Warning: kubectl says something\r\nerr 1\r\n", ERR)
    lines.from_attach(b"out 1\r\n", OUT)
    assert lines.from_log(b"out 1\nerr 1\n") == b"out 1\r\nerr 1\r\n"
    assert lines.flush() == b""


def test_chunks_cut_anywhere_give_the_same_bytes() -> None:
    payload = bytes(range(256)) * 4 + b"a\r\nb\r\n\r\n\r\r\nx\r"
    logged = as_logged(payload)
    rng = random.Random(7)
    for _ in range(50):
        lines = ExactLines(Clock())
        out = bytearray()
        log_at = attach_at = 0
        while log_at < len(logged) or attach_at < len(payload):
            if attach_at < len(payload) and (rng.random() < 0.5 or log_at >= len(logged)):
                step = rng.randint(1, 40)
                out += lines.from_attach(payload[attach_at : attach_at + step], OUT)
                attach_at += step
            else:
                step = rng.randint(1, 40)
                out += lines.from_log(logged[log_at : log_at + step])
                log_at += step
        out += lines.flush()
        assert bytes(out) == payload


def test_a_cr_that_is_not_the_one_dropped_is_kept_by_the_log_and_matched() -> None:
    # containerd drops one `\r` before `\n`: `a\r\r\n` is logged `a\r\n`.
    lines = ExactLines(Clock())
    lines.from_attach(b"a\r", OUT)
    lines.from_attach(b"\r", OUT)
    lines.from_attach(b"\n", OUT)
    assert lines.from_log(b"a\r\n") == b"a\r\r\n"


def test_a_line_the_attach_saw_only_in_part_keeps_the_logs_end_and_the_rest_match() -> None:
    clock = Clock()
    lines = ExactLines(clock)
    lines.from_attach(b"tail of a line\r\nwhole\r\n", OUT)  # connected mid-line
    assert lines.from_log(b"head and tail of a line\n") == b"head and tail of a line"
    clock.now += WAIT_SECONDS
    assert lines.tick() == b"\n"
    assert lines.from_log(b"whole\n") == b"whole\r\n"


def test_the_end_decides_every_waiting_line_end_in_order() -> None:
    lines = ExactLines(Clock())
    assert lines.from_log(b"one\ntwo\nthree") == b"one"
    lines.from_attach(b"two\r\n", OUT)
    assert lines.flush() == b"\ntwo\r\nthree"


def test_a_long_line_costs_no_memory_on_either_side() -> None:
    lines = ExactLines(Clock())
    big = b"x" * (1 << 20)
    for _ in range(8):
        lines.from_attach(big, OUT)
        assert lines.from_log(big) == big  # written as it comes: nothing before it waits
    lines.from_attach(b"\r\n", OUT)
    assert lines.from_log(b"\n") == b"\r\n"


class Broken:
    def write(self, data: bytes) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        pass


def test_exactout_writes_a_line_end_once_its_wait_is_over_and_closes_with_the_rest() -> None:
    out = io.BytesIO()
    exact = ExactOut(out)  # type: ignore[arg-type]
    exact.attach_stream(2)(b"Warning: kubectl's own\n")
    exact.write(b"from before the attach\nand a rest")
    assert out.getvalue() == b"from before the attach"
    deadline = time.monotonic() + 10
    while out.getvalue() != b"from before the attach\nand a rest" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert out.getvalue() == b"from before the attach\nand a rest"
    exact.attach_stream(1)(b"seen\r\n")
    exact.write(b"\nseen\n")
    exact.close()
    assert out.getvalue() == b"from before the attach\nand a rest\nseen\r\n"


def test_exactout_hands_a_closed_stdout_to_the_log_followers_next_write() -> None:
    exact = ExactOut(Broken())  # type: ignore[arg-type]
    with pytest.raises(BrokenPipeError):
        exact.write(b"x\n")
    exact.close()
