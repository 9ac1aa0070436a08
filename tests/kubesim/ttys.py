"""Pseudo-terminals for containers with `tty: true` (what runc's console socket is on a node).

Owns opening a pty pair, making the slave the controlling terminal of a container's new
session (so the line discipline turns a typed Ctrl-C into SIGINT for its foreground process
group, and `stty size` reads the window size), setting the window size (the kernel sends
SIGWINCH to the foreground group), and the end of input that a closed stdin means to a
terminal. Nothing here knows about pods.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import termios

# The size a terminal has before the first resize message: runc's console starts at 0x0,
# which programs read as "unknown"; 24x80 is what they then assume anyway.
DEFAULT_ROWS, DEFAULT_COLUMNS = 24, 80


class Pty:
    """A pty pair: `master` stays with the simulator, `slave` goes to the container."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        os.set_inheritable(self.master, False)
        self._slave_open = self._master_open = True
        self.resize(DEFAULT_ROWS, DEFAULT_COLUMNS)

    def resize(self, rows: int, columns: int) -> None:
        """Set the window size; the kernel signals SIGWINCH to the terminal's foreground
        process group when it changes."""
        with contextlib.suppress(OSError):
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def size(self) -> tuple[int, int]:
        packed = fcntl.ioctl(self.master, termios.TIOCGWINSZ, b"\0" * 8)
        rows, columns, _, _ = struct.unpack("HHHH", packed)
        return rows, columns

    def end_of_input(self) -> None:
        """What closing a terminal container's stdin looks like to it: the terminal's EOF
        character at the start of a line (a shell reading a command exits)."""
        with contextlib.suppress(OSError):
            os.write(self.master, b"\x04")  # VEOF, Ctrl-D

    def close_slave(self) -> None:
        """The container holds its own copies now; ours must go, or the master never sees
        the end of the container's output. Once: a second close could hit an fd number
        that meanwhile belongs to someone else."""
        if self._slave_open:
            self._slave_open = False
            os.close(self.slave)

    def close(self) -> None:
        self.close_slave()
        if self._master_open:
            self._master_open = False
            os.close(self.master)


def make_controlling_terminal() -> None:
    """Run in the container's child process after `setsid()`: its stdin, the pty slave,
    becomes the session's controlling terminal, and the child its foreground group."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
