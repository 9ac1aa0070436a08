"""Where the attach's output takes over from the log's in `run -it`: pure, no I/O.

An attach sees only what the container writes after it connected (kubernetes#27264), and
printing the whole log before attaching prints what came in between twice (kubectl#1848).
So the log stream, complete from the first byte, is shown live until the attach's first
bytes arrive; from then on the attach alone is the output, less what the log already
showed of it: the longest overlap between the end of what was shown (after the attach was
launched, when nothing it says can have been written yet) and the start of the attach.

The log's line ends are not the terminal's. The container's terminal turned each `\\n` into
`\\r\\n` (ONLCR), but containerd logs lines and drops the `\\r` (`kubectl logs` of a tty
container gives `terminal\\n` on the real node), while the user's terminal is raw for the
whole session and adds no `\\r` itself: shown as it is, the log staircases, and its last line
no longer matches the attach's (`after\\n` then `after\\r\\n`, seen in 2 runs of 5). So the
log's bare `\\n` becomes `\\r\\n` (lineends.py) before it is shown and before it is
compared: docs/decisions/0143-it-output-before-the-attach.md.

What no splice can show: a last line the container had not ended when the attach
connected (a shell's first prompt). Container runtimes log whole lines only, so it is in no
log yet, and the attach began after it; it shows again with the next prompt (kubectl says
"If you don't see a command prompt, try pressing enter." for the same reason).
"""

from __future__ import annotations

from kubectl_squarepeg.terminal.lineends import RawLineEnds


class Splice:
    """Feed it both streams; each call returns the bytes to write to the terminal now."""

    def __init__(self) -> None:
        self._shown = bytearray()  # what the log showed since the attach was launched
        self._line_ends = RawLineEnds()
        self.joined = False  # the attach is the output now

    def attach_launched(self) -> None:
        self._shown = bytearray()

    def from_log(self, data: bytes) -> bytes:
        if self.joined:
            return b""
        data = self._line_ends(data)
        self._shown += data
        return data

    def from_attach(self, data: bytes) -> bytes:
        if self.joined:
            return data
        self.joined = True
        shown, self._shown = bytes(self._shown), bytearray()
        for overlap in range(min(len(shown), len(data)), 0, -1):
            if shown.endswith(data[:overlap]):
                return data[overlap:]
        return data
