"""`kubectl exec`'s own words on its stderr, told apart from the command's: pure, no I/O.

kubectl exec writes the command's stderr and its own messages to one stream. Its own come
last and end it: `command terminated with exit code N` after a non-zero exit (right after
the command's last byte, even mid-line: `partial` then `command terminated ...` was seen
on localkube), or `error: ...` when it failed (the command could not start, the pod or
container is gone, the API server refused). Docker prints none of them, so `exec`'s
stderr is the command's alone: `ExecStderr` passes every byte through as it comes, but
holds back a tail that is, or may become, one of kubectl's messages, and at the end
(`end`) drops it, or names the failure it reports, or lets it through after all.

What a command that could not start looks like, recorded on localkube's containerd 2.2
and runc 1.4 through kubectl 1.3x: kubectl exit 1, `error: Internal error occurred:
Internal error occurred: error executing command in container: failed to exec in
container: failed to start exec "ID": OCI runtime exec failed: exec failed: unable to
start container process: exec: "nope": executable file not found in $PATH` (or
`... exec: "/etc/passwd": permission denied`). Docker's codes for the two are 127 and 126
(docs/decisions/0371-exec-exit-codes.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_MARKERS = (b"command terminated with exit code ", b"error: ", b"Error from server")
_LONGEST = max(len(m) for m in _MARKERS)
_TERMINATED = re.compile(rb"command terminated with exit code (\d+)\n?\Z")
_START_FAILED = re.compile(rb'exec failed: [^\n]*exec: "(?P<cmd>[^"\n]*)": (?P<why>[^\n]*)')

NOT_FOUND = 127
NOT_EXECUTABLE = 126


@dataclass(frozen=True)
class Ending:
    """What the held tail meant: `rest` goes to stderr as the command's; `code` is the
    exit code to leave with; `failure` is kubectl's own error (None: the command ran),
    `start_failure` whether it says the command could not be started."""

    rest: bytes
    code: int
    failure: str | None = None
    start_failure: bool = False


class ExecStderr:
    """One exec's stderr, fed in chunks (see the module docstring)."""

    def __init__(self) -> None:
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        """The bytes that can go out now; a possible message of kubectl's is kept back."""
        buffer = self._held + data
        cut = _hold_from(buffer)
        self._held = buffer[cut:]
        return buffer[:cut]

    def end(self, kubectl_code: int) -> Ending:
        """kubectl has exited with `kubectl_code`: the held tail, understood."""
        held, self._held = self._held, b""
        if kubectl_code == 0:
            return Ending(held, 0)
        match = _TERMINATED.search(held)
        if match is not None and int(match.group(1)) == kubectl_code:
            return Ending(held[: match.start()], kubectl_code)
        at = held.find(b"error: ")
        if at == -1:
            at = held.find(b"Error from server")
        if at == -1:
            return Ending(held, kubectl_code)
        text = held[at:].decode("utf-8", "replace").strip().removeprefix("error: ")
        started = _START_FAILED.search(held[at:])
        if started is not None:
            why = started.group("why").decode("utf-8", "replace")
            code = NOT_EXECUTABLE if "permission denied" in why else NOT_FOUND
            command = started.group("cmd").decode("utf-8", "replace")
            return Ending(held[:at], code, f'{command}: {why}', start_failure=True)
        return Ending(held[:at], kubectl_code, text)


def _hold_from(buffer: bytes) -> int:
    """Where the tail that may be kubectl's message starts (len(buffer): none). Its message
    is the stream's last line, so only the last line (the part after the last newline that
    is not the final byte) can hold one."""
    line_start = buffer.rfind(b"\n", 0, max(len(buffer) - 1, 0)) + 1
    cut = len(buffer)
    for marker in _MARKERS:
        at = buffer.find(marker, line_start)
        if at != -1:
            cut = min(cut, at)
    for size in range(1, min(_LONGEST, len(buffer) - line_start) + 1):
        tail = buffer[-size:]
        if any(marker.startswith(tail) for marker in _MARKERS):
            cut = min(cut, len(buffer) - size)
    return cut
