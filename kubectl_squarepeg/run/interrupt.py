"""The two-stage SIGINT/SIGTERM handler that guards a run ("Interrupt handling" in the spec).

Owns what Ctrl-C or SIGTERM means while a resource of ours exists on the cluster:

- the first signal raises `Interrupted` in the main thread, so the run unwinds into its
  cleanup (stop the logs, delete unless kept, sweep, exit 130), and says so in one line;
  only if that cleanup is still going HINT_SECONDS later does a second line say what a
  second signal would do (a hint printed when squarepeg has already exited, or is about
  to, would be about nothing: docs/decisions/0140-stop-exits-promptly.md);
- the second signal abandons everything at once: it prints the resource's name and the
  kubectl commands to manage it, ends the kubectl children, gives back what they held
  (`on_abandon`: the terminal `run -it` made raw) and exits 130.

Installed only for the duration of a run (`guard`), never for --dry-run or
--dry-run-server, and never for a signal squarepeg was started with ignored (`nohup`, a
script's `&`): that one goes on being ignored. Python runs signal handlers in the main
thread between bytecodes, so an exception can land anywhere; the first stage therefore
never raises inside a `shield()` (an exit-code extraction in progress, the cleanup itself:
it is raised when the outermost shield ends, if that shield asks for it) nor while
`kubectl.start` is spawning a child (a child started but not yet registered would outlive
squarepeg): there it is redelivered a moment later. Where the main thread is running a
weakref callback or a `__del__` when the signal is handled, Python swallows the raise
("Exception ignored in ...") and goes on as if nothing happened: so the first stage is
redelivered until the run says it caught it (`caught`). Redeliveries come from a thread of
the handler's own, because a signal handler must not start a thread: the main thread may
be inside `Thread.start`, holding the lock a new thread needs. Never decides what cleanup
means: the run does, when `Interrupted` reaches it.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import FrameType

from kubectl_squarepeg import stoppable
from kubectl_squarepeg.cluster import kubectl
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.errors import (
    INTERRUPTED,
    READER_GONE,
    Interrupted,
    ReaderGone,
    SquarepegError,
)
from kubectl_squarepeg.terminal.console import Console

# SIGHUP (the terminal closed, an ssh connection dropped) means what Ctrl-C means.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
HANGUP_EXIT = 128 + signal.SIGHUP
# How long a first-stage interrupt waits before it is retried when it arrived while a
# kubectl child was being spawned; spawning takes a few milliseconds.
_REDELIVER_SECONDS = 0.05
# How long a raised first stage may take to reach the run's `except` before it is raised
# again (it was swallowed; while it is still on its way out, it is left alone).
_UNCAUGHT_SECONDS = 0.2
# How long the first stage's cleanup may take before a line says that a second signal
# abandons it: a cleanup usually ends within 0.1 s (the delete is one request, prepared
# while the container ran), and then there is no second stage to speak of.
HINT_SECONDS = 2.0


class Progress:
    """How far the run got with its resource, as the abandon message must tell it: whether
    the create was confirmed, and whether a delete was already sent. Set by the run, read
    by the signal handler."""

    def __init__(self) -> None:
        self.created = False
        self.delete_sent = False


@dataclass(frozen=True)
class Resource:
    """The run's own Pod or Job, as the abandon message names it."""

    kind: str  # "Pod" or "Job"
    name: str
    target: kubectl.Target
    in_cluster: bool = False
    keep: bool = False

    @property
    def ref(self) -> str:
        return f"{self.kind.lower()}/{self.name}"

    @property
    def commands(self) -> Commands:
        return Commands(self.target, self.in_cluster)

    def describe_command(self) -> str:
        return self.commands.describe(self.kind, self.name)

    def logs_command(self) -> str:
        return self.commands.logs(self.kind, self.name)

    def delete_command(self) -> str:
        return self.commands.delete(self.kind, self.name)

    def get_command(self) -> str:
        return self.commands.get(self.kind, self.name)


def _abandon_process(
    code: int = INTERRUPTED, then: Callable[[], None] | None = None
) -> None:
    """End every kubectl child, run `then` (what must be put back once they are gone: a
    terminal they held), flush what was written, and leave with `code` at once."""
    kubectl.terminate_all()
    if then is not None:
        with suppress(Exception):  # leaving regardless: the exit must not be missed
            then()
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):  # a closed stream: nothing left to save
            stream.flush()
    os._exit(code)


def _spawning(frame: FrameType | None) -> bool:
    """Whether the main thread is inside `kubectl.start` (a child not yet registered) or
    `Thread.start` (an exception there leaves threading's own books broken: a KeyError
    instead of the interrupt)."""
    unsafe = (kubectl.start.__code__, threading.Thread.start.__code__)
    while frame is not None:
        if frame.f_code in unsafe:
            return True
        frame = frame.f_back
    return False


class _Redelivery:
    """Sends a signal to the main thread again a moment later, from a thread of its own
    (started with the handler): the handler only sets a time and an Event."""

    def __init__(self, resend: Callable[[int], None]) -> None:
        self._resend = resend
        self._due: tuple[float, int] | None = None  # (monotonic time, signal)
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(
            target=self._loop, name="interrupt-redelivery", daemon=True
        )
        self._thread.start()

    def later(self, signum: int, seconds: float) -> None:
        self._due = (time.monotonic() + seconds, signum)
        self._wake.set()

    def close(self) -> None:
        self._closed = True
        self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            due = self._due
            if self._closed:
                return
            if due is None:
                continue
            if self._wake.wait(max(0.0, due[0] - time.monotonic())):
                continue  # rescheduled or closed: look again
            if self._due is due:
                self._due = None
                self._resend(due[1])


class _DelayedLine:
    """One line printed `seconds` after `arm` (from a signal handler: it only sets an
    Event), unless `cancel` came first; after `cancel` returns it is never printed. The
    thread is started with the handler, because a signal handler must not start one."""

    def __init__(self, console: Console, seconds: float, text: Callable[[], str]) -> None:
        self._console = console
        self._seconds = seconds
        self._text = text
        self._armed = threading.Event()
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._done = False
        self._thread = threading.Thread(target=self._wait, name="interrupt-hint", daemon=True)
        self._thread.start()

    def arm(self) -> None:
        self._armed.set()

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._cancelled.set()
        self._armed.set()

    def _wait(self) -> None:
        self._armed.wait()
        if self._cancelled.wait(self._seconds):
            return
        with self._lock:
            if not self._done:
                self._done = True
                self._console.warn(self._text())


class TwoStageInterrupt:
    """The handler's state: how many signals arrived and whether one waits to be raised."""

    def __init__(
        self,
        resource: Resource,
        console: Console,
        *,
        abandon: Callable[[], None] | None = None,
        progress: Progress | None = None,
        on_abandon: Callable[[], None] | None = None,
    ) -> None:
        self.resource = resource
        self.progress = progress or Progress()
        self._console = console
        self._abandon = abandon or (lambda: _abandon_process(self.exit_code, on_abandon))
        self._signals = 0
        self._signal_name = ""
        self._pending = False  # a first-stage Interrupted not raised yet
        self._shields = 0
        self._redelivering = False
        self._uncaught = False  # a first-stage Interrupted raised, the run not yet told of it
        self._redelivery: _Redelivery | None = None
        self._hint: _DelayedLine | None = None
        self._previous_unraisable: Callable[[sys.UnraisableHookArgs], object] | None = None
        self._installed = False
        self._previous: dict[int, object] = {}

    @property
    def interrupted(self) -> bool:
        """Whether a signal arrived: the run's exit code is then `exit_code`, whatever else
        happened."""
        return self._signals > 0

    @property
    def exit_code(self) -> int:
        """129 when the first signal was a hang-up, else 130."""
        return HANGUP_EXIT if self._signal_name == "SIGHUP" else INTERRUPTED

    # --- installation ---------------------------------------------------------------

    def install(self) -> bool:
        """Take over SIGINT and SIGTERM; False (and nothing done) outside the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return False
        self._redelivery = _Redelivery(self._redeliver)
        self._hint = _DelayedLine(self._console, HINT_SECONDS, self._still_stopping_message)
        self._previous_unraisable = sys.unraisablehook
        sys.unraisablehook = self._unraisable
        for signum in stoppable(SIGNALS):
            self._previous[signum] = signal.signal(signum, self._handle)
        self._installed = True
        return True

    def uninstall(self) -> None:
        """Give SIGINT and SIGTERM back to whoever had them before."""
        if not self._installed:
            return
        self._installed = False
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)  # type: ignore[arg-type]
        self._previous.clear()
        if self._previous_unraisable is not None:
            sys.unraisablehook = self._previous_unraisable
        if self._redelivery is not None:
            self._redelivery.close()
        self.stopped()

    def stopped(self) -> None:
        """The run's cleanup is over: the hint about a second signal is not printed from
        now on (squarepeg is on its way out, and a second signal would change nothing)."""
        if self._hint is not None:
            self._hint.cancel()

    def _unraisable(self, unraisable: sys.UnraisableHookArgs) -> None:
        """Python's report of an exception it swallowed: not a word of it for the first
        stage's (a traceback the user must not see; it is raised again), the rest as usual."""
        if isinstance(unraisable.exc_value, Interrupted):
            return
        if self._previous_unraisable is not None:
            self._previous_unraisable(unraisable)

    def caught(self) -> None:
        """The run has caught the first stage's Interrupted (or ended otherwise): it is not
        raised again."""
        self._uncaught = False

    # --- shields --------------------------------------------------------------------

    @contextmanager
    def shield(self, *, raise_pending: bool = True) -> Iterator[None]:
        """A block the first stage must not cut into. On leaving the outermost shield, a
        first-stage interrupt that arrived inside it is raised if `raise_pending`."""
        self._shields += 1
        try:
            yield
        finally:
            self._shields -= 1
        if self._shields == 0 and self._pending and raise_pending:
            self._pending = False
            raise self._error()

    # --- the handler ----------------------------------------------------------------

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._redelivering:
            self._redelivering = False
            if self._uncaught:
                if sys.exc_info()[1] is not None:
                    # On its way out (an except or finally on the way): the run catches
                    # it soon; a raise here would cut that block short.
                    self._later(signum, _UNCAUGHT_SECONDS)
                    return
                self._uncaught = False
                self._pending = True  # it was swallowed: raise it again
            self._raise_if_clear(signum, frame)
            return
        self._signals += 1
        if self._signals == 1:
            self._signal_name = signal.Signals(signum).name
            self._console.events.emit("interrupted", signal=self._signal_name)
            self._console.warn(self._first_message())
            if self._hint is not None:
                self._hint.arm()
            self._pending = True
            self._raise_if_clear(signum, frame)
        else:
            self._pending = False
            # The hint is not cancelled: this handler can run inside the first one, which
            # may hold the lock of the hint's Event (`arm`), and taking it again here would
            # hang the process that Ctrl-C must end (seen in CI under load). The closed
            # console keeps the hint from being printed.
            for line in self._abandon_messages():
                self._console.warn(line)
            self._console.close()  # the threads ended next have nothing to add
            self._abandon()

    def _raise_if_clear(self, signum: int, frame: FrameType | None) -> None:
        if not self._pending or self._signals != 1 or self._shields:
            return  # a shield raises it when it ends
        if _spawning(frame):
            self._later(signum, _REDELIVER_SECONDS)
            return
        self._pending = False
        self._uncaught = True
        self._later(signum, _UNCAUGHT_SECONDS)
        raise self._error()

    def _later(self, signum: int, seconds: float) -> None:
        if self._redelivery is not None:
            self._redelivery.later(signum, seconds)

    def _redeliver(self, signum: int) -> None:
        """On the redelivery thread."""
        if self._installed and (self._pending or self._uncaught):
            self._redelivering = True
            _thread.interrupt_main(signal.Signals(signum))

    def _error(self) -> Interrupted:
        return Interrupted(f"interrupted by {self._signal_name}")

    # --- messages -------------------------------------------------------------------

    def _first_message(self) -> str:
        ref = self.resource.ref
        if self.resource.keep:
            return f"interrupted ({self._signal_name}): stopping; {ref} is kept"
        return f"interrupted ({self._signal_name}): stopping and deleting {ref}"

    def _still_stopping_message(self) -> str:
        """Printed only while the cleanup still runs HINT_SECONDS after the first signal."""
        ref = self.resource.ref
        if self.resource.keep:
            return f"still stopping after {HINT_SECONDS:g}s; press Ctrl-C again to exit at once"
        if self.progress.delete_sent:
            return (
                f"still deleting {ref} after {HINT_SECONDS:g}s; press Ctrl-C again to stop "
                "waiting for the API server and exit at once"
            )
        return (
            f"still stopping after {HINT_SECONDS:g}s; press Ctrl-C again to leave {ref} "
            "running and exit at once"
        )

    def _abandon_messages(self) -> list[str]:
        """What is known of the resource, and only that: left running once its create was
        confirmed and no delete sent; may be gone once a delete was sent; may exist while
        the create was in flight."""
        res = self.resource
        where = f"namespace {res.target.namespace}"
        if self.progress.delete_sent:
            return [
                f"interrupted again: cleanup abandoned; a delete of {res.ref} was sent, so it "
                f"may be gone or going; check: {res.get_command()}",
                f"delete it if it is not: {res.delete_command()}",
            ]
        if not self.progress.created:
            return [
                f"interrupted again: cleanup abandoned; {res.ref} may have been created in "
                f"{where}; check: {res.get_command()}",
                f"delete it if it was: {res.delete_command()}",
            ]
        state = "is kept" if res.keep else "is left running"
        return [
            f"interrupted again: cleanup abandoned; {res.ref} {state} in {where}",
            f"inspect it: {res.describe_command()}",
            f"delete it: {res.delete_command()}",
        ]


@contextmanager
def guard(
    resource: Resource,
    console: Console,
    *,
    abandon: Callable[[], None] | None = None,
    progress: Progress | None = None,
    on_abandon: Callable[[], None] | None = None,
) -> Iterator[TwoStageInterrupt]:
    """Install the two-stage handler for the block, and restore the previous handlers.
    `on_abandon` runs on the second stage's way out, after the kubectl children ended."""
    handler = TwoStageInterrupt(
        resource, console, abandon=abandon, progress=progress, on_abandon=on_abandon
    )
    handler.install()
    try:
        yield handler
    finally:
        handler.uninstall()


def guarded(
    resource: Resource,
    console: Console,
    *,
    progress: Progress,
    body: Callable[[TwoStageInterrupt], int],
    finish: Callable[[TwoStageInterrupt, bool], None],
    late_cleanup: Callable[[], None],
    on_abandon: Callable[[], None] | None = None,
    on_success: Callable[[], None] | None = None,
) -> int:
    """`body` under the two-stage handler, then `finish` (the cleanup, shielded: a first
    signal cannot cut it short, a second abandons it); the exit code.

    `body(handler)` gives the run's code; `finish(handler, done)` is told whether the body
    completed. A signal during the body makes the code the signal's whatever else happened;
    a closed stdout (`ReaderGone`) makes it READER_GONE. `on_success` runs once the cleanup
    is over, when the body completed. A first signal in the instant before the body began
    or after the cleanup ended leaves `late_cleanup` to do what is left (it must be a no-op
    when the cleanup ran)."""
    handler: TwoStageInterrupt | None = None
    try:
        with guard(resource, console, progress=progress, on_abandon=on_abandon) as handler:
            done = False
            try:
                code = body(handler)
                done = True
            except Interrupted:
                code = INTERRUPTED
            except ReaderGone:
                code = READER_GONE
            except SquarepegError:
                if not handler.interrupted:
                    raise
                code = INTERRUPTED
            finally:
                handler.caught()
                with handler.shield(raise_pending=False):
                    finish(handler, done)
                handler.stopped()  # no hint about a second signal from here on
            if done and on_success is not None:
                on_success()
            return handler.exit_code if handler.interrupted else code
    except Interrupted:
        # There is nothing (more) to clean up, and the signal's one line has been printed.
        if handler is not None:
            handler.caught()
        late_cleanup()
        return handler.exit_code if handler is not None else INTERRUPTED
