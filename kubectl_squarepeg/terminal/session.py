"""`run -it` on a terminal: `kubectl attach -it` in the foreground, its output spliced after
what the container printed before it connected.

Owns the terminal's state around the attach (its settings saved and restored on every exit
path, whatever happened to kubectl), the relay pty kubectl writes to (so squarepeg sees the
attach's output and can splice it after the log's, splice.py), the window size (copied to
the relay, and again on every SIGWINCH, which is passed on to kubectl: it is in a session of
its own, where the terminal's signals do not reach it), and the relay thread. The terminal
is raw from the session's start (kubectl, which reads it itself, would make it raw only
once started), so a typed Ctrl-C is a byte for the container, not a SIGINT for squarepeg; a
SIGTERM still reaches squarepeg's two-stage handler.

`exec -it` needs less (`DirectSession`): kubectl reads and writes the terminal itself, with
no log to splice in; the raw mode and SIGWINCH's relay are the same.

For `attach` (run/rejoin.py) the session also owns the input: kubectl reads the relay
too, and an input thread copies the terminal to it, watching for docker's detach keys
(Ctrl-P Ctrl-Q, docs/decisions/0391): seen, they end the attach and the container runs on;
a Ctrl-P followed by anything else is passed on with what followed it, as docker does.

Starts no process: kubectl.py does, given the descriptors from here.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import struct
import termios
import threading
import tty
from collections.abc import Callable
from typing import Any, BinaryIO, Protocol

from kubectl_squarepeg.terminal.splice import Splice

_READ_BYTES = 65536
# How often the relay lets the splice look at the time while the attach is quiet.
_TICK_SECONDS = 0.1
# docker's default --detach-keys, ctrl-p,ctrl-q.
CTRL_P, CTRL_Q = 0x10, 0x11


class _Child(Protocol):
    pid: int

    def wait(self, timeout: float | None = None) -> int | None: ...
    def is_alive(self) -> bool: ...
    def terminate(self) -> None: ...

    @property
    def stderr(self) -> bytes: ...


class _LogSide:
    """The log follower's `out`: the log's bytes go through the splice."""

    def __init__(self, session: TerminalSession) -> None:
        self._session = session

    def write(self, data: bytes) -> int:
        self._session._spliced(self._session.splice.from_log, data)
        return len(data)

    def flush(self) -> None:
        pass


class TerminalSession:
    """One `kubectl attach -it` relayed to the terminal `stdin_fd` is (see the module
    docstring). `start` launches it; `finish` waits for its end; `close` restores."""

    def __init__(self, out: BinaryIO, stdin_fd: int, *, detach_keys: bool = False) -> None:
        self._out = out
        self._stdin_fd = stdin_fd
        self._detach_keys = detach_keys
        self.detached = False  # the user typed the detach keys
        self._input: threading.Thread | None = None
        self.splice = Splice()
        self.log_out: Any = _LogSide(self)
        self.child: _Child | None = None
        self._lock = threading.Lock()
        self._saved = termios.tcgetattr(stdin_fd)
        # Raw from now on, not only once kubectl has started: what the log shows before it
        # must reach the screen as the attach's bytes will, unchanged (no CR added to the
        # container terminal's own CRLF), and what is typed meanwhile is the container's.
        # TCSANOW: typed-ahead input stays.
        tty.setraw(stdin_fd, termios.TCSANOW)
        self._master: int | None = None
        self._relay: threading.Thread | None = None
        self._previous_winch: Any = None
        self._closed = False

    def _spliced(self, feed: Callable[[bytes], bytes], data: bytes) -> None:
        """One step of the splice and its output, in one piece: the log's thread and the
        relay's both feed it, and what each returns must reach the terminal in order."""
        with self._lock:
            shown = feed(data)
            if shown:
                with contextlib.suppress(OSError, ValueError):
                    self._out.write(shown)
                    self._out.flush()

    def start(self, launch: Callable[[int], _Child]) -> _Child:
        """Open the relay, size it as the terminal, launch kubectl on it (`launch(slave)`)."""
        master, slave = os.openpty()
        os.set_inheritable(master, False)
        tty.setraw(slave)  # kubectl's bytes reach the terminal unchanged (no CRLF added)
        self._master = master
        self._copy_size()
        if threading.current_thread() is threading.main_thread():
            self._previous_winch = signal.signal(signal.SIGWINCH, self._on_winch)
        self.splice.attach_launched()
        try:
            self.child = launch(slave)
        finally:
            os.close(slave)
        self._relay = threading.Thread(target=self._pump, name="attach-relay", daemon=True)
        self._relay.start()
        if self._detach_keys:
            self._input = threading.Thread(target=self._feed, name="attach-input", daemon=True)
            self._input.start()
        return self.child

    def _feed(self) -> None:
        """The terminal's bytes to the relay (kubectl's stdin), until the detach keys or
        the end of either side."""
        master, held = self._master, b""
        assert master is not None
        while not self._closed and self.child is not None and self.child.is_alive():
            try:
                ready = select.select([self._stdin_fd], [], [], _TICK_SECONDS)[0]
                data = os.read(self._stdin_fd, _READ_BYTES) if ready else None
            except (OSError, ValueError):
                return
            if data is None:
                continue
            if not data:
                return
            passed, held, detach = detach_scan(held, data)
            with contextlib.suppress(OSError):
                if passed:
                    os.write(master, passed)
            if detach:
                self.detached = True
                self.child.terminate()
                return

    def _copy_size(self) -> None:
        if self._master is None:
            return
        with contextlib.suppress(OSError):
            size = fcntl.ioctl(self._stdin_fd, termios.TIOCGWINSZ, b"\0" * 8)
            rows, columns = struct.unpack("HHHH", size)[:2]
            if rows and columns:
                fcntl.ioctl(self._master, termios.TIOCSWINSZ, size)

    def _on_winch(self, signum: int, frame: Any) -> None:
        self._copy_size()
        child = self.child
        if child is not None and child.is_alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGWINCH)

    def _pump(self) -> None:
        master = self._master
        assert master is not None
        while True:
            try:
                ready = select.select([master], [], [], _TICK_SECONDS)[0]
                data = os.read(master, _READ_BYTES) if ready else None
            except (OSError, ValueError):  # EIO: kubectl, the slave's last holder, has exited
                data = b""
            if data is None:
                self._spliced(lambda _: self.splice.tick(), b"")
                continue
            if not data:
                return
            self._spliced(self.splice.from_attach, data)

    def finish(self, seconds: float) -> None:
        """The container has ended: wait for kubectl to end and its output to be relayed."""
        if self.child is not None:
            self.child.wait(timeout=seconds)
        if self._relay is not None:
            self._relay.join(seconds)

    def restore(self) -> None:
        """Put the terminal's settings back as they were before the session (again, if
        `close` already did: a second signal may cut into it); kubectl must have ended."""
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(self._stdin_fd, termios.TCSADRAIN, self._saved)

    def close(self) -> None:
        """Restore the terminal and SIGWINCH; close the relay. Once, on every exit path."""
        if self._closed:
            return
        self._closed = True
        if self.child is not None and self.child.is_alive():
            # First: on its way out kubectl puts back the terminal as it found it (raw,
            # ours), which must not undo the restore below.
            self.child.terminate()
        self.restore()
        if self._previous_winch is not None:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGWINCH, self._previous_winch)
        if self._relay is not None and self._relay.is_alive():
            self._relay.join(1.0)
        if self._input is not None and self._input.is_alive():
            self._input.join(1.0)
        if self._master is not None and (self._relay is None or not self._relay.is_alive()):
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = None


def detach_scan(held: bytes, data: bytes) -> tuple[bytes, bytes, bool]:
    """Pure: the bytes to pass on, the ones held (a Ctrl-P at the end, which the next read
    decides), and whether Ctrl-P Ctrl-Q came."""
    passed = bytearray()
    pending = held + data
    for byte in pending:
        if passed[-1:] == bytes([CTRL_P]) and byte == CTRL_Q:
            del passed[-1]
            return bytes(passed), b"", True
        passed.append(byte)
    if passed[-1:] == bytes([CTRL_P]):
        return bytes(passed[:-1]), bytes([CTRL_P]), False
    return bytes(passed), b"", False


class DirectSession:
    """`exec -it`: kubectl reads and writes the terminal `fd` itself (no log to splice in);
    here the terminal is made raw for the session's length (a typed Ctrl-C is a byte for the
    command, which its terminal on the node turns into SIGINT) and SIGWINCH is passed on to
    kubectl, in a session of its own where the terminal's signals do not reach it, which
    then sends the new size. `close` restores both, once, on every exit path."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._saved = termios.tcgetattr(fd)
        self.child: _Child | None = None
        self._previous_winch: Any = None
        self._closed = False
        tty.setraw(fd, termios.TCSANOW)
        if threading.current_thread() is threading.main_thread():
            self._previous_winch = signal.signal(signal.SIGWINCH, self._on_winch)

    def _on_winch(self, signum: int, frame: Any) -> None:
        child = self.child
        if child is not None and child.is_alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signal.SIGWINCH)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.child is not None and self.child.is_alive():
            self.child.terminate()  # first, so its own restore cannot undo ours
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
        if self._previous_winch is not None:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGWINCH, self._previous_winch)
