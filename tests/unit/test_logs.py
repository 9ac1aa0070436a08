"""logdecoder, logstream, logcheck, logs: the timestamp decoder and its replay dedupe in any
chunking, and the follower's reconnect, backoff, give-up and drain decisions against scripted
kubectl streams."""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest

from kubectl_squarepeg.cluster import kubectl
from kubectl_squarepeg.cluster.verbs import log_request
from kubectl_squarepeg.run import logdecoder
from kubectl_squarepeg.run.logdecoder import LogDecoder, ResumePoint
from kubectl_squarepeg.run.logs import LogFollower
from kubectl_squarepeg.run.logstream import Backoff, retryable
from kubectl_squarepeg.terminal.console import Console
from tests.helpers import wait_until


def ts(second: int, nanos: int) -> bytes:
    return b"2026-12-02T19:00:%02d.%09dZ" % (second, nanos)


Line = tuple[bytes, bytes]

SAMPLE: list[Line] = [
    (ts(0, 1), b"first line\n"),
    (ts(0, 1), b"same timestamp\n"),
    (ts(0, 1), b"and again\n"),
    (ts(0, 500), b"\x1b[31mred\x1b[0m\n"),
    (ts(1, 0), b"progress 10%\rprogress 50%\rprogress 100%\n"),
    (ts(1, 7), b"\x00\xff\xfe binary \x80 \xc3\x28\n"),
    (ts(1, 9), b"\n"),
    (ts(1, 9), b"  spaces 2026-12-02T19:00:00.000000000Z not a timestamp  \n"),
    (ts(3, 0), b"last second\n"),
    (ts(3, 0), b"no final newline"),
]
LONG_SAMPLE: list[Line] = [
    (ts(0, 1), b"before\n"),
    (ts(0, 2), b"L" * 40000 + b"\rtail\n"),  # > 16 KiB: still one timestamp
    (ts(0, 2), b"after\n"),
]


def render(lines: Sequence[Line], since: str | None = None) -> bytes:
    """What the server sends for `--timestamps [--since-time=since]`."""
    keep = [(t, c) for t, c in lines if since is None or t[:19] >= since[:19].encode()]
    return b"".join(t + b" " + c for t, c in keep)


def content(lines: Sequence[Line]) -> bytes:
    return b"".join(c for _, c in lines)


def decode(chunks: Sequence[bytes], decoder: LogDecoder | None = None) -> bytes:
    decoder = decoder or LogDecoder()
    return b"".join(decoder.feed(chunk) for chunk in chunks)


# --- the decoder, one stream


@pytest.mark.parametrize("sample", [SAMPLE, LONG_SAMPLE], ids=["sample", "long"])
def test_every_split_point(sample: list[Line]) -> None:
    data = render(sample)
    for cut in range(len(data) + 1):
        assert decode([data[:cut], data[cut:]]) == content(sample), cut


def test_one_byte_chunks() -> None:
    data = render(SAMPLE)
    assert decode([data[i : i + 1] for i in range(len(data))]) == content(SAMPLE)


def test_partial_line_written_as_soon_as_it_arrives() -> None:
    decoder = LogDecoder()
    assert decoder.feed(ts(0, 1) + b" 10%\r") == b"10%\r"
    assert decoder.feed(b"50%\r") == b"50%\r"
    assert decoder.feed(b"done\n" + ts(0, 2)) == b"done\n"
    assert decoder.feed(b" next") == b"next"


def test_resume_point_counts_lines_per_second() -> None:
    decoder = LogDecoder()
    decoder.feed(render(SAMPLE[:3]))
    assert decoder.resume == ResumePoint(ts(0, 1), 3, None)
    decoder.feed(render(SAMPLE[3:5]))
    assert decoder.resume == ResumePoint(ts(1, 0), 1, None)
    decoder.feed(render(SAMPLE[5:9]) + ts(3, 0) + b" no final")
    assert decoder.resume == ResumePoint(ts(3, 0), 2, len(b"no final"))
    assert decoder.resume.since_time() == "2026-12-02T19:00:03Z"
    assert LogDecoder().resume.since_time() is None


def test_trimmed_fraction_digits_are_timestamps() -> None:
    # Go's RFC3339Nano drops trailing zeros, down to no fraction at all.
    data = b"2026-12-02T19:00:01.5Z a\n2026-12-02T19:00:01Z b\n"
    decoder = LogDecoder()
    assert decoder.feed(data) == b"a\nb\n"
    assert decoder.resume == ResumePoint(b"2026-12-02T19:00:01Z", 2, None)


@pytest.mark.parametrize(
    "data",
    [
        b"no timestamp here\nnor here\n",
        b"x" * 100 + b"\n",
        b"nospace-at-all-in-a-very-long-first-line-without-any-break\n",
        b"\n\n",
    ],
)
def test_lines_without_timestamp_are_the_servers_words_not_output(data: bytes) -> None:
    for cut in range(len(data) + 1):
        decoder = LogDecoder()
        assert decode([data[:cut], data[cut:]], decoder) == b"", cut
        assert decoder.end() == b""
        assert decoder.take_refusal() == (" ".join(data.decode().split()) or None), cut


def test_a_clean_end_does_not_write_a_held_line_start() -> None:
    decoder = LogDecoder()
    assert decoder.feed(b"short") == b""  # it could still become a timestamp
    assert decoder.end() == b""
    assert decoder.take_refusal() == "short"
    assert decoder.take_refusal() is None


KUBELET_ERROR = (
    b'failed to try resolving symlinks in path "/var/log/pods/default_p_1/main/0.log": '
    b"lstat /var/log/pods/default_p_1: no such file or directory"
)


def test_the_kubelets_error_in_a_clean_body_is_retried_not_written() -> None:
    # Seen on the real node: kubectl exits 0, the body is the kubelet's error.
    logs, _fake, out, err = follower(
        [Script([render(SAMPLE[:2])], 0), Script([KUBELET_ERROR], 0), Script([render(SAMPLE)], 0)]
    )
    logs.finish(0)
    logs.start()
    assert logs.join(30.0) is True
    assert out.getvalue() == content(SAMPLE)
    assert "no such file or directory); will retry" in err.getvalue()
    assert logs.lost is None


# --- the decoder's bulk path: whole lines of a big chunk at once

BIG_SAMPLE: list[Line] = [
    *[(ts(second, milli), b"line %d.%03d of a busy second\n" % (second, milli))
      for second in (0, 1, 2) for milli in range(0, 1000, 3)],
    (ts(2, 999), b"  2026-12-02T19:00:00Z the app's own timestamp\n"),
    (ts(3, 0), b"\x00\xff binary \r progress\n"),
    *[(ts(3, milli), b"x" * 90 + b"\n") for milli in range(1, 200)],
    (ts(4, 0), b"no final newline"),
]


def test_big_chunks_decode_as_line_by_line_does() -> None:
    data = render(BIG_SAMPLE)
    assert len(data) > 20 * logdecoder._BULK_MIN_BYTES
    for size in (4096, 5000, 65536, len(data)):
        decoder = LogDecoder()
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert decode(chunks, decoder) == content(BIG_SAMPLE), size
        assert decoder.resume == ResumePoint(ts(4, 0), 1, len(b"no final newline"))


def test_the_bulk_path_keeps_the_resume_point_of_a_busy_second() -> None:
    whole = [line for line in BIG_SAMPLE if line[0][:19] < ts(3, 0)[:19]]
    decoder = LogDecoder()
    decoder.feed(render(whole))
    assert decoder.resume == ResumePoint(ts(2, 999), len([1 for t, _ in whole
                                                          if t[:19] == ts(2, 0)[:19]]))


def test_a_drop_in_a_big_chunk_replays_exactly() -> None:
    data = render(BIG_SAMPLE)
    for cut in range(0, len(data), 997):
        decoder = LogDecoder()
        written = decoder.feed(data[:cut])
        written += decoder.feed(replay_after(decoder, BIG_SAMPLE))
        assert written == content(BIG_SAMPLE), cut


def test_seconds_out_of_order_fall_back_to_line_by_line() -> None:
    lines = [(ts(0, 1), b"a\n"), (ts(1, 1), b"b\n"), (ts(0, 2), b"c\n")] * 400
    decoder = LogDecoder()
    assert decoder.feed(render(lines)) == content(lines)
    assert decoder.resume.lines_in_second == 1  # counted as the line-by-line path does


# --- the decoder, across a drop


def replay_after(decoder: LogDecoder, lines: Sequence[Line]) -> bytes:
    decoder.restart()
    return render(lines, decoder.resume.since_time())


@pytest.mark.parametrize("sample", [SAMPLE, LONG_SAMPLE], ids=["sample", "long"])
def test_drop_at_every_byte_then_replay(sample: list[Line]) -> None:
    data = render(sample)
    for cut in range(len(data) + 1):
        decoder = LogDecoder()
        written = decoder.feed(data[:cut])
        written += decoder.feed(replay_after(decoder, sample))
        assert written == content(sample), cut


def test_two_drops_at_every_pair_of_offsets() -> None:
    data = render(SAMPLE)
    for first in range(0, len(data) + 1, 3):
        decoder = LogDecoder()
        written = decoder.feed(data[:first])
        again = replay_after(decoder, SAMPLE)
        for second in range(len(again) + 1):
            twice = LogDecoder()
            out = twice.feed(data[:first])
            out += twice.feed(replay_after(twice, SAMPLE)[:second])
            out += twice.feed(replay_after(twice, SAMPLE))
            assert out == content(SAMPLE), (first, second)
        assert written + decoder.feed(again) == content(SAMPLE)


def test_replay_in_any_chunking() -> None:
    data = render(SAMPLE)
    cut = data.index(b"progress 50%")  # mid-line, in the second of the progress bar
    for size in (1, 2, 5, 17, 1000):
        decoder = LogDecoder()
        written = decoder.feed(data[:cut])
        replay = replay_after(decoder, SAMPLE)
        written += decode([replay[i : i + size] for i in range(0, len(replay), size)], decoder)
        assert written == content(SAMPLE), size


def test_identical_timestamps_are_counted_not_collapsed() -> None:
    same = [(ts(5, 0), b"%d\n" % i) for i in range(6)]
    data = render(same)
    decoder = LogDecoder()
    first = decoder.feed(data[: data.index(b"3\n")])  # lines 0-2 whole, line 3 not begun
    assert first == b"0\n1\n2\n"
    assert decoder.resume == ResumePoint(ts(5, 0), 4, 0)
    assert first + decoder.feed(replay_after(decoder, same)) == content(same)


def test_drop_during_timestamp_keeps_resume_point() -> None:
    decoder = LogDecoder()
    decoder.feed(render(SAMPLE[:2]) + ts(0, 1)[:12])
    assert decoder.resume == ResumePoint(ts(0, 1), 2, None)


# --- the follower against scripted streams


@dataclass
class Script:
    chunks: list[bytes] = field(default_factory=list)
    code: int | None = 0  # None: runs until terminated
    stderr: bytes = b""


class FakeStream:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.stderr = script.stderr
        self.terminated = threading.Event()

    def wait(self, timeout: float | None = None) -> int | None:
        if self.script.code is not None:
            return self.script.code
        return -15 if self.terminated.wait(timeout) else None

    def terminate(self) -> None:
        self.terminated.set()


class FakeKubectl:
    """Stands in for kubectl.start: each connect plays the next script."""

    def __init__(self, scripts: list[Script], last_line: bytes = b"") -> None:
        self.scripts = scripts
        self.calls: list[list[str]] = []
        self.streams: list[FakeStream] = []
        self.last_line = last_line  # the answer to the cheap check (tailLines=1)
        self.probes = 0

    def __call__(self, args: Sequence[str], on_stdout: Callable[[bytes], None]) -> FakeStream:
        if "tailLines=1" in args[-1]:
            self.probes += 1
            if self.last_line:
                on_stdout(self.last_line)
            return FakeStream(Script(code=0))
        self.calls.append(list(args))
        if self.scripts:
            script = self.scripts.pop(0)
        elif "follow=false" in args[-1]:
            script = Script(code=0)  # a plain read once the container ended: nothing newer
        else:
            script = Script(code=None)
        for chunk in script.chunks:
            on_stdout(chunk)
        stream = FakeStream(script)
        self.streams.append(stream)
        return stream


FAST = Backoff(attempts=5, first_seconds=0.001, max_seconds=0.004, stable_seconds=1000)
TARGET = kubectl.Target(context="kubesim", namespace="ns")
# What `kubectl logs -f --timestamps p -c main [--since-time=T]` requests, through get --raw.
BASE = ["get", "--raw",
        "/api/v1/namespaces/ns/pods/p/log?container=main&follow=true&timestamps=true"]


def resumed(since: str) -> list[str]:
    """BASE from `since`, a whole second as the API takes it (its colons escaped)."""
    return [*BASE[:2], f"{BASE[2]}&sinceTime={since.replace(':', '%3A')}"]


def checked(since: str) -> list[str]:
    """The plain read (no follow) from `since` that makes sure nothing came after."""
    request = resumed(since)
    return [*request[:2], request[2].replace("follow=true", "follow=false")]


def either(calls: list[list[str]]) -> list[list[str]]:
    """The requests with follow or not alike: whether the container's end was known when a
    request was sent is a race in these tests."""
    return [[arg.replace("follow=false", "follow=true") for arg in call] for call in calls]


LAST = "2026-12-02T19:00:03Z"  # the second of SAMPLE's last line
EOF_ERROR = b"error: unexpected EOF\n"
GIVE_UP = (
    "squarepeg: warning: lost the log stream of pod p ({}); its output may be incomplete: "
    "see all of it with `kubectl logs p -c main --context=kubesim --namespace=ns`\n"
)


def follower(
    scripts: list[Script], out: io.BytesIO | None = None, backoff: Backoff = FAST
) -> tuple[LogFollower, FakeKubectl, io.BytesIO, io.StringIO]:
    fake = FakeKubectl(scripts)
    out = out if out is not None else io.BytesIO()
    err = io.StringIO()
    logs = LogFollower(TARGET, "p", "main", out, Console(err), backoff=backoff, start=fake)
    return logs, fake, out, err


REFUSED = b"The connection to the server 127.0.0.1:6443 was refused\n"
REFUSED_REASON = "The connection to the server 127.0.0.1:6443 was refused"


def retry_line(reason: str, delay: str, attempt: int) -> str:
    return (
        f"squarepeg: the log stream of pod p dropped ({reason}); will retry in {delay}s "
        f"(attempt {attempt} of 5)\n"
    )


def test_follower_reconnects_twice_and_writes_everything_once() -> None:
    data = render(SAMPLE)
    cut1, cut2 = data.index(b"red"), data.index(b"50%")
    again = render(SAMPLE, "2026-12-02T19:00:00Z")
    third = render(SAMPLE, "2026-12-02T19:00:01Z")
    scripts = [
        Script([data[:cut1]], 1, EOF_ERROR),
        Script([again[:10], again[10 : again.index(b"50%")]], 1, EOF_ERROR),
        Script([third], 0),
    ]
    logs, fake, out, err = follower(scripts)
    logs.start()
    assert logs.finish(30.0) is True
    assert logs.join(10.0) is True
    assert out.getvalue() == content(SAMPLE)
    assert cut2 > cut1
    assert either(fake.calls) == [
        BASE,
        resumed("2026-12-02T19:00:00Z"),
        resumed("2026-12-02T19:00:01Z"),
        resumed(LAST),
    ]
    assert fake.calls[-1] == checked(LAST)
    # The second drop made progress (it wrote new bytes), so its attempt count restarts.
    assert err.getvalue() == retry_line("unexpected EOF", "0.001", 1) * 2
    assert (logs.gave_up, logs.error) == (False, None)


SUSPENDED = (
    "squarepeg: warning: the log stream of pod p dropped and 5 reconnects failed ({}); the "
    "rest of the output will be fetched once the container has ended, before anything is "
    "deleted\n"
)


def test_used_up_reconnects_wait_for_the_end_then_fetch_the_rest() -> None:
    data = render(SAMPLE)
    cut = data.index(b"red")
    scripts = [Script([data[:cut]], 1, EOF_ERROR)]
    scripts += [Script([], 1, REFUSED) for _ in range(5)]
    scripts += [Script([render(SAMPLE, "2026-12-02T19:00:00Z")], 0)]
    logs, fake, out, err = follower(scripts)
    logs.start()
    assert logs.join(30.0) is True  # suspended: nothing more until the container ends
    assert len(fake.calls) == 6
    assert err.getvalue().endswith(SUSPENDED.format(REFUSED_REASON))
    assert logs.finish(30.0) is True
    assert out.getvalue() == content(SAMPLE)
    assert fake.calls[-2:] == [checked("2026-12-02T19:00:00Z"), checked(LAST)]
    assert (logs.gave_up, logs.error) == (False, None)


def test_a_silent_node_uses_the_reconnects_up_quietly_and_its_return_resumes_them() -> None:
    # run/nodeloss.py has said that the node stopped answering: the used-up reconnects are
    # no news; once the node answers again the stream goes on at once, not at the end.
    data = render(SAMPLE)
    cut = data.index(b"red")
    scripts = [Script([data[:cut]], 1, EOF_ERROR)]
    scripts += [Script([], 1, REFUSED) for _ in range(5)]
    scripts += [Script([render(SAMPLE, "2026-12-02T19:00:00Z")], 0)]
    logs, fake, out, err = follower(scripts)
    logs.node_silent("node-2")
    logs.start()
    assert logs.join(30.0) is True  # suspended
    assert "reconnects failed" not in err.getvalue()
    logs.node_silent(None)
    wait = threading.Event()
    for _ in range(500):
        if out.getvalue() == content(SAMPLE):
            break
        wait.wait(0.01)
    assert out.getvalue() == content(SAMPLE)  # before the container's end
    assert fake.calls[6] == resumed("2026-12-02T19:00:00Z")  # a follow, not a final read
    assert logs.finish(30.0) is True
    assert out.getvalue() == content(SAMPLE)


def test_after_the_end_the_follower_retries_until_the_deadline_then_gives_up() -> None:
    scripts = [Script([render(SAMPLE[:1])], 1, EOF_ERROR)]
    scripts += [Script([], 1, b"error: unexpected EOF\n") for _ in range(10_000)]
    logs, fake, out, err = follower(scripts)
    logs.start()
    assert logs.join(30.0) is True  # suspended after the first round
    assert len(fake.calls) == 6
    assert logs.finish(0.5) is False
    assert out.getvalue() == b"first line\n"
    assert len(fake.calls) > 6 + 5 + 5  # not counted after the end: on until the deadline
    delays = ["0.001", "0.002", "0.004", "0.004", "0.004"]
    rounds = "".join(retry_line("unexpected EOF", d, i + 1) for i, d in enumerate(delays))
    beyond = (
        "squarepeg: the log stream of pod p dropped (unexpected EOF); will retry in 0.004s "
        "(attempt 6; the container has ended: until the drain deadline)\n"
    )
    reason = "nothing new came for 0.5s after the container's end; the last drop: unexpected EOF"
    assert err.getvalue().startswith(rounds + SUSPENDED.format("unexpected EOF") + rounds + beyond)
    assert err.getvalue().endswith(GIVE_UP.format(reason))
    assert (logs.gave_up, logs.error) == (True, reason)


def test_cuts_inside_every_replay_after_the_end_do_not_cost_the_output() -> None:
    # Each resumed stream is cut before it brings anything new; the 9th one gets through.
    data = render(SAMPLE)
    cut = data.index(b"red")
    replay = render(SAMPLE, "2026-12-02T19:00:00Z")
    scripts = [Script([data[:cut]], 1, EOF_ERROR)]
    scripts += [Script([replay[:5]], 1, EOF_ERROR) for _ in range(8)]
    scripts += [Script([replay], 0)]
    logs, fake, out, _ = follower(scripts)
    logs.finish(0)  # the container ended before the first cut
    logs.start()
    assert logs.join(30.0) is True
    assert out.getvalue() == content(SAMPLE)
    assert len(fake.calls) == 11  # and the last read, which found nothing newer
    assert fake.calls[1:] == [checked("2026-12-02T19:00:00Z")] * 9 + [checked(LAST)]
    assert (logs.gave_up, logs.error) == (False, None)


def test_follower_retries_a_container_waiting_to_start() -> None:
    waiting = b'error: container "main" in pod "p" is waiting to start: ContainerCreating\n'
    logs, fake, out, err = follower([Script([], 1, waiting), Script([render(SAMPLE)], 0)])
    logs.start()
    assert logs.finish(30.0) is True
    assert out.getvalue() == content(SAMPLE)
    assert either(fake.calls) == [BASE, BASE, resumed(LAST)]
    reason = 'container "main" in pod "p" is waiting to start: ContainerCreating'
    assert err.getvalue() == retry_line(reason, "0.001", 1)


def test_follower_gives_up_at_once_when_retrying_cannot_help() -> None:
    forbidden = (
        b'Error from server (Forbidden): pods "p" is forbidden: User "alice" cannot get '
        b'resource "pods/log" in the namespace "ns"\n'
    )
    logs, fake, _, err = follower([Script([], 1, forbidden)])
    logs.start()
    assert logs.join(30.0) is True
    reason = '(Forbidden): pods "p" is forbidden: User "alice" cannot get resource "pods/log"' \
        ' in the namespace "ns"'
    assert err.getvalue() == GIVE_UP.format(reason)
    assert len(fake.calls) == 1


def test_retryable() -> None:
    assert retryable("unexpected EOF")
    assert retryable('container "main" in pod "p" is waiting to start: ContainerCreating')
    assert retryable("The connection to the server 127.0.0.1:1 was refused")
    assert not retryable('pods "p" not found')
    assert not retryable("Unauthorized")


def test_a_clean_end_before_finish_waits_for_finish_not_a_reconnect() -> None:
    slow = Backoff(attempts=5, first_seconds=30.0, max_seconds=30.0, stable_seconds=1000)
    logs, fake, out, err = follower([Script([render(SAMPLE)], 0)], backoff=slow)
    logs.start()
    assert logs.join(0.2) is False  # ended cleanly, waiting for finish() before any retry
    assert logs.finish(30.0) is True
    assert logs.join(0) is True
    assert (out.getvalue(), err.getvalue()) == (content(SAMPLE), "")
    assert fake.calls == [BASE, checked(LAST)]  # the stream, then a read that found no more


def test_a_clean_end_before_the_container_ended_is_resumed() -> None:
    data = render(SAMPLE)
    cut = data.index(b"binary")
    rest = render(SAMPLE, "2026-12-02T19:00:01Z")
    logs, fake, out, err = follower([Script([data[:cut]], 0), Script([rest], None)])
    logs.start()

    def caught_up() -> bool:
        return len(fake.calls) == 2 and out.getvalue() == content(SAMPLE)

    wait_until(caught_up, 5.0, "the resumed stream to catch up", interval=0.01)
    assert err.getvalue() == ""  # no "will retry" for a clean end
    logs.stop()
    assert logs.join(30.0) is True
    assert fake.streams[1].terminated.is_set()
    assert fake.calls[1] == resumed("2026-12-02T19:00:01Z")


def test_clean_ends_that_use_up_the_attempts_wait_quietly_for_the_end() -> None:
    # Seen on a real API server restarting under load: the resumed streams kept ending
    # cleanly (nothing was lost) while the runner's watch had not seen the end yet.
    data = render(SAMPLE)
    cut = data.index(b"binary")
    rest = render(SAMPLE, "2026-12-02T19:00:01Z")
    scripts = [Script([data[:cut]], 0)] + [Script([], 0) for _ in range(5)]
    scripts += [Script([rest], 0)]
    logs, fake, out, err = follower(scripts)
    logs.start()
    assert logs.join(30.0) is True  # suspended: waits for the container's end
    assert len(fake.calls) == 6 and err.getvalue() == ""
    assert logs.finish(30.0) is True
    assert out.getvalue() == content(SAMPLE)
    assert (logs.gave_up, logs.error, err.getvalue()) == (False, None, "")


def test_stop_ends_the_stream_without_complaint() -> None:
    logs, fake, out, err = follower([Script([render(SAMPLE[:2])], None)])
    logs.start()
    wait_until(lambda: out.getvalue() == b"first line\nsame timestamp\n", 5.0,
               "the first two lines", interval=0.01)
    logs.stop()
    assert logs.join(30.0) is True
    assert fake.streams[0].terminated.is_set()
    assert (err.getvalue(), logs.gave_up) == ("", False)


def test_finish_deadline_stops_the_stream_and_says_output_may_be_incomplete() -> None:
    logs, fake, _, err = follower([Script([render(SAMPLE[:1])], None)])
    logs.start()
    assert logs.finish(0.3) is False
    assert fake.streams[0].terminated.is_set()
    assert logs.join(0) is True
    reason = "nothing new came for 0.3s after the container's end"
    assert err.getvalue() == GIVE_UP.format(reason)


class TricklingStream(FakeStream):
    """Ends cleanly (0) once its lines are sent, or killed (-15) when terminated first."""

    def __init__(self) -> None:
        super().__init__(Script(code=None))
        self.ended = threading.Event()

    def wait(self, timeout: float | None = None) -> int | None:
        if not self.ended.wait(timeout):
            return None
        return -15 if self.terminated.is_set() else 0

    def terminate(self) -> None:
        self.terminated.set()
        self.ended.set()


class TricklingKubectl:
    """A log stream that goes on bringing a new line every `every` seconds, `lines` of them
    (None: for ever), then ends cleanly: a big log served slowly after the container's end.
    The plain read that follows brings nothing newer."""

    def __init__(self, lines: int | None, every: float) -> None:
        self.lines, self.every = lines, every
        self.streams: list[FakeStream] = []

    def __call__(self, args: Sequence[str], on_stdout: Callable[[bytes], None]) -> FakeStream:
        if self.streams:
            stream: FakeStream = FakeStream(Script(code=0))
            self.streams.append(stream)
            return stream
        trickling = TricklingStream()
        self.streams.append(trickling)

        def trickle() -> None:
            sent = 0
            while self.lines is None or sent < self.lines:
                if trickling.terminated.wait(self.every):
                    return
                on_stdout(ts(sent // 1000, sent % 1000 + 1) + b" line %d\n" % sent)
                sent += 1
            trickling.ended.set()

        threading.Thread(target=trickle, daemon=True).start()
        return trickling


def trickled(lines: int) -> bytes:
    return b"".join(b"line %d\n" % n for n in range(lines))


def test_finish_waits_past_the_quiet_time_while_new_output_comes() -> None:
    # 25 lines, 0.1 s apart: 2.5 s in all, two and a half times the quiet time.
    fake = TricklingKubectl(lines=25, every=0.1)
    out, err = io.BytesIO(), io.StringIO()
    logs = LogFollower(TARGET, "p", "main", out, Console(err), backoff=FAST, start=fake)
    logs.start()
    assert logs.finish(1.0, 30.0) is True
    assert out.getvalue() == trickled(25)
    assert (logs.gave_up, err.getvalue()) == (False, "")


class SlowReaderOut(io.BytesIO):
    """stdout read slowly (`| less`): every write blocks for `seconds`."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def write(self, data: object) -> int:
        threading.Event().wait(self.seconds)
        return super().write(data)  # type: ignore[arg-type]


def test_time_blocked_on_a_slow_reader_counts_for_neither_limit() -> None:
    # Each write blocks longer than the quiet time, and all of them longer than the limit.
    fake = TricklingKubectl(lines=6, every=0.01)
    out, err = SlowReaderOut(0.4), io.StringIO()
    logs = LogFollower(TARGET, "p", "main", out, Console(err), backoff=FAST, start=fake)
    logs.start()
    assert logs.finish(0.3, 1.0) is True
    assert out.getvalue() == trickled(6)
    assert (logs.gave_up, err.getvalue()) == (False, "")


def test_finish_gives_up_at_the_limit_even_while_output_comes() -> None:
    fake = TricklingKubectl(lines=None, every=0.02)
    out, err = io.BytesIO(), io.StringIO()
    logs = LogFollower(TARGET, "p", "main", out, Console(err), backoff=FAST, start=fake)
    logs.start()
    began = time.monotonic()
    assert logs.finish(0.3, 0.8) is False
    assert 0.8 <= time.monotonic() - began < 5.0
    assert fake.streams[0].terminated.is_set()
    reason = "the stream did not end within 0.8s of the container's end"
    assert err.getvalue() == GIVE_UP.format(reason)
    assert out.getvalue().startswith(trickled(5))


class BrokenOut(io.BytesIO):
    def write(self, data: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_stdout_closed_by_its_reader_stops_the_stream_without_blame() -> None:
    logs, fake, _, err = follower([Script([render(SAMPLE[:1])], None)], out=BrokenOut())
    logs.start()
    assert logs.join(30.0) is True
    assert fake.streams[0].terminated.is_set()
    assert err.getvalue() == ""
    assert (logs.reader_gone, logs.gave_up) == (True, False)


class FullDisk(io.BytesIO):
    def write(self, data: object) -> int:
        raise OSError(28, "No space left on device")


def test_a_stdout_that_fails_otherwise_is_reported() -> None:
    logs, _, _, err = follower([Script([render(SAMPLE[:1])], None)], out=FullDisk())
    logs.start()
    assert logs.join(30.0) is True
    assert err.getvalue() == GIVE_UP.format(
        "cannot write to stdout ([Errno 28] No space left on device)"
    )


def test_a_stream_that_stayed_up_counts_as_progress() -> None:
    ticks = iter(range(0, 10000, 20))  # every look at the clock: 20 s later
    scripts = [Script([], 1, EOF_ERROR) for _ in range(7)] + [Script([render(SAMPLE)], 0)]
    scripts += [Script([render(SAMPLE, LAST)], 0)]  # the plain read: the last second again
    fake = FakeKubectl(scripts)
    out, err = io.BytesIO(), io.StringIO()
    steady = Backoff(attempts=5, first_seconds=0.001, max_seconds=0.001, stable_seconds=10)
    logs = LogFollower(
        TARGET, "p", "main", out, Console(err), backoff=steady, start=fake,
        clock=lambda: float(next(ticks)),
    )
    logs.start()
    assert logs.finish(30.0) is True
    assert out.getvalue() == content(SAMPLE)
    assert err.getvalue() == retry_line("unexpected EOF", "0.001", 1) * 7


def test_finish_and_join_before_start() -> None:
    logs, fake, _, _ = follower([])
    assert logs.finish(0.1) is True
    assert logs.join(0.1) is True
    assert fake.calls == []


def test_the_log_request_is_what_kubectl_logs_sends() -> None:
    # kubesim.md: `logs -f --timestamps POD -c main` requests
    # .../pods/POD/log?container=main&follow=true&timestamps=true, and --since-time adds
    # sinceTime; names that need it are escaped, in the path and in the query.
    assert log_request("ns", "p", "main", None) == BASE[2]
    assert log_request("ns", "p", "main", "2026-12-02T19:00:00Z") == resumed(
        "2026-12-02T19:00:00Z"
    )[2]
    assert log_request("a b", "p/q", "c&d", None) == (
        "/api/v1/namespaces/a%20b/pods/p%2Fq/log?container=c%26d&follow=true&timestamps=true"
    )


# --- a clean end proves nothing; rotation (docs/decisions/0120) ------------------------------

# What the real node showed (`seq 1 700000`, kubelet v1.34.4, containerd 2.2.9): the follow
# stream ended cleanly in the middle of a line, at a log rotation; the new file begins with
# the rest of that line under a timestamp of its own.
BEFORE_ROTATION = (
    b"2026-12-04T16:28:00.678155528Z 379245\n"
    b"2026-12-04T16:28:00.678318239Z 379246"
)
NEW_FILE = (
    b"2026-12-04T16:28:00.678542602Z \n"
    b"2026-12-04T16:28:00.678567019Z 379247\n"
    b"2026-12-04T16:28:01.000000001Z 379248\n"
)
ROTATED_BYTES = b"379245\n379246\n379247\n379248\n"


def test_a_clean_end_after_the_container_ended_is_checked_by_a_plain_read() -> None:
    data = render(SAMPLE)
    cut = data.index(b"binary")
    logs, fake, out, err = follower([Script([data[:cut]], 0), Script([data], 0)])
    logs.finish(0)  # the container had ended: the old follower took the clean end as all
    logs.start()
    assert logs.join(30.0) is True
    assert (out.getvalue(), err.getvalue(), logs.lost) == (content(SAMPLE), "", None)
    assert fake.calls[1] == checked("2026-12-02T19:00:01Z")
    assert fake.calls[2] == checked(LAST)  # the first read brought more: once again


def test_a_plain_read_that_brings_nothing_new_ends_the_follower() -> None:
    logs, fake, out, _ = follower([Script([render(SAMPLE)], 0), Script([render(SAMPLE)], 0)])
    logs.finish(0)
    logs.start()
    assert logs.join(30.0) is True
    assert out.getvalue() == content(SAMPLE)
    assert len(fake.calls) == 2


def test_a_rotation_after_a_clean_end_is_the_continuation() -> None:
    logs, _fake, out, err = follower([Script([BEFORE_ROTATION], 0), Script([NEW_FILE], 0)])
    logs.finish(0)
    logs.start()
    assert logs.join(30.0) is True
    assert out.getvalue() == ROTATED_BYTES
    assert (err.getvalue(), logs.lost) == ("", None)


def test_a_rotation_after_a_cut_reports_the_gap_and_goes_on() -> None:
    logs, _fake, out, err = follower(
        [Script([BEFORE_ROTATION], 1, EOF_ERROR), Script([NEW_FILE[32:]], 0)]
    )
    logs.finish(0)
    logs.start()
    assert logs.join(30.0) is True
    assert out.getvalue() == b"379245\n379246" + b"379247\n379248\n"
    lost = (
        "output lost after line 2 (in part), byte 13: the node's log of pod p no longer holds "
        "what the container wrote between 2026-12-04T16:28:00.678318239Z and "
        "2026-12-04T16:28:00.678567019Z"
    )
    assert logs.lost == lost
    assert f"squarepeg: warning: {lost} (the kubelet rotates" in err.getvalue()
    assert logs.gave_up is False


def test_a_rotation_inside_a_busy_second_drops_nothing_new() -> None:
    # Many lines in the resume second, and the new file holds fewer lines of that second
    # than were written before it: counting alone would drop them all as replayed.
    first = b"".join(b"2026-12-04T16:28:00.%09dZ old %d\n" % (n, n) for n in range(1, 50))
    fresh = b"".join(b"2026-12-04T16:28:00.%09dZ new %d\n" % (n, n) for n in range(60, 70))
    decoder = LogDecoder()
    assert decoder.feed(first).count(b"\n") == 49
    decoder.restart()
    assert decoder.feed(fresh) == b"".join(b"new %d\n" % n for n in range(60, 70))
    assert decoder.take_gap() is None


def test_the_resume_line_missing_from_its_place_is_a_gap() -> None:
    decoder = LogDecoder()
    decoder.feed(render(SAMPLE[:3]))  # three lines of second 0, the same timestamp
    decoder.restart()
    other = ts(0, 1) + b" first line\n" + ts(0, 1) + b" same timestamp\n" + ts(0, 2) + b" x\n"
    assert decoder.feed(other) == b"x\n"
    gap = decoder.take_gap()
    assert gap is not None
    assert (gap.lines_before, gap.bytes_before, gap.next_timestamp) == (3, 36, ts(0, 2))


def test_trimmed_fraction_digits_compare_by_time() -> None:
    decoder = LogDecoder()
    decoder.feed(b"2026-12-04T16:28:00.5Z a\n")
    decoder.restart()
    # 0.50000001 s is later than 0.5 s, though "5Z" sorts after "50000001Z" as bytes.
    assert decoder.feed(b"2026-12-04T16:28:00.50000001Z b\n") == b"b\n"
    decoder.restart()
    assert decoder.feed(b"2026-12-04T16:28:00.5Z a\n2026-12-04T16:28:00.50000001Z b\n"
                        b"2026-12-04T16:28:00.6Z c\n") == b"c\n"


def test_a_clean_end_inside_a_timestamp_is_a_cut_not_a_refusal() -> None:
    decoder = LogDecoder()
    assert decoder.feed(render(SAMPLE[:1]) + ts(0, 2)[:15]) == b"first line\n"
    assert decoder.end() == b""
    assert decoder.take_refusal() is None


def test_the_kubelets_error_after_a_cut_is_not_a_rotation() -> None:
    # A body with only the kubelet's error is no answer: it says nothing of a rotation.
    logs, _fake, out, err = follower([
        Script([render(SAMPLE)], 1, EOF_ERROR),
        Script([KUBELET_ERROR], 0),
        Script([render(SAMPLE, LAST)], 0),
    ])
    logs.finish(0)
    logs.start()
    assert logs.join(30.0) is True
    assert (out.getvalue(), logs.lost) == (content(SAMPLE), None)
    assert "output lost" not in err.getvalue()


def test_a_big_replay_of_a_busy_second_skips_what_was_written_and_nothing_more() -> None:
    busy = [(ts(5, n), b"%06d\n" % n) for n in range(40000)] + [(ts(6, 0), b"next\n")]
    data = render(busy)
    for cut in (len(render(busy[:1])), len(data) // 3, len(data) // 2 + 7, len(data) - 20):
        decoder = LogDecoder()
        first = decoder.feed(data[:cut])
        decoder.restart()
        again = render(busy, "2026-12-02T19:00:05Z")
        rest = b"".join(decoder.feed(again[i : i + 65536]) for i in range(0, len(again), 65536))
        assert first + rest == content(busy), cut
        assert decoder.take_gap() is None


def test_the_log_ending_with_the_last_line_written_needs_no_plain_read() -> None:
    data = render(SAMPLE[:-1])  # ends with a whole line
    logs, fake, out, _ = follower([Script([data], 0)])
    fake.last_line = render(SAMPLE[-2:-1])
    logs.finish(0)
    logs.start()
    assert logs.join(30.0) is True
    assert out.getvalue() == content(SAMPLE[:-1])
    assert (fake.calls, fake.probes) == ([[*BASE[:2], BASE[2].replace("true&", "false&", 1)]], 1)


def test_a_log_that_ends_otherwise_gets_the_plain_read() -> None:
    data = render(SAMPLE[:-1])
    cut = data.index(ts(1, 7))  # a whole line last: a probe can tell
    logs, fake, out, _ = follower([Script([data[:cut]], 0), Script([data], 0)])
    fake.last_line = render(SAMPLE[-2:-1])  # a later line than the last one written
    logs.finish(0)
    logs.start()
    assert logs.join(30.0) is True
    assert out.getvalue() == content(SAMPLE[:-1])
    assert fake.probes == 1
    assert fake.calls[1] == checked("2026-12-02T19:00:01Z")


def test_a_last_line_without_newline_can_be_the_logs_last_line() -> None:
    logs, fake, out, _ = follower([Script([render(SAMPLE)], 0)])
    fake.last_line = render(SAMPLE[-1:])  # "no final newline", as the log ends
    logs.finish(0)
    logs.start()
    assert logs.join(30.0) is True
    assert out.getvalue() == content(SAMPLE)
    assert (len(fake.calls), fake.probes) == (1, 1)


# --- a request's kind, decided as it starts (docs/decisions/0200) ------------------------------


def test_a_request_sent_after_the_end_that_brings_nothing_needs_no_check() -> None:
    logs, fake, out, _ = follower([Script([], 0)])
    logs.finish(0)  # `run alpine true`: the end known before the first request left
    logs.start()
    assert logs.join(30.0) is True
    assert (out.getvalue(), fake.probes) == (b"", 0)
    assert fake.calls == [[*BASE[:2], BASE[2].replace("true&", "false&", 1)]]
