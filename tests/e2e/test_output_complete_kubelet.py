"""No silent loss on the real node (issue 21, "Done when"; docs/decisions/0120): runs in a row
of a container writing more than the kubelet's log rotation size (containerLogMaxSize,
10 MiB of CRI log by default) as fast as it can, each ending byte-exact with the container's
code, or with the loss said on stderr and a non-zero exit. Never a short output with exit 0,
but for the head rotated away before the kubelet serves the log (decision 0270), counted apart.

The real kubelet node only (`LOCALKUBE_NODE=kubelet ... --cluster localkube`): its log
rotation and its follow streams' early ends are the subject. kubesim's stand-ins are tested
by test_output_complete.py. Measured here (4 December 2026, a 2-core machine shared with
other test runs): 20 runs of `seq 1 700000` in 347 s (13 runs took 285 s in a busier
moment), 10 runs of 32 MB of base64 in 132 s. In the evening, at a load average of 15 to
18: 20 of 20 exact in 408 s, and 20 of 20 exact in 360 s with the check of decision 0200
(with the OOM-killed child's test, 20 s)."""

from __future__ import annotations

import base64
import hashlib
import os
import re

import pytest

from tests.conftest import localkube_default_node
from tests.e2e.conftest import Finished, Squarepeg

pytestmark = [
    pytest.mark.localkube_only("the real kubelet's log rotation and follow ends"),
    pytest.mark.skipif(localkube_default_node() != "kubelet",
                       reason="the real kubelet node only (LOCALKUBE_NODE=agent picks the agent)"),
]

SEQ_RUNS = int(os.environ.get("SQUAREPEG_SEQ_RUNS", "20"))
RANDOM_RUNS = int(os.environ.get("SQUAREPEG_RANDOM_RUNS", "10"))
SEQ = b"".join(b"%d\n" % i for i in range(1, 700_001))  # 4,788,895 bytes, 33 MB of CRI log
# 3 x 10 MiB of output: base64 (76-column lines) of 24,000,000 random bytes, then the md5 of
# those bytes, so that the test can tell an exact copy without knowing them in advance.
RANDOM_BYTES = 24_000_000
BASE64_COLUMNS = 76
BASE64_CHARS = RANDOM_BYTES * 4 // 3
RANDOM = (f"head -c {RANDOM_BYTES} /dev/urandom > /tmp/r && base64 /tmp/r && "
          "md5sum /tmp/r | cut -d' ' -f1")


def lost_and_said(done: Finished) -> bool:
    """The loss was reported, and the exit is not zero: a gap with its place, or the rest
    that could not be read (the kubelet once said the pod's log directory was gone, for 30 s,
    after a complete stream: a false alarm, but never a silent loss)."""
    return done.code != 0 and (done.has_line("output lost after line")
                               or done.has_line("the output may be incomplete after byte"))


def seq_complete(done: Finished) -> bool:
    return done.code == 0 and done.stdout == SEQ


def random_complete(done: Finished) -> bool:
    if done.code != 0:
        return False
    *body, digest = done.stdout.rstrip(b"\n").split(b"\n")
    try:
        raw = base64.b64decode(b"".join(body), validate=True)
    except ValueError:
        return False
    return len(raw) == RANDOM_BYTES and hashlib.md5(raw).hexdigest().encode() == digest


def random_head_lost(done: Finished) -> bool:
    """The base64 run's output is its end only: exit 0, the digest last, every line before
    it whole (76 columns; the last of them the remainder) but the first, and fewer than all.
    A gap inside would break a line at its 4096-byte edge (decision 0120)."""
    if done.code != 0:
        return False
    *body, digest = done.stdout.rstrip(b"\n").split(b"\n")
    if not body or not re.fullmatch(rb"[0-9a-f]{32}", digest):
        return False
    full, rest = divmod(BASE64_CHARS, BASE64_COLUMNS)
    if len(body) > full + (1 if rest else 0):
        return False
    inner = body[1:-1] if rest else body[1:]
    return (sum(map(len, body)) < BASE64_CHARS
            and len(body[0]) <= BASE64_COLUMNS
            and all(len(line) == BASE64_COLUMNS for line in inner)
            and (not rest or len(body[-1]) == rest))


def seq_head_lost(done: Finished) -> bool:
    """The seq run's output is the end of SEQ only, with exit 0."""
    return (done.code == 0 and bool(done.stdout) and SEQ.endswith(done.stdout)
            and done.stdout != SEQ)


def outcome(done: Finished, complete: bool, head_lost: bool) -> str:
    """How a run ended. A silent loss of only the start (`head_lost`: the test's own reading
    of its output) is told apart: the head the kubelet rotated away before its first read,
    which the log API cannot show (docs/decisions/0270)."""
    if complete:
        return "exact"
    if lost_and_said(done):
        return "loss said"
    if head_lost:
        return "HEAD LOSS"
    return "SILENT LOSS"


def run(squarepeg: Squarepeg, command: str, timeout: float) -> Finished:
    """One run; a pod that squarepeg kept for its unread output is deleted at once."""
    done = squarepeg("run", "alpine", "sh", "-c", command, timeout=timeout)
    for name in re.findall(r"kept pod/(\S+) in namespace", done.stderr):
        squarepeg.kubesim.kubectl("delete", "pod", name, "-n", squarepeg.namespace,
                                  "--wait=false")
    return done


Seen = tuple[str, int, int, bytes, str]


def silent_losses(seen: list[Seen]) -> list[str]:
    """The runs that lost output silently, each with what tells its kind: where the output
    began (a head rotated away before the first request begins past `1\\n`), its size and
    code, and squarepeg's last line. Only these are printed on failure: pytest cuts a long
    assertion message, and in the fresh-clone CI of 4 December the 20 tuples of every run
    were cut after a "loss said" one, hiding the run that failed."""
    return [f"run {i + 1}: {size} bytes, exit {code}, began {head!r}, last line {last!r}"
            for i, (result, size, code, head, last) in enumerate(seen)
            if result == "SILENT LOSS"]


# The head rotated away before the kubelet served the first read: the kubelet serves a log
# only once its own status says running, 0.07 to 1.2 s after the container's first write,
# and a rotation in that window takes the head with nothing in the API to say so (decision
# 0270; 1 run in the 60 of the last three CI runs of the seq test). This many of the seq
# test's 20 runs is the README's limit, not a regression.
HEAD_LOSSES_ALLOWED = 2
# base64 fills the first file faster, and its head went in 2 of 70 runs (the last five CI
# runs' 50 and 20 by hand on 6 December, 4,670 and 4,272 whole writes of 4096 from the
# start): at 3 in 100, 3 or fewer of 10 runs hold 99.9% of the time.
RANDOM_HEAD_LOSSES_ALLOWED = 3


def seen_as(done: Finished, complete: bool, head_lost: bool) -> Seen:
    """What a run is remembered by: how it ended, its size, its code, where its output
    began, and squarepeg's last line."""
    return (outcome(done, complete, head_lost), len(done.stdout), done.code, done.stdout[:12],
            (done.lines or [""])[-1])


def assert_no_loss_but_heads(seen: list[Seen],
                             heads_allowed: int) -> None:
    assert not silent_losses(seen), silent_losses(seen)
    heads = [result for result, *_ in seen if result == "HEAD LOSS"]
    assert len(heads) <= heads_allowed, seen


@pytest.mark.timeout(60 * SEQ_RUNS + 60)
def test_seq_700000_twenty_times_in_a_row(squarepeg: Squarepeg) -> None:
    seen = []
    for _ in range(SEQ_RUNS):
        done = run(squarepeg, "seq 1 700000", timeout=300)
        seen.append(seen_as(done, seq_complete(done), seq_head_lost(done)))
        print(seen[-1])
    assert_no_loss_but_heads(seen, HEAD_LOSSES_ALLOWED)


@pytest.mark.timeout(90 * RANDOM_RUNS + 60)
def test_three_rotations_of_random_base64_ten_times(squarepeg: Squarepeg) -> None:
    """The head can go here too: base64 writes its 47 MB of CRI log in a second or two, and
    a CI run (6 December) lost the first 19,128,320 bytes (4,670 writes of 4096) of one run
    in 10, exit 0: whole writes from the very start (the total is no multiple of 4096), the
    rest intact. random_head_lost tells such a run apart."""
    seen = []
    for _ in range(RANDOM_RUNS):
        done = run(squarepeg, RANDOM, timeout=600)
        seen.append(seen_as(done, random_complete(done), random_head_lost(done)))
        print(seen[-1])
    assert_no_loss_but_heads(seen, RANDOM_HEAD_LOSSES_ALLOWED)
