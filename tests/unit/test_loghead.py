"""loghead: the kubelet's listing of a container's log files, a CRI line's timestamp, and the
first line's timestamp the log decoder keeps for the head check, in any chunking."""

from __future__ import annotations

import pytest

from kubectl_squarepeg.run.logdecoder import LogDecoder
from kubectl_squarepeg.run.loghead import first_entry_stamp, rotated_files, stamp_nanos

# What Go's http.FileServer lists for a directory, as the kubelet's /logs/ serves it.
LISTING = """<!doctype html>
<meta name="viewport" content="width=device-width">
<pre>
<a href="0.log">0.log</a>
<a href="0.log.20261206-040126">0.log.20261206-040126</a>
<a href="0.log.20261206-040116.gz">0.log.20261206-040116.gz</a>
<a href="1.log.20261206-035959">1.log.20261206-035959</a>
<a href="0.log.20261206-040136.tmp">0.log.20261206-040136.tmp</a>
</pre>
"""


def test_rotated_files_are_the_runs_own_oldest_first() -> None:
    assert rotated_files(LISTING) == ["0.log.20261206-040116.gz", "0.log.20261206-040126"]
    assert rotated_files(LISTING, restart=1) == ["1.log.20261206-035959"]


def test_a_listing_without_rotation_has_none() -> None:
    assert rotated_files('<pre>\n<a href="0.log">0.log</a>\n</pre>\n') == []
    assert rotated_files("404 page not found\n") == []


def test_escaped_hrefs_are_read_as_names() -> None:
    listing = '<a href="0.log.20261206-040116%2egz">x</a>\n<a href="0.log.20261206-040117&#46;gz">'
    assert rotated_files(listing) == ["0.log.20261206-040116.gz", "0.log.20261206-040117.gz"]


@pytest.mark.parametrize(("stamp", "nanos"), [
    (b"1970-01-01T00:00:01Z", 1_000_000_000),
    (b"1970-01-01T00:00:01.5Z", 1_500_000_000),
    (b"1970-01-01T00:00:01.000000007Z", 1_000_000_007),
    (b"1970-01-01T01:00:01.25+01:00", 1_250_000_000),
    (b"1969-12-31T23:30:01-00:30", 1_000_000_000),
])
def test_stamps_compare_as_instants_whatever_their_zone(stamp: bytes, nanos: int) -> None:
    assert stamp_nanos(stamp) == nanos


@pytest.mark.parametrize("text", [b"", b"stdout", b"2026-12-06T04:01:16", b"2026-12-06 04:01:16Z",
                                  b"2026-12-06T04:01:16.1234567890Z"])
def test_what_is_not_a_stamp_has_no_instant(text: bytes) -> None:
    assert stamp_nanos(text) is None


def test_the_first_entry_of_a_cri_file() -> None:
    data = b"2026-12-06T04:01:16.000000001Z stdout F 1\n2026-12-06T04:01:16.2Z stdout F 2\n"
    assert first_entry_stamp(data) == b"2026-12-06T04:01:16.000000001Z"
    assert first_entry_stamp(b"2026-12-06T04:01:16.1Z stdout P a long li") == \
        b"2026-12-06T04:01:16.1Z"
    assert first_entry_stamp(b"2026-12-06T04:01") is None  # not yet arrived
    assert first_entry_stamp(b"<html>\n404 page") is None


def test_the_decoder_keeps_the_first_lines_stamp_in_any_chunking() -> None:
    stream = b"".join(b"2026-12-02T19:00:%02d.%09dZ line %d\n" % (i // 50, i, i)
                      for i in range(400))
    for size in (1, 7, 4096, 5000, len(stream)):
        decoder = LogDecoder()
        assert decoder.first_timestamp == b""
        for start in range(0, len(stream), size):
            decoder.feed(stream[start : start + size])
        assert decoder.first_timestamp == b"2026-12-02T19:00:00.000000000Z", size


def test_the_first_stamp_stays_that_of_the_first_stream() -> None:
    decoder = LogDecoder()
    decoder.feed(b"2026-12-02T19:00:00.1Z a\n")
    decoder.restart(after_cut=True)
    decoder.feed(b"2026-12-02T19:00:00.1Z a\n2026-12-02T19:00:01.1Z b\n")
    assert decoder.first_timestamp == b"2026-12-02T19:00:00.1Z"
