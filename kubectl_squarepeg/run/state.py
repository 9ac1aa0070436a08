"""The state one run's phases share, passed to each of them explicitly.

Owns `RunState`: what is fixed once the plan and the connection are known (the plan, the
target, the console, the resource the interrupt handler names, the shields that keep a step
whole), and what the phases find out and hand on, grouped by the phase that sets it: the
create phase (run/create.py: created, uid, the watch), the output phase (run/output.py: the
log follower, the attach, the terminal session, the port-forward, the head check) and the
cleanup phase (run/cleanup.py: the prepared delete, the sweep, whether the resource is kept
for its output). The phases never import each other: the executor (run/runner.py, and
run/detached.py for `run -d`) orders them, and this object is all they share. Also the
Protocols through which a phase sees the others' helpers (a log follower, the shields).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from kubectl_squarepeg.run import interrupt, podevents, watch

if TYPE_CHECKING:
    from kubectl_squarepeg.cluster import kubectl
    from kubectl_squarepeg.cluster.commands import Commands
    from kubectl_squarepeg.cluster.connect import Connection
    from kubectl_squarepeg.files.upload import Checked
    from kubectl_squarepeg.plan.manifest import Plan
    from kubectl_squarepeg.run import ports, sweep
    from kubectl_squarepeg.run.eventlog import PodPhases
    from kubectl_squarepeg.run.exactout import ExactOut
    from kubectl_squarepeg.run.files import FileTransfer
    from kubectl_squarepeg.run.heartbeat import Heartbeat
    from kubectl_squarepeg.run.loghead import HeadCheck
    from kubectl_squarepeg.terminal import session as terminal
    from kubectl_squarepeg.terminal.console import Console
    from kubectl_squarepeg.terminal.eventstream import EventSink


class Follower(Protocol):
    """What the run needs of a log follower (logs.LogFollower)."""

    reader_gone: bool  # stdout was closed by its reader (`| head -1`)
    lost: str | None  # what the output is missing, if anything (a gap, or the rest)

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def join(self, timeout: float | None = None) -> bool: ...
    def finish(self, quiet_seconds: float, limit_seconds: float | None = None) -> bool: ...
    def pod_is_gone(self) -> None: ...
    def node_silent(self, node: str | None) -> None: ...
    @property
    def first_timestamp(self) -> bytes: ...  # of the output's first line, b"" before it


class Shields(Protocol):
    """The part of interrupt.TwoStageInterrupt the run uses to keep a step whole."""

    def shield(self, *, raise_pending: bool = True) -> contextlib.AbstractContextManager[None]: ...


class NoShields:
    def shield(self, *, raise_pending: bool = True) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


@dataclass
class RunState:
    """One run's resource on the cluster, from its create to its cleanup, as the phases
    share it."""

    plan: Plan
    connection: Connection
    console: Console
    resource: interrupt.Resource
    out: BinaryIO
    shields: Shields = field(default_factory=NoShields)
    follower_factory: Callable[..., Follower] | None = None
    stdin_fd: int = 0  # squarepeg's own stdin: what -i hands to kubectl attach
    progress: interrupt.Progress = field(default_factory=interrupt.Progress)
    events: Callable[[str], list[Mapping[str, Any]]] = field(default=lambda pod: [])
    files: FileTransfer | None = None  # -v SRC:DST (run/files.py)
    phases: PodPhases | None = None  # the pod's phases as --events lines (run/eventlog.py)
    main_held: bool = False  # until the upload has completed, `main` waits in the pod
    # the create phase
    created: bool = False
    uid: str | None = None
    watch: watch.PodWatch | None = None
    heartbeat: Heartbeat | None = None  # while the run goes on (run/heartbeat.py)
    # the output phase
    container_running: bool = False
    grace_seconds: int | None = None
    logs: Follower | None = None
    attach: kubectl.Child | None = None
    attach_failed_at: float | None = None
    terminal: terminal.TerminalSession | None = None
    tty_log_out: Any = None  # -t without -i: the log's line ends, converted
    exact_out: ExactOut | None = None  # -i without -t: the log's dropped `\r`s put back
    head: HeadCheck | None = None  # whether the log's head was rotated away
    head_lost: str | None = None
    forwarding: ports.Forwarding | None = None
    # the cleanup phase
    pending_delete: tuple[kubectl.Child, kubectl.HeldStdin] | None = None
    sweep: sweep.SweepHandle | None = None
    keep_for_output: bool = False
    # The node that stopped answering under the run: its pod is force-deleted (0410).
    node_lost: str | None = None
    # What the cleanup of a run stopped early (a signal, a closed pipe) must tell: that
    # the container was still running, and the grace period it now has to exit.
    stopped_early: bool = False
    cleaned: bool = False

    @property
    def sink(self) -> EventSink:
        """Where the run's --events lines go (a null sink without the flag)."""
        return self.console.events

    @property
    def target(self) -> kubectl.Target:
        return self.connection.target

    @property
    def namespace(self) -> str:
        return self.connection.namespace

    @property
    def commands(self) -> Commands:
        return self.resource.commands

    @property
    def reader_gone(self) -> bool:
        """stdout's reader went away (`| head -1`): the run stopped early."""
        return self.logs is not None and self.logs.reader_gone


def new_state(
    plan: Plan,
    connection: Connection,
    console: Console,
    *,
    out: BinaryIO | None = None,
    follower: Callable[..., Follower] | None = None,
    files_checked: Checked | None = None,
) -> RunState:
    """The state of a run about to be created."""
    resource = interrupt.Resource(
        plan.kind,
        plan.name,
        connection.target,
        in_cluster=connection.in_cluster,
        keep=plan.options.keep,
    )
    state = RunState(
        plan,
        connection,
        console,
        resource,
        out if out is not None else sys.stdout.buffer,
        follower_factory=follower,
        events=podevents.warning_events(connection.target),
        main_held=files_checked is not None,
    )
    from kubectl_squarepeg.run.eventlog import PodPhases

    state.phases = PodPhases(console.events, state.events)
    if files_checked is not None:
        from kubectl_squarepeg.run.files import FileTransfer

        state.files = FileTransfer(
            files_checked, connection.target, state.commands, console,
            owner_kept=plan.options.user is None,
        )
    return state
