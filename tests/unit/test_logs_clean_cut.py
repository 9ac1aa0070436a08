"""A log stream that ends cleanly inside a line's timestamp (the real API server's way of
ending a stream whose node end broke) writes nothing of that timestamp, and the resumed
stream delivers the line whole: found by tests/e2e/test_detached.py on localkube's node."""

from __future__ import annotations

import pytest

from kubectl_squarepeg.run.logdecoder import LogDecoder

LINES = [f"2026-12-04T16:52:01.{n:09d}Z line {n}\n".encode() for n in range(3)]


@pytest.mark.parametrize("cut", [1, 4, 9, 17, 20, 25, 30])
def test_a_clean_end_inside_a_timestamp_writes_none_of_it(cut: int) -> None:
    decoder = LogDecoder()
    first = LINES[0] + LINES[1][:cut]
    written = decoder.feed(first) + decoder.end()
    assert written == b"line 0\n"
    decoder.restart()  # the resumed stream replays the second from its start
    written += decoder.feed(b"".join(LINES)) + decoder.end()
    assert written == b"line 0\nline 1\nline 2\n"


def test_a_clean_end_after_content_still_writes_the_last_partial_line() -> None:
    decoder = LogDecoder()
    assert decoder.feed(LINES[0] + b"2026-12-04T16:52:02Z the end") + decoder.end() == (
        b"line 0\nthe end")
