"""The two-stage SIGINT/SIGTERM handler that guards a run ("Interrupt handling" in the spec).

Owns what Ctrl-C or SIGTERM means while a resource of ours exists on the cluster:

- the first signal raises `Interrupted` in the main thread, so the run unwinds into its
  cleanup (stop the logs, delete unless kept, sweep, exit 130), and says that a second
  one leaves the resource running;
- the second signal abandons everything at once: it prints the resource's name and the
  kubectl commands to manage it, ends the kubectl children and exits 130.

Installed only for the duration of a run (`guard`), never for --dry-run or
--dry-run-server. Python runs signal handlers in the main thread between bytecodes, so an
exception can land anywhere; the first stage therefore never raises inside a `shield()`
(an exit-code extraction in progress, the cleanup itself: it is raised when the outermost
shield ends, if that shield asks for it) nor while `kubectl.start` is spawning a child (a
child started but not yet registered would outlive squarepeg): there it is redelivered a
moment later. Never decides what cleanup means: the run does, when `Interrupted` reaches it.
"""

from __future__ import annotations

import _thread
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import FrameType

from kubectl_squarepeg import kubectl
from kubectl_squarepeg.console import Console
from kubectl_squarepeg.errors import INTERRUPTED, Interrupted

SIGNALS = (signal.SIGINT, signal.SIGTERM)
# How long a first-stage interrupt waits before it is retried when it arrived while a
# kubectl child was being spawned; spawning takes a few milliseconds.
_REDELIVER_SECONDS = 0.05


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

    def _kubectl(self, *args: str) -> str:
        # An in-cluster run's kubeconfig is a temporary file that is gone once squarepeg
        # exits, and it has no context: the user's own kubectl in that pod needs neither.
        own = kubectl.Target(namespace=self.target.namespace)
        target = own if self.in_cluster else self.target
        return shlex.join(["kubectl", *args, *target.global_args()])

    def describe_command(self) -> str:
        return self._kubectl("describe", self.kind.lower(), self.name)

    def logs_command(self) -> str:
        ref = self.name if self.kind == "Pod" else self.ref
        return self._kubectl("logs", ref, "-c", "main")

    def delete_command(self) -> str:
        extra = ("--cascade=background",) if self.kind == "Job" else ()
        return self._kubectl("delete", self.kind.lower(), self.name, *extra)


def _abandon_process() -> None:
    """End every kubectl child, flush what was written, and leave with 130 at once."""
    kubectl.terminate_all()
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):  # a closed stream: nothing left to save
            stream.flush()
    os._exit(INTERRUPTED)


def _spawning(frame: FrameType | None) -> bool:
    """Whether the main thread is inside `kubectl.start` (a child not yet registered)."""
    start_code = kubectl.start.__code__
    while frame is not None:
        if frame.f_code is start_code:
            return True
        frame = frame.f_back
    return False


class TwoStageInterrupt:
    """The handler's state: how many signals arrived and whether one waits to be raised."""

    def __init__(
        self,
        resource: Resource,
        console: Console,
        *,
        abandon: Callable[[], None] = _abandon_process,
    ) -> None:
        self.resource = resource
        self._console = console
        self._abandon = abandon
        self._signals = 0
        self._signal_name = ""
        self._pending = False  # a first-stage Interrupted not raised yet
        self._shields = 0
        self._redelivering = False
        self._installed = False
        self._previous: dict[int, object] = {}

    @property
    def interrupted(self) -> bool:
        """Whether a signal arrived: the run's exit code is then 130, whatever else happened."""
        return self._signals > 0

    # --- installation ---------------------------------------------------------------

    def install(self) -> bool:
        """Take over SIGINT and SIGTERM; False (and nothing done) outside the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return False
        for signum in SIGNALS:
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
            self._raise_if_clear(signum, frame)
            return
        self._signals += 1
        self._signal_name = signal.Signals(signum).name
        if self._signals == 1:
            self._console.warn(self._first_message())
            self._pending = True
            self._raise_if_clear(signum, frame)
        else:
            self._pending = False
            for line in self._abandon_messages():
                self._console.warn(line)
            self._abandon()

    def _raise_if_clear(self, signum: int, frame: FrameType | None) -> None:
        if not self._pending or self._signals != 1 or self._shields:
            return  # a shield raises it when it ends
        if _spawning(frame):
            timer = threading.Timer(_REDELIVER_SECONDS, self._redeliver, args=(signum,))
            timer.daemon = True
            timer.start()
            return
        self._pending = False
        raise self._error()

    def _redeliver(self, signum: int) -> None:
        if self._installed and self._pending:
            self._redelivering = True
            _thread.interrupt_main(signal.Signals(signum))

    def _error(self) -> Interrupted:
        return Interrupted(f"interrupted by {self._signal_name}")

    # --- messages -------------------------------------------------------------------

    def _first_message(self) -> str:
        ref = self.resource.ref
        if self.resource.keep:
            return (
                f"interrupted ({self._signal_name}): stopping; {ref} is kept; "
                "press Ctrl-C again to stop at once"
            )
        return (
            f"interrupted ({self._signal_name}): stopping, deleting {ref} and sweeping "
            f"orphans; press Ctrl-C again to leave {ref} running"
        )

    def _abandon_messages(self) -> list[str]:
        res = self.resource
        return [
            f"interrupted again: cleanup abandoned; {res.ref} is left running in "
            f"namespace {res.target.namespace}",
            f"inspect it: {res.describe_command()}",
            f"delete it: {res.delete_command()}",
        ]


@contextmanager
def guard(
    resource: Resource,
    console: Console,
    *,
    abandon: Callable[[], None] = _abandon_process,
) -> Iterator[TwoStageInterrupt]:
    """Install the two-stage handler for the block, and restore the previous handlers."""
    handler = TwoStageInterrupt(resource, console, abandon=abandon)
    handler.install()
    try:
        yield handler
    finally:
        handler.uninstall()
