"""The one door to processes: every child squarepeg starts is a `kubectl` started here,
through sh. The kubectl verbs that build each command's arguments are cluster/verbs.py's;
this module runs whatever arguments it is given.

Owns how a child is started (sh's background command, in a session of its own, with the
parent-death signal, no shell, every exit code accepted and judged by the caller), with
the arguments that point kubectl at the user's cluster (`target.Target`), and the registry
of running children, so that every exit path can end them. The terminal's Ctrl-C reaches
squarepeg only, and squarepeg decides what happens to its children. Also the kubectl on
PATH, the environment a child gets, the stdin held open for later (`HeldStdin`), and the
`switched_off` names of start-up optimizations.

sh is imported on the first start, never at import time: `--help`, `--version`, a dry run
with a cached kubeconfig view and `config view` start no process and do not pay for sh
(tests/e2e/test_lazy_sh.py). A finished call's stdout and stderr are sh's, kept as raw
bytes. A stream (a watch, a log) is read from a pipe of ours that sh hands the child as
its stdout: sh's own reader holds a chunk until `_out_bufsize` bytes have arrived (a watch
event would wait for 64 KiB) or, line-buffered, reads 1 KiB at a time and calls back once
a line (24 MB/s here, against 340 MB/s this way); docs/decisions/0022.

Never builds a shell command line, never puts a manifest in argv (it goes on stdin), and
never decides what a kubectl failure means to the user: callers turn a `Result` into a
typed error.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.target import Target as Target
from kubectl_squarepeg.errors import ClusterError, KubectlMissing

KUBECTL = "kubectl"
_TERMINATE_GRACE_SECONDS = 2.0


class Result(NamedTuple):
    """A finished kubectl call."""

    argv: tuple[str, ...]
    exit_code: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @property
    def error_text(self) -> str:
        """kubectl's complaint, without its `error: ` prefix, on one line (complaints.py)."""
        from kubectl_squarepeg.cluster import complaints

        lines = [ln.strip() for ln in self.stderr.decode("utf-8", "replace").splitlines()]
        lines = [ln for ln in lines if ln]
        text = complaints.clean(lines) or f"kubectl exited with code {self.exit_code}"
        return text.removeprefix("error: ").removeprefix("Error from server ")


_PR_SET_PDEATHSIG = 1


# The signals that mean "stop" to squarepeg. A child holds them blocked from the fork
# until its pre-exec hook has decided what each means to it (_child_hook).
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Block the stop signals in this thread while sh forks, so that the child starts with
    them blocked: none can run squarepeg's Python handlers in the child before it execs."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _child_hook() -> Callable[[], None]:
    """The pre-exec hook, run in the forked child after sh made it a session of its own.

    A Ctrl-C or hangup that reached the child while it was still in squarepeg's process
    group was squarepeg's to act on (the parent got it too): ignoring a signal discards it
    if pending, and sh's `_bg` wants SIGHUP ignored anyway. A SIGTERM stays pending and, at
    its default, ends the child as soon as it is unblocked: it came from `terminate_all`.
    Then, on Linux, the parent-death signal: `terminate_all` covers every exit squarepeg
    lives through; this covers the one it does not (kill -9), which would otherwise leave
    a `kubectl get -w` running forever. It goes when the thread that started the child
    ends, which is why long-lived children are started from the thread that waits for them.
    """
    prctl = _prctl()
    parent = os.getpid()

    def hook() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
            if os.getppid() != parent:  # squarepeg died before the request took effect
                os._exit(1)

    return hook


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's prctl, where there is one (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def switched_off(optimization: str) -> bool:
    """Whether $SQUAREPEG_WITHOUT (a comma list) names `optimization`: scripts/bench-run
    times a run with and without each start-up optimization, in one run
    (docs/decisions/0019). Never needed by a user; a name it does not know is ignored."""
    return optimization in os.environ.get("SQUAREPEG_WITHOUT", "").split(",")


def _child_environment() -> dict[str, str]:
    """The user's environment, whole: sh's `_env` replaces it rather than adding to it."""
    return dict(os.environ)


def _kubectl_path() -> str:
    path = shutil.which(KUBECTL)
    if path is None:
        raise KubectlMissing(
            "kubectl was not found on PATH",
            "install kubectl (https://kubernetes.io/docs/tasks/tools/) and make sure "
            "`kubectl version --client` works",
        )
    return path


class Child:
    """A running kubectl (sh's background command) in its own session, registered until it
    has been reaped."""

    def __init__(
        self,
        argv: tuple[str, ...],
        argv_tail: tuple[str, ...],
        command: Any,
        *,
        sink: _ByteSink | None = None,
        reader: _PipeReader | None = None,
        target: Target | None = None,
        err_sink: _StderrTee | None = None,
        err_reader: _PipeReader | None = None,
    ) -> None:
        self.argv = argv
        self.argv_tail = argv_tail  # the verb and what follows, without the target's flags
        self.target = target or Target()
        self._command = command  # sh.RunningCommand
        self.pid: int = command.pid
        self._sink = sink
        self._reader = reader
        self._err_sink, self._err_reader = err_sink, err_reader
        self.exit_code: int | None = None
        self._done = threading.Event()
        _register(self)  # before the reaper, which unregisters it
        # sh's own `wait(timeout)` polls every 0.1 s, and its reader threads wait up to 1 s
        # for a reap nobody asks for: a blocking wait on a thread of ours reaps the child
        # at once (sh then finishes reading stderr), and joins our stdout reader, so all
        # output has been delivered when `_done` is set.
        threading.Thread(target=self._reap, name=f"reap-{self.pid}", daemon=True).start()

    def _reap(self) -> None:
        try:
            self.exit_code = self._command.process.wait()
            for reader in (self._reader, self._err_reader):
                if reader is not None:
                    reader.join()
        finally:
            _unregister(self)
            self._done.set()

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit code (negative: killed by that signal), or None if still running after
        `timeout` seconds."""
        if not self._done.wait(timeout):
            return None
        return self.exit_code

    def is_alive(self) -> bool:
        return not self._done.is_set()

    @property
    def stderr(self) -> bytes:
        if self._err_sink is not None:
            return self._err_sink.kept()
        data: bytes = self._command.process.stderr
        return data

    @property
    def stdout(self) -> bytes:
        """What the child printed, when it was started without `on_stdout`."""
        if self._sink is not None:
            return b""
        data: bytes = self._command.process.stdout
        return data

    @property
    def callback_failure(self) -> BaseException | None:
        """The exception the `on_stdout` callback raised, if it raised one."""
        return self._sink.failure if self._sink is not None else None

    def terminate(self, grace: float = _TERMINATE_GRACE_SECONDS) -> None:
        """End the child's whole process group: SIGTERM, a bounded wait, then SIGKILL."""
        for sig, wait_for in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
            if not self.is_alive():
                break
            try:
                os.killpg(self.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            if self.wait(timeout=wait_for) is not None:
                break
        self.wait(timeout=grace)
        _unregister(self)


_children: set[Child] = set()
# Reentrant: a second Ctrl-C ends every child from a signal handler, which runs in the main
# thread and may have cut in while that thread held this lock (interrupt.py).
_children_lock = threading.RLock()


def _register(child: Child) -> None:
    with _children_lock:
        _children.add(child)


def _unregister(child: Child) -> None:
    with _children_lock:
        _children.discard(child)


def running_children() -> list[Child]:
    with _children_lock:
        return list(_children)


def terminate_all() -> None:
    """End every child still running. Safe to call more than once, from any exit path."""
    for child in running_children():
        child.terminate()


atexit.register(terminate_all)


class _ByteSink:
    """Hands a child's stdout, as raw bytes, to a callback on the reader thread.

    An exception in the callback would otherwise be lost on that thread (and the child
    would then block on a full pipe), so the first one is kept for the caller and every
    chunk after it is read and discarded.
    """

    def __init__(self, callback: Callable[[bytes], None]) -> None:
        self._callback = callback
        self.failure: BaseException | None = None

    def write(self, chunk: bytes) -> None:
        if self.failure is not None:
            return
        try:
            self._callback(chunk)
        except BaseException as exc:
            self.failure = exc


class _StderrTee:
    """A child's stderr handed to a callback as it arrives (an attach's: the container's
    stderr, run/exactout.py), its end also kept for `Child.stderr` (kubectl's own words,
    which come last: a refusal, an error as it exits)."""

    KEPT_BYTES = 64 * 1024

    def __init__(self, callback: Callable[[bytes], None]) -> None:
        self._callback = callback
        self._kept = bytearray()
        self._lock = threading.Lock()

    def __call__(self, chunk: bytes) -> None:
        with self._lock:
            self._kept += chunk
            del self._kept[: max(0, len(self._kept) - self.KEPT_BYTES)]
        self._callback(chunk)

    def kept(self) -> bytes:
        with self._lock:
            return bytes(self._kept)


class _PipeReader:
    """Reads a streaming child's stdout from a pipe of ours (sh hands the child its write
    end) and hands every read to a sink.

    `os.read` returns whatever has arrived, up to `bufsize`, at once: a `\r` progress bar,
    a partial line or a small watch event is never held back waiting for more.
    """

    def __init__(self, sink: _ByteSink, bufsize: int) -> None:
        self._sink = sink
        self._bufsize = bufsize
        self.read_fd, self.write_fd = os.pipe()
        self._thread = threading.Thread(target=self._pump, name="stdout-reader", daemon=True)

    def started(self) -> None:
        """The child holds the write end now: drop ours so that its exit means EOF."""
        os.close(self.write_fd)
        self._thread.start()

    def abandon(self) -> None:
        """The child could not be started."""
        os.close(self.write_fd)
        os.close(self.read_fd)

    def _pump(self) -> None:
        try:
            while chunk := os.read(self.read_fd, self._bufsize):
                self._sink.write(chunk)
        finally:
            os.close(self.read_fd)

    def join(self) -> None:
        self._thread.join()


class HeldStdin:
    """A child's stdin that squarepeg holds open, to write once and close later (`release`).

    kubectl reads a `-f -` manifest only once it has started (the dispatcher's version
    check, the exec, the Go runtime, the kubeconfig): a child started early and released
    when its input is known pays none of that start-up at the moment it is needed.
    """

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()
        self._write_open = True

    def started(self) -> None:
        """The child holds the read end now; ours goes, so that its EOF is ours to give."""
        os.close(self.read_fd)

    def release(self, data: bytes) -> None:
        """Hand the child its whole input, and end it. A child that died meanwhile gets
        nothing (its result says so)."""
        if not self._write_open:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._write_fd, view) :]
        except OSError:  # EPIPE: the child is gone
            pass
        finally:
            self.close()

    def close(self) -> None:
        if self._write_open:
            self._write_open = False
            os.close(self._write_fd)


_door_lock = threading.Lock()
_doors: dict[str, Any] = {}
_devnull_fd: int | None = None


def _door(path: str) -> Any:
    """`sh.Command(path)` with the options every child needs, made once per path: sh's
    defaults give the child a pty, decode its output, print a failure twice from a thread,
    raise on any exit code but 0, and leave the child in squarepeg's process group
    (../shared/design/library-notes.md has the list)."""
    with _door_lock:
        door = _doors.get(path)
        if door is None:
            import sh  # here, not at the top: see the module's docstring

            door = sh.Command(path).bake(
                _return_cmd=True,
                _bg=True,
                _bg_exc=False,
                _tty_in=False,
                _tty_out=False,
                _new_session=True,
                _ok_code=list(range(-64, 256)),
            )
            _doors[path] = door
        return door


def _no_input() -> int:
    """/dev/null, opened once: the stdin of a child that reads nothing (sh would otherwise
    start a thread to write it nothing)."""
    global _devnull_fd
    with _door_lock:
        if _devnull_fd is None:
            _devnull_fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        return _devnull_fd


def start(
    args: Sequence[str],
    target: Target | None = None,
    *,
    stdin: bytes | HeldStdin | int = b"",
    stdout_fd: int | None = None,
    on_stdout: Callable[[bytes], None] | None = None,
    out_bufsize: int = 65536,
    namespaced: bool = True,
    stderr_fd: int | None = None,
    on_stderr: Callable[[bytes], None] | None = None,
) -> Child:
    """Start `kubectl [target args] ARGS` in the background, in its own session.

    With `on_stdout`, every chunk of stdout (at most `out_bufsize` bytes, whatever has
    arrived) is handed to it as bytes on a reader thread, so it must lock shared state, and
    nothing is kept; otherwise sh keeps it for `collect`. `stdin` as an int is a file
    descriptor the child reads itself (squarepeg's own stdin, for an attach); `stdout_fd`
    likewise gives the child a descriptor of ours as its stdout, read by no thread here,
    and `stderr_fd` as its stderr (then `Child.stderr` is empty). With `on_stderr`, stderr
    is handed over as stdout is with `on_stdout`, and `Child.stderr` is its last 64 KiB.
    """
    argv = (*(target.global_args(namespaced=namespaced) if target else []), *args)
    sink = _ByteSink(on_stdout) if on_stdout is not None else None
    reader = _PipeReader(sink, out_bufsize) if sink else None
    err_tee = _StderrTee(on_stderr) if on_stderr is not None else None
    err_sink = _ByteSink(err_tee) if err_tee is not None else None
    err_reader = _PipeReader(err_sink, out_bufsize) if err_sink is not None else None
    held: HeldStdin | None = None
    child_stdin: bytes | int
    if isinstance(stdin, HeldStdin):
        held = stdin
        child_stdin = held.read_fd
    elif isinstance(stdin, int):
        child_stdin = stdin  # fd 0 included: not "no input"
    else:
        child_stdin = stdin or _no_input()
    options: dict[str, Any] = {"_in": child_stdin, "_env": _child_environment()}
    if reader is not None:
        options["_out"] = reader.write_fd
    elif stdout_fd is not None:
        options["_out"] = stdout_fd
    else:
        options["_out_bufsize"] = 65536  # read at the end: big reads, no line splitting
    if stderr_fd is not None:
        options["_err"] = stderr_fd
    elif err_reader is not None:
        options["_err"] = err_reader.write_fd
    options["_preexec_fn"] = _child_hook()
    try:
        with _stop_signals_blocked():
            command = _door(_kubectl_path())(*argv, **options)
    except BaseException as exc:
        for pipe in (reader, err_reader):
            if pipe is not None:
                pipe.abandon()
        if held is not None:
            held.started()
            held.close()
        if type(exc).__name__ in ("CommandNotFound", "ForkException"):
            # gone since `_kubectl_path` looked, or not executable
            raise KubectlMissing(
                f"kubectl could not be started ({str(exc).strip().splitlines()[-1]})",
                "install kubectl (https://kubernetes.io/docs/tasks/tools/) and make sure "
                "`kubectl version --client` works",
            ) from None
        raise
    for pipe in (reader, err_reader):
        if pipe is not None:
            pipe.started()
    if held is not None:
        held.started()
    return Child(
        tuple(argv), tuple(args), command, sink=sink, reader=reader, target=target,
        err_sink=err_tee, err_reader=err_reader,
    )


def run(
    args: Sequence[str],
    target: Target | None = None,
    *,
    stdin: bytes = b"",
    timeout: float | None = None,
    namespaced: bool = True,
) -> Result:
    """Run `kubectl [target args] ARGS` to the end and return what it printed."""
    return collect(start(args, target, stdin=stdin, namespaced=namespaced), timeout=timeout)


def collect(child: Child, *, timeout: float | None = None) -> Result:
    """Wait for a child started without `on_stdout` and return what it printed.

    The main thread waits in short slices, so signal handlers stay responsive while a
    foreground kubectl call is in progress.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        slice_seconds = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
        if slice_seconds <= 0:
            child.terminate()
            raise ClusterError(
                f"kubectl {' '.join(child.argv_tail[:2])} did not answer within {timeout:g}s",
                "check that the cluster is reachable "
                f"(`{Commands(child.target).kubectl('cluster-info', namespaced=False)}`)",
            )
        code = child.wait(timeout=slice_seconds)
        if code is not None:
            return Result(child.argv, code, child.stdout, child.stderr)
