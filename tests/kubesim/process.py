"""Container processes: the simulated runtime under the kubelet (what containerd and runc are
on a real node).

Owns starting a container's command as a local process in its own session (so its process
group is the container: SIGKILL goes to the whole group, and when the main process exits the
rest of the group is killed, as a PID namespace teardown does; a stop signal such as SIGTERM
goes to the main process alone, and only if it handles it, as to PID 1 on a node), pumping
its stdout and stderr into the LogBook as CRI log records (a terminal's `\r\n` logged as
`\n`, as containerd logs it), waiting for it, and the memory monitor that SIGKILLs a group
whose resident memory exceeds its limit.

Output: one reader thread per container reads both pipes with large `os.read` calls (the
pipes are enlarged to 1 MiB), timestamps each read once (RFC3339Nano, UTC, 9 digits) and
splits the bytes per stream into records: the complete lines of a read, a 16 KiB piece of a
line that is longer than that (CRI's partial records), and the final partial line at exit.
stdout and stderr are split separately, as CRI does, and each record names its stream.

Input and attach: a container with `stdin: true` reads a pipe the simulator holds open (with
`tty: true`, a pty, see ttys.py) until an attach session closes it; every read of its output
also goes, raw, to the attach sessions listening at that moment (`attach`): as on a real
node, an attach sees only what is written after it connected.

Every live process group is in a registry (`ProcessRegistry`); `kill_all()` SIGKILLs them, so
the cluster's `stop()` never leaves a process behind. A process that leaves its session
(`setsid`) escapes the group and is not tracked: a documented difference from a real node.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Protocol

from tests.kubesim import ttys

# CRI's maximum log record size: longer lines are split into partial records of this size.
MAX_RECORD = 16 * 1024
READ_SIZE = 1 << 20
_F_SETPIPE_SZ = 1031
# After the main process exits and its group is killed, how long the reader waits for the
# pipes to close (a process that escaped the group may hold them open).
DRAIN_SECONDS = 2.0

# (record, timestamp, its datetime, "stdout" or "stderr")
OutputSink = Callable[[bytes, str, datetime, str], None]


def rfc3339_nano(ns: int) -> tuple[str, datetime]:
    """A time in nanoseconds since the epoch as the kubelet's log timestamp, and as a datetime."""
    seconds, fraction = divmod(ns, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, timezone.utc).replace(microsecond=fraction // 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{fraction:09d}Z", moment


class LineSplitter:
    """Turns the bytes of one stream into CRI records (see the module docstring)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self._pending + chunk if self._pending else chunk
        cut = data.rfind(b"\n") + 1
        records: list[bytes] = []
        if cut:
            records.extend(_split_long_lines(data[:cut]))
        rest = data[cut:]
        while len(rest) >= MAX_RECORD:
            records.append(rest[:MAX_RECORD])
            rest = rest[MAX_RECORD:]
        self._pending = rest
        return records

    def flush(self) -> list[bytes]:
        rest, self._pending = self._pending, b""
        return [rest] if rest else []


def _may_hold_long_line(block: bytes) -> bool:
    """Whether a line of MAX_RECORD bytes or more may be in `block`: such a line covers a
    whole aligned window of half that size, so if every window has a newline there is none."""
    window = MAX_RECORD // 2
    return any(block.find(b"\n", start, start + window) == -1
               for start in range(0, len(block) - window + 1, window))


def _split_long_lines(block: bytes) -> list[bytes]:
    """Whole lines: one record, unless a line is longer than MAX_RECORD (then pieces)."""
    if len(block) <= MAX_RECORD or not _may_hold_long_line(block):
        return [block]
    records: list[bytes] = []
    run_start = 0  # start of the current run of short lines
    position = 0
    while position < len(block):
        end = block.index(b"\n", position) + 1
        if end - position > MAX_RECORD:
            if run_start < position:
                records.append(block[run_start:position])
            for piece in range(position, end, MAX_RECORD):
                records.append(block[piece:min(piece + MAX_RECORD, end)])
            run_start = end
        position = end
    if run_start < len(block):
        records.append(block[run_start:])
    return records


def handles_signal(pid: int, sig: int) -> bool:
    """Whether process `pid` has a handler of its own for `sig` (its SigCgt mask in
    /proc): what decides whether a namespace's PID 1 gets the signal at all."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    except (OSError, ValueError, IndexError):
        return False
    return False


class ProcessRegistry:
    """Every process group the kubelet started and has not reaped yet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: dict[int, ContainerProcess] = {}
        self.closed = False
        self.started: list[int] = []  # every process group ever started, for tests

    def add(self, proc: ContainerProcess) -> None:
        with self._lock:
            self._live[proc.pid] = proc
            self.started.append(proc.pid)
            closed = self.closed
        if closed:  # started while the cluster was stopping
            proc.kill(signal.SIGKILL)

    def discard(self, proc: ContainerProcess) -> None:
        with self._lock:
            self._live.pop(proc.pid, None)

    def kill_all(self) -> None:
        with self._lock:
            self.closed = True
            procs = list(self._live.values())
        for proc in procs:
            proc.kill(signal.SIGKILL)

    def count(self) -> int:
        with self._lock:
            return len(self._live)


class OutputListener(Protocol):
    """An attach session's view of a container's output (attach.py)."""

    def output(self, stream: int, data: bytes) -> None:
        """Raw bytes the container wrote: stream 1 stdout, 2 stderr (a terminal's: 1)."""

    def ended(self) -> None:
        """The container's output has ended (it exited and its pipes are drained)."""


STDOUT, STDERR = 1, 2


class ContainerProcess:
    """One started container: its process group, its output pump and its exit.

    With `stdin`, its stdin is a pipe the simulator holds open for attach sessions (or, with
    `tty`, the pty's input); `stdin_once` closes it when the first attach session that
    used it ends. With `tty`, stdin, stdout and stderr are the slave of a pty (ttys.py)
    that is the controlling terminal of the container's session; its output is one stream.
    Without `stdin` the container reads an empty stdin (/dev/null), as on a real node.
    """

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str, sink: OutputSink,
                 registry: ProcessRegistry, *, stdin: bool = False, stdin_once: bool = False,
                 tty: bool = False):
        self._lock = threading.Lock()
        self._reaped = False
        self._registry = registry
        self._sink = sink
        self.tty = tty
        self.stdin_enabled = stdin
        self.stdin_once = stdin_once
        self._io_lock = threading.Lock()  # guards the fds below against a concurrent close
        self._stdin_fd: int | None = None
        self._pty: ttys.Pty | None = None
        self._listeners: list[OutputListener] = []
        self._output_ended = False
        self._fds: dict[int, int] = {}  # fd read by the pump -> stream
        if tty:
            self._pty = pty = ttys.Pty()
            try:
                self._popen = subprocess.Popen(
                    argv, env=env, cwd=cwd, stdin=pty.slave, stdout=pty.slave,
                    stderr=pty.slave, start_new_session=True, close_fds=True,
                    preexec_fn=ttys.make_controlling_terminal,
                )
            except BaseException:
                pty.close()
                raise
            pty.close_slave()
            os.set_blocking(pty.master, False)
            self._fds[pty.master] = STDOUT
            if stdin:
                self._stdin_fd = pty.master
        else:
            self._popen = subprocess.Popen(
                argv, env=env, cwd=cwd,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                close_fds=True,
            )
            assert self._popen.stdout is not None and self._popen.stderr is not None
            self._fds[self._popen.stdout.fileno()] = STDOUT
            self._fds[self._popen.stderr.fileno()] = STDERR
            for fd in self._fds:
                with contextlib.suppress(OSError):
                    fcntl.fcntl(fd, _F_SETPIPE_SZ, READ_SIZE)
            if stdin:
                assert self._popen.stdin is not None
                self._stdin_fd = self._popen.stdin.fileno()
                os.set_blocking(self._stdin_fd, False)
        self.pid = self._popen.pid
        registry.add(self)
        self.started_ns = time.time_ns()
        self.signalled: int | None = None  # the last signal the kubelet sent
        self._exited = threading.Event()
        self._reader = threading.Thread(target=self._pump, name=f"kubesim-pump-{self.pid}",
                                        daemon=True)
        self._reader.start()

    # -- attach ----------------------------------------------------------------------------

    def attach(self, listener: OutputListener) -> bool:
        """Send the output written from now on to `listener` too; False once it has ended."""
        with self._io_lock:
            if self._output_ended:
                return False
            self._listeners.append(listener)
            return True

    def detach(self, listener: OutputListener) -> None:
        with self._io_lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def write_stdin(self, data: bytes) -> bool:
        """Write to the container's stdin, waiting while it is full; False when there is no
        stdin (any more): the bytes are dropped, as the runtime drops them."""
        view = memoryview(data)
        while view:
            with self._io_lock:
                fd = self._stdin_fd
                if fd is None:
                    return False
                try:
                    view = view[os.write(fd, view):]
                    continue
                except BlockingIOError:
                    pass
                except OSError:  # the container closed its end, or exited
                    return False
                # Under the lock, so the fd cannot be closed and reused meanwhile.
                select.select([], [fd], [], 0.1)
        return True

    def close_stdin(self) -> None:
        """End the container's input: EOF on a pipe, the EOF character on a terminal."""
        with self._io_lock:
            fd, self._stdin_fd = self._stdin_fd, None
            if fd is None:
                return
            if self._pty is not None:
                self._pty.end_of_input()
            elif self._popen.stdin is not None:
                with contextlib.suppress(OSError):
                    self._popen.stdin.close()

    def resize(self, rows: int, columns: int) -> None:
        """A terminal container's new window size (ignored without a terminal)."""
        with self._io_lock:
            if self._pty is not None and self._pty.master in self._fds:
                self._pty.resize(rows, columns)

    def window_size(self) -> tuple[int, int] | None:
        with self._io_lock:
            if self._pty is not None and self._pty.master in self._fds:
                return self._pty.size()
        return None

    # -- signals ---------------------------------------------------------------------------

    def kill(self, sig: int) -> None:
        """SIGKILL: the whole group (the container is gone). Any other signal is a runtime's
        stop signal, which reaches the container's main process alone; that process is
        PID 1 of its namespace on a node, where the kernel drops a signal it has no handler
        for: `sh -c '...; sleep 120'` ignores SIGTERM and its pod stays Terminating for the
        whole grace period (31.4 s measured on the real kubelet node). A no-op once the
        process is reaped (its pid may then belong to someone else)."""
        with self._lock:
            if self._reaped:
                return
            self.signalled = sig
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if sig == signal.SIGKILL:
                    os.killpg(self.pid, sig)
                elif handles_signal(self.pid, sig):
                    os.kill(self.pid, sig)

    # -- waiting ---------------------------------------------------------------------------

    def wait(self) -> int:
        """Block until the main process exits; kill the rest of its group (the container is
        gone), drain the output, reap. Returns the exit status as Popen does (-N: signal N)."""
        with contextlib.suppress(ChildProcessError, InterruptedError):
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        # The main process is a zombie: its group id cannot be reused yet, so killing the
        # group cannot hit a stranger.
        with self._lock, contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        self._exited.set()
        code = self._popen.wait()
        with self._lock:
            self._reaped = True
        self._registry.discard(self)
        self._reader.join(DRAIN_SECONDS + 1.0)
        return code

    def exited(self) -> bool:
        return self._exited.is_set()

    # -- output ----------------------------------------------------------------------------

    def _pump(self) -> None:
        splitters = {fd: LineSplitter() for fd in self._fds}
        names = {fd: "stderr" if stream == STDERR else "stdout"
                 for fd, stream in self._fds.items()}
        selector = selectors.DefaultSelector()
        for fd in self._fds:
            selector.register(fd, selectors.EVENT_READ)
        drain_deadline: float | None = None
        try:
            while selector.get_map():
                if self._exited.is_set() and drain_deadline is None:
                    drain_deadline = time.monotonic() + DRAIN_SECONDS
                if drain_deadline is not None and time.monotonic() > drain_deadline:
                    break
                for key, _ in selector.select(timeout=0.2):
                    fd = int(key.fd)
                    try:
                        chunk = os.read(fd, READ_SIZE)
                    except BlockingIOError:
                        continue
                    except OSError:  # EIO: a pty whose slave every process has closed
                        chunk = b""
                    if not chunk:
                        selector.unregister(fd)
                        self._emit(splitters[fd].flush(), names[fd])
                        continue
                    self._fan_out(self._fds[fd], chunk)
                    self._emit(splitters[fd].feed(chunk), names[fd])
            for fd, splitter in splitters.items():
                self._emit(splitter.flush(), names[fd])
        except Exception:  # pragma: no cover - a bug here must not kill the kubelet
            import traceback
            traceback.print_exc(file=sys.stderr)
        finally:
            selector.close()
            self._close_output()

    def _fan_out(self, stream: int, chunk: bytes) -> None:
        with self._io_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.output(stream, chunk)

    def _close_output(self) -> None:
        """The output is over: tell the attached sessions, close every fd we hold."""
        with self._io_lock:
            self._output_ended = True
            listeners, self._listeners = self._listeners, []
            self._stdin_fd = None
            if self._pty is not None:
                self._pty.close()
            for pipe in (self._popen.stdin, self._popen.stdout, self._popen.stderr):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
            self._fds = {}
        for listener in listeners:
            listener.ended()

    def _emit(self, records: list[bytes], stream: str) -> None:
        if not records:
            return
        if self.tty:
            # containerd's CRI log keeps lines, not bytes: a line's `\r\n` (a terminal's
            # ONLCR) is logged as `\n` (`terminal\n` through `kubectl logs` on the real
            # node). The attach sessions got the terminal's bytes as they were.
            records = [record.replace(b"\r\n", b"\n") for record in records]
        timestamp, moment = rfc3339_nano(time.time_ns())
        for record in records:
            self._sink(record, timestamp, moment, stream)


def scan_processes() -> Iterator[tuple[int, str, int]]:
    """(process group, state letter, resident bytes) of every process on the host."""
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # After "pid (comm) ": field 3 (state), ..., 5 (pgrp), ..., 24 (rss in pages).
        fields = stat[stat.rfind(b")") + 2:].split()
        try:
            yield int(fields[2]), fields[0].decode(), int(fields[21]) * page
        except (IndexError, ValueError):
            continue


class MemoryMonitor:
    """Polls the resident memory of every watched process group (all processes whose process
    group id is the container's) and calls `on_exceeded` once when it passes the limit.

    One thread for the whole node, scanning /proc every `interval` seconds only while some
    group is watched. A process that allocates and exits between two polls is not caught."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self._cond = threading.Condition()
        self._watched: dict[int, tuple[int, Callable[[int], None]]] = {}
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="kubesim-memory", daemon=True)
        self._thread.start()

    def watch(self, pgid: int, limit: int, on_exceeded: Callable[[int], None]) -> None:
        with self._cond:
            self._watched[pgid] = (limit, on_exceeded)
            self._cond.notify_all()

    def unwatch(self, pgid: int) -> None:
        with self._cond:
            self._watched.pop(pgid, None)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(2.0)

    @staticmethod
    def usage(pgids: set[int]) -> dict[int, int]:
        """Resident bytes per process group, for the groups asked about."""
        totals = dict.fromkeys(pgids, 0)
        for pgrp, _, rss in scan_processes():
            if pgrp in totals:
                totals[pgrp] += rss
        return totals

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._watched and not self._stopped:
                    self._cond.wait()
                if self._stopped:
                    return
                watched = dict(self._watched)
            try:
                usage = self.usage(set(watched))
                for pgid, (limit, on_exceeded) in watched.items():
                    if usage.get(pgid, 0) > limit:
                        self.unwatch(pgid)
                        on_exceeded(usage[pgid])
            except Exception:  # pragma: no cover - keep the monitor alive
                import traceback
                traceback.print_exc(file=sys.stderr)
            with self._cond:
                if not self._stopped:
                    self._cond.wait(self.interval)
