"""The one door to processes: every child squarepeg starts is a `kubectl` started here.

Owns how a child is started (subprocess, in a session of its own, with the parent-death
signal, stdout and stderr read as raw bytes by threads of ours), the arguments that point
kubectl at the user's cluster (`--context`, `--kubeconfig`, `--namespace`), and the
registry of running children, so that every exit path can end them. The terminal's Ctrl-C
reaches squarepeg only, and squarepeg decides what happens to its children.

Never builds a shell command line, never puts a manifest in argv (it goes on stdin), and
never decides what a kubectl failure means to the user: callers turn a `Result` into a
typed error. Why subprocess and not sh: README, Decisions ("No sh").
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from kubectl_squarepeg.errors import ClusterError, KubectlMissing

KUBECTL = "kubectl"
DEFAULT_NAMESPACE = "default"
_TERMINATE_GRACE_SECONDS = 2.0
# A child's stdout pipe holds 1 MiB rather than Linux's default 64 KiB, so that kubectl
# writes ahead while squarepeg decodes: a 100 MB log stream went from 34 to 42 MB/s here
# (scripts/bench-stream). 1 MiB is what an unprivileged process may ask for by default
# (/proc/sys/fs/pipe-max-size); where it cannot be had, the default stays.
_STDOUT_PIPE_BYTES = 1 << 20
# kubectl's start-up (its command tree, its API scheme) is mostly allocation: with the Go
# garbage collector's target at 200% instead of 100%, `kubectl version --client` took 62 ms
# of CPU instead of 78 to 90 here, for a peak heap at most 1.5 times as large (its RSS grew
# by 0.5 MB). Every run starts five kubectl processes on what may be a 2-core machine. A
# GOGC the user set wins.
_KUBECTL_GOGC = "200"


class Target(NamedTuple):
    """Where kubectl talks to: the user's context, kubeconfig file and namespace.

    A NamedTuple, not a dataclass: the argv prescan builds one before anything imports
    dataclasses (and, through it, inspect), which would delay the head start."""

    context: str | None = None
    kubeconfig: str | None = None
    namespace: str | None = None

    @classmethod
    def of_context(
        cls,
        context: str,
        context_namespace: str | None,
        *,
        kubeconfig: str | None,
        namespace: str | None,
    ) -> Target:
        """The target for a kubeconfig context: a namespace the user gave (-n, or config)
        wins over the context's own, then "default" (connect.py has the whole order)."""
        chosen = namespace or context_namespace or DEFAULT_NAMESPACE
        return cls(context=context, kubeconfig=kubeconfig, namespace=chosen)

    def global_args(self, *, namespaced: bool = True) -> list[str]:
        args: list[str] = []
        if self.kubeconfig:
            args.append(f"--kubeconfig={self.kubeconfig}")
        if self.context:
            args.append(f"--context={self.context}")
        if namespaced and self.namespace:
            args.append(f"--namespace={self.namespace}")
        return args


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
        """kubectl's complaint, without its `error: ` prefix, on one line."""
        lines = [ln.strip() for ln in self.stderr.decode("utf-8", "replace").splitlines()]
        lines = [ln for ln in lines if ln]
        text = " ".join(lines) if lines else f"kubectl exited with code {self.exit_code}"
        return text.removeprefix("error: ").removeprefix("Error from server ")


_PR_SET_PDEATHSIG = 1


def _die_with_parent_hook() -> Callable[[], None] | None:
    """A pre-exec hook asking Linux to SIGTERM the child when squarepeg's thread dies.

    `terminate_all` covers every exit squarepeg lives through; this covers the one it does
    not (kill -9), which would otherwise leave a `kubectl get -w` running forever. The
    signal goes when the thread that started the child ends, which is why long-lived
    children are started from the thread that waits for them. None where there is no prctl.
    """
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # squarepeg died before the request took effect
            os._exit(1)

    return hook


def _child_environment() -> dict[str, str]:
    environ = dict(os.environ)
    environ.setdefault("GOGC", _KUBECTL_GOGC)
    return environ


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
    """A running kubectl in its own session, registered until it has been reaped."""

    def __init__(
        self,
        argv: tuple[str, ...],
        argv_tail: tuple[str, ...],
        pid: int,
        wait_for_exit: Callable[[], int],
        stderr: bytearray,
        *,
        stdout: bytearray | None = None,
        sink: _ByteSink | None = None,
        readers: Sequence[_PipeReader] = (),
    ) -> None:
        self.argv = argv
        self.argv_tail = argv_tail  # the verb and what follows, without the target's flags
        self.pid = pid
        self._wait_for_exit = wait_for_exit
        self._stderr = stderr
        self._stdout = stdout
        self._sink = sink
        self._readers = tuple(readers)
        self.exit_code: int | None = None
        self._done = threading.Event()
        # A blocking waitpid on a thread of our own reaps the child at once and then joins
        # the reader threads, so all output has been delivered when `_done` is set.
        threading.Thread(target=self._reap, name=f"reap-{self.pid}", daemon=True).start()

    def _reap(self) -> None:
        try:
            self.exit_code = self._wait_for_exit()
            for reader in self._readers:
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
        return bytes(self._stderr)

    @property
    def stdout(self) -> bytes:
        """What the child printed, when it was started without `on_stdout`."""
        return bytes(self._stdout) if self._stdout is not None else b""

    def deliver_stdout(self, callback: Callable[[bytes], None]) -> None:
        """Hand stdout to `callback` from now on, after what arrived before this call (for a
        child started with `stdout_later`)."""
        if self._sink is None:
            raise ValueError("this child's stdout is not delivered to a callback")
        self._sink.attach(callback)

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
_children_lock = threading.Lock()


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
    """Receives a child's stdout or stderr as raw bytes and hands them to a callback.

    The callback may be given later (`attach`): what arrives before is kept for it, in
    order. An exception in the callback would otherwise be lost on a reader thread (and
    the child would then block on a full pipe), so the first one is kept for the caller and
    everything after it is discarded.
    """

    def __init__(self, callback: Callable[[bytes], None] | None) -> None:
        self._callback = callback
        self._kept: list[bytes] = []
        self._lock = threading.Lock()
        self.failure: BaseException | None = None

    def write(self, chunk: bytes) -> None:
        callback = self._callback
        if callback is None:
            with self._lock:
                callback = self._callback
                if callback is None:
                    self._kept.append(chunk)
                    return
        self._deliver(callback, chunk)

    def attach(self, callback: Callable[[bytes], None]) -> None:
        with self._lock:
            for chunk in self._kept:
                self._deliver(callback, chunk)
            self._kept.clear()
            self._callback = callback

    def _deliver(self, callback: Callable[[bytes], None], chunk: bytes) -> None:
        if self.failure is not None:
            return
        try:
            callback(chunk)
        except BaseException as exc:
            self.failure = exc


class _PipeReader:
    """Reads a child's stdout or stderr from a pipe and hands every read to a sink.

    `os.read` returns whatever has arrived, up to `bufsize`, at once: a `\r` progress bar,
    a partial line or a small watch event is never held back waiting for more.
    """

    def __init__(self, sink: _ByteSink, bufsize: int, *, capacity: int | None = None) -> None:
        self._sink = sink
        self._bufsize = bufsize
        self.read_fd, self.write_fd = os.pipe()
        set_size = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
        if capacity is not None and set_size is not None:
            with contextlib.suppress(OSError):
                fcntl.fcntl(self.write_fd, set_size, capacity)
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


def start(
    args: Sequence[str],
    target: Target | None = None,
    *,
    stdin: bytes | HeldStdin | int = b"",
    stdout_fd: int | None = None,
    on_stdout: Callable[[bytes], None] | None = None,
    stdout_later: bool = False,
    out_bufsize: int = 65536,
    namespaced: bool = True,
) -> Child:
    """Start `kubectl [target args] ARGS` in the background, in its own session.

    With `on_stdout`, every chunk of stdout (at most `out_bufsize` bytes, whatever has
    arrived) is handed to it as bytes on a reader thread, so it must lock shared state, and
    nothing is kept; with `stdout_later`, stdout is kept until `Child.deliver_stdout` names
    its callback; otherwise it is kept for `collect`. `stdin` as an int is a file
    descriptor the child reads itself (squarepeg's own stdin, for an attach); `stdout_fd`
    likewise gives the child a descriptor of ours as its stdout, read by no thread here.
    """
    argv = (*(target.global_args(namespaced=namespaced) if target else []), *args)
    kept = None if on_stdout is not None or stdout_later else bytearray()
    sink = _ByteSink(on_stdout if kept is None else kept.extend)
    stderr = bytearray()
    stderr_reader = _PipeReader(_ByteSink(stderr.extend), 65536)
    stdout_reader = (
        None
        if stdout_fd is not None
        else _PipeReader(sink, out_bufsize, capacity=_STDOUT_PIPE_BYTES)
    )
    readers = (stderr_reader,) if stdout_reader is None else (stdout_reader, stderr_reader)
    held = (
        stdin
        if isinstance(stdin, HeldStdin)
        else HeldStdin()
        if isinstance(stdin, bytes) and stdin
        else None
    )
    child_stdin = (
        held.read_fd
        if held is not None
        else stdin
        if isinstance(stdin, int)
        else subprocess.DEVNULL
    )
    try:
        process = subprocess.Popen(
            [_kubectl_path(), *argv],
            stdin=child_stdin,
            stdout=stdout_fd if stdout_reader is None else stdout_reader.write_fd,
            stderr=stderr_reader.write_fd,
            start_new_session=True,
            preexec_fn=_die_with_parent_hook(),
            env=_child_environment(),
        )
    except BaseException as exc:
        for reader in readers:
            reader.abandon()
        if held is not None:
            held.started()
            held.close()
        if isinstance(exc, FileNotFoundError):  # removed since `_kubectl_path` looked
            raise KubectlMissing("kubectl was not found on PATH", "install kubectl") from exc
        raise
    for reader in readers:
        reader.started()
    if held is not None:
        held.started()
    child = Child(
        tuple(argv),
        tuple(args),
        process.pid,
        process.wait,
        stderr,
        stdout=kept,
        sink=sink if stdout_fd is None else None,
        readers=readers,
    )
    _register(child)
    if isinstance(stdin, bytes) and held is not None:
        held.release(stdin)
    return child


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
                "check that the cluster is reachable (`kubectl cluster-info`)",
            )
        code = child.wait(timeout=slice_seconds)
        if code is not None:
            return Result(child.argv, code, child.stdout, child.stderr)


# --- verbs of a run ---------------------------------------------------------------------


def create(target: Target, manifest: bytes, *, dry_run_server: bool = False) -> Result:
    """`kubectl create -f -`, the manifest on stdin: the object as JSON (or dry-run YAML).

    `create`, not `apply`: an object of the same name must be an AlreadyExists error, not
    silently merged into.
    """
    return collect(start_create(target, manifest, dry_run_server=dry_run_server))


def start_create(target: Target, manifest: bytes, *, dry_run_server: bool = False) -> Child:
    """`create` started, to be `collect`ed: a run starts its watch while this is in flight."""
    output = ["--dry-run=server", "-o", "yaml"] if dry_run_server else ["-o", "json"]
    return start(["create", "-f", "-", *output], target, stdin=manifest)


def watch_pods(
    target: Target,
    *,
    name: str | None = None,
    selector: str | None = None,
    field_selector: str | None = None,
    on_stdout: Callable[[bytes], None],
) -> Child:
    """`kubectl get -w --output-watch-events -o json` of one pod by name, or by selectors.

    Watch events (not bare objects) so that a deletion is seen as DELETED. By name, kubectl
    first GETs the pod (a 404 ends it); by selector, the pod need not exist yet.
    """
    if name is not None:
        what = ["pod", name]
    else:
        what = ["pods"]
        if selector is not None:
            what += ["-l", selector]
        if field_selector is not None:
            what += ["--field-selector", field_selector]
    return start(
        ["get", *what, "--watch", "--output-watch-events", "-o", "json"],
        target,
        on_stdout=on_stdout,
    )


def events_for(target: Target, name: str) -> Result:
    """The events about the object `name` (a pod), as a JSON list."""
    return run(
        ["get", "events", "--field-selector", f"involvedObject.name={name}", "-o", "json"],
        target,
    )


def _delete_args(kind: str) -> list[str]:
    cascade = ["--cascade=background"] if kind.lower() == "job" else []
    return ["--wait=false", "--ignore-not-found", *cascade]


def prepare_delete(target: Target, kind: str) -> tuple[Child, HeldStdin]:
    """`kubectl delete -f -` started now, deleting nothing until its stdin is released with
    the object's reference (`reference`): the delete at a run's end then costs a request,
    not a kubectl start-up. Ended unreleased, it deletes nothing."""
    held = HeldStdin()
    return start(["delete", "-f", "-", *_delete_args(kind)], target, stdin=held), held


def reference(kind: str, name: str, namespace: str) -> bytes:
    """The manifest `kubectl delete -f -` needs to find one Pod or Job."""
    api_version = "batch/v1" if kind.lower() == "job" else "v1"
    doc = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
    }
    return json.dumps(doc).encode("utf-8")


def delete(target: Target, kind: str, name: str) -> Result:
    """Delete without waiting and without minding a 404; a Job takes its pods with it."""
    return run(["delete", kind.lower(), name, *_delete_args(kind)], target)


def logs(target: Target, pod: str, container: str) -> Result:
    """The whole log of a container, at once."""
    return run(["logs", pod, "-c", container], target)


# --- attach: the interactive runs (-i, -it) --------------------------------------------------


def _discard(_chunk: bytes) -> None:
    pass


def attach_stdin(target: Target, pod: str, container: str, *, stdin_fd: int) -> Child:
    """`kubectl attach -i`, reading the descriptor `stdin_fd` (squarepeg's own stdin) itself:
    raw bytes, nothing decoded or held here; their end closes the container's stdin (it is
    `stdinOnce`). What it prints is discarded: the output of such a run is the log stream,
    complete from the first byte, where an attach sees only what comes after it connected.
    `--quiet` keeps "If you don't see a command prompt ..." off stderr, which is kept for
    the refusal message."""
    return start(
        ["attach", "-i", "--quiet", pod, "-c", container],
        target,
        stdin=stdin_fd,
        on_stdout=_discard,
    )


def attach_terminal(
    target: Target, pod: str, container: str, *, stdin_fd: int, stdout_fd: int
) -> Child:
    """`kubectl attach -it` on a terminal: it reads the terminal `stdin_fd` in raw mode (so
    Ctrl-C is a byte for the container) and writes to `stdout_fd`, a terminal whose size
    it sends, and sends again on SIGWINCH (terminal.py relays both)."""
    return start(
        ["attach", "-i", "-t", "--quiet", pod, "-c", container],
        target,
        stdin=stdin_fd,
        stdout_fd=stdout_fd,
    )
