"""The completeness check at a log's end, the cheap one (docs/decisions/0120, 0200): whether
the log's last line, as one `tailLines=1` request answers it, is the last line written.

Owns the check's request and its answer (`Check`), the end of the output kept to compare it
with (`keep_tail`), and the comparison (`expected_last_line`): by the timestamp, to the
nanosecond as the kubelet stamps every line, and by the content (no line at all when nothing
was written). The follower (logs.py, "Complete") starts it once, after a stream that brought
output ended cleanly and the container's end is known, so that its answer is the log's final
last line; when it says complete no plain read is needed. When it cannot tell (no answer
within _PROBE_SECONDS, a failed request, a last line longer than what was kept), the plain
read from the resume point decides. Starting it beside a stream still open at the end was
measured and dropped (decision 0200).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kubectl_squarepeg.cluster import verbs
from kubectl_squarepeg.cluster.target import DEFAULT_NAMESPACE, Target
from kubectl_squarepeg.run.logdecoder import ResumePoint
from kubectl_squarepeg.run.logstream import Stream

# The check compares a last line of at most this many bytes, and waits this long for its
# answer.
_PROBE_LINE_BYTES = 64 * 1024
_PROBE_SECONDS = 10.0


def keep_tail(tail: bytes, data: bytes) -> bytes:
    """The end of the output kept for the check, once `data` is written after `tail`."""
    return (tail + data)[-_PROBE_LINE_BYTES:]


def request(target: Target, pod: str, container: str) -> list[str]:
    """The check's kubectl arguments: one plain read of the log's last line."""
    namespace = target.namespace or DEFAULT_NAMESPACE
    tail = verbs.log_request(namespace, pod, container, None, follow=False, tail=1)
    return ["get", "--raw", tail]


@dataclass
class Check:
    """The check's request (started by LogFollower._start_check) and its answer."""

    started: float
    answer: list[bytes] = field(default_factory=list)
    child: Stream | None = None
    used: bool = False

    def says_complete(
        self, clock: Callable[[], float], expected: Callable[[], bytes | None]
    ) -> bool:
        """Whether the answer is `expected()`, the last line written (expected_last_line).
        Waits for the answer up to _PROBE_SECONDS from the check's start; False when it
        cannot tell. The answer is used once."""
        if self.used or self.child is None:
            return False
        self.used = True
        code = self.child.wait(max(0.0, self.started + _PROBE_SECONDS - clock()))
        if code is None:
            self.child.terminate()
            return False
        if code != 0:
            return False
        last = expected()
        return last is not None and b"".join(self.answer) == last


def expected_last_line(resume: ResumePoint, tail: bytes, written: int) -> bytes | None:
    """What `tailLines=1` answers if the output written is all of the log; None when it
    cannot be told from what was kept. `written`: the bytes written, `tail`: the end of them
    (keep_tail), `resume`: the decoder's resume point after them."""
    if not resume.timestamp:
        return b"" if not written else None
    if not tail:
        return None
    if resume.partial is None:
        if not tail.endswith(b"\n"):
            return None
        start = tail.rfind(b"\n", 0, len(tail) - 1) + 1
    else:  # a last line without its newline (`head -c`): it must be all of the line
        start = tail.rfind(b"\n") + 1
        if len(tail) - start != resume.partial:
            return None
    if start == 0 and len(tail) == _PROBE_LINE_BYTES:
        return None  # a longer line than the tail kept
    return resume.timestamp + b" " + tail[start:]
