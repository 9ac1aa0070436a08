"""Line ends of a terminal container's output, as each place it is shown needs them: pure.

A container with `tty: true` writes to a terminal, whose ONLCR turns each `\\n` into
`\\r\\n`. containerd logs lines and drops that `\\r` (`kubectl logs` of a tty container
gives `terminal\\n` on the real node); another runtime, or kubesim before it learnt this,
may keep it. So:

- `run -it` shows the log on a raw terminal, which adds no `\\r`: each bare `\\n` becomes
  `\\r\\n` (`RawLineEnds`), or the lines staircase;
- `run -t` without `-i` shows the log alone, on stdout: each `\\r\\n` becomes `\\n`
  (`LogLineEnds`), the line end a tty run's output has on every cluster, whatever the
  runtime kept (docs/decisions/0144-tty-line-ends.md). A `\\r` inside a line (a progress
  bar) is kept.

Both work across chunk boundaries: a `\\r` at the end of one chunk waits for the next.
"""

from __future__ import annotations

from typing import BinaryIO


class RawLineEnds:
    """Turns each bare `\\n` of a byte stream into `\\r\\n`."""

    def __init__(self) -> None:
        self._after_cr = False  # the last byte seen was `\r`

    def __call__(self, data: bytes) -> bytes:
        if not data:
            return data
        converted = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        if self._after_cr and data.startswith(b"\n"):
            converted = converted[1:]  # its `\r` was shown at the end of the last chunk
        self._after_cr = data.endswith(b"\r")
        return converted


class LogLineEnds:
    """Turns each `\\r\\n` of a byte stream into `\\n`; a chunk's last `\\r` is held until
    the next byte says whether it ends a line (`flush` lets it go)."""

    def __init__(self) -> None:
        self._held_cr = False

    def __call__(self, data: bytes) -> bytes:
        if self._held_cr:
            data = b"\r" + data
            self._held_cr = False
        if data.endswith(b"\r"):
            data = data[:-1]
            self._held_cr = True
        return data.replace(b"\r\n", b"\n")

    def flush(self) -> bytes:
        held, self._held_cr = self._held_cr, False
        return b"\r" if held else b""


class LogLineEndsOut:
    """A binary stream writing through `LogLineEnds` to `out` (what `run -t` without `-i`
    gives the log follower); a write's errors (a closed pipe) are `out`'s."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._convert = LogLineEnds()

    def write(self, data: bytes) -> int:
        self._out.write(self._convert(data))
        return len(data)

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        """The end of the output: a `\\r` held back is the last byte."""
        rest = self._convert.flush()
        if rest:
            self._out.write(rest)
            self._out.flush()
