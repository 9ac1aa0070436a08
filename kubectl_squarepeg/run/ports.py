"""`-p`: the local ports of a run, checked before the create, and `kubectl port-forward` to
the pod while its container runs (docs/decisions/0230, docs/detached-runs.md's sibling
section in the README).

Owns three things:
- `reserve`: before anything is created, each HOST_PORT given is bound once on its address
  (with SO_REUSEADDR, as kubectl's Go listener binds), so a port taken by another program
  is one error line and exit 125 with nothing created; an empty HOST_PORT gets a free port
  here, so a restarted forward listens on the same one;
- `Forwarding`: one `kubectl port-forward --address ADDRESS` per local address, started once
  the container runs, each on a thread of its own that started it and waits for it (the
  parent-death signal goes with the thread that started a child, cluster/kubectl.py). Once
  kubectl says `Forwarding from`, the ports are announced (`squarepeg: 127.0.0.1:8080 ->
  80/tcp`, shown even with -q: an empty HOST_PORT's number is only known there). A forward
  that ends while the run lasts (kubectl's tunnel drops now and then, and kubectl ends
  after any connection the pod refused, such as one made before the server listens) is
  started again, with a pause that doubles up to
  RESTART_MAX_PAUSE; a warning says so once per drop;
- a forward whose first kubectl ends before it listened never worked (the cluster refuses
  port-forward, permissions, a port taken meanwhile): the run fails with kubectl's reason
  (`failure`, raised by the runner between its waits, as a refused attach is), exit 125.

The forwards stop when the container ends (docker closes a container's ports when it exits),
at the run's cleanup, and on Ctrl-C (the cleanup, and terminate_all after it).
"""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Sequence
from contextlib import ExitStack

from kubectl_squarepeg.cluster import kubectl, verbs
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.errors import ClusterError, UsageError
from kubectl_squarepeg.plan.ports import PublishedPort, by_address
from kubectl_squarepeg.terminal.console import Console

SLICE_SECONDS = 0.2
RESTART_FIRST_PAUSE, RESTART_MAX_PAUSE = 0.2, 4.0
STOP_JOIN_SECONDS = 5.0
_FORWARDING = b"Forwarding from "


def _where(port: PublishedPort) -> str:
    return f"[{port.address}]" if ":" in port.address else port.address


def reserve(published: Sequence[PublishedPort]) -> tuple[PublishedPort, ...]:
    """The ports as they will be forwarded: each given HOST_PORT checked free on its address,
    each empty one replaced by a free port. Raises UsageError (nothing is created yet)."""
    chosen: list[PublishedPort] = []
    with ExitStack() as held:  # every socket stays bound until all are chosen: no repeats
        for port in published:
            family = socket.AF_INET6 if ":" in port.address else socket.AF_INET
            try:  # creating an IPv6 socket fails too, on a machine without IPv6
                sock = held.enter_context(socket.socket(family, socket.SOCK_STREAM))
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((port.address, port.host_port))
                sock.listen(1)  # a listener conflicts as kubectl's would, even with REUSEADDR
            except OSError as exc:
                raise _refusal(port, exc) from None
            host_port = sock.getsockname()[1]
            chosen.append(PublishedPort(port.address, host_port, port.container_port))
    return tuple(chosen)


def _refusal(port: PublishedPort, exc: OSError) -> UsageError:
    local = f"{_where(port)}:{port.host_port}"
    given = f"-p {local}:{port.container_port}"
    if exc.errno == errno.EADDRINUSE:
        return UsageError(
            f"local port {local} is already in use ({given})",
            "stop what listens there, or publish another HOST_PORT (`-p "
            f":{port.container_port}` takes a free one)",
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return UsageError(
            f"{port.address} is not an address of this machine ({given})",
            "give 127.0.0.1, 0.0.0.0 or an address of one of this machine's interfaces",
        )
    if exc.errno == errno.EACCES:
        return UsageError(
            f"local port {local} needs privileges to listen on ({given})",
            "publish a HOST_PORT above 1023",
        )
    return UsageError(
        f"cannot listen on local port {local} ({given}): {exc.strerror or exc}",
        "publish another HOST_PORT",
    )


def _nothing_listened(stderr: bytes) -> bool:
    """Whether kubectl ended after a connection the pod refused: `an error occurred
    forwarding 8080 -> 80: error forwarding port 80 to pod ...: dial tcp4 127.0.0.1:80:
    connect: connection refused`, then `error: lost connection to pod` (seen with kubectl
    1.32 on localkube's kubelet node)."""
    return b"error forwarding port" in stderr and b"connection refused" in stderr


class _Forward:
    """One `kubectl port-forward --address ADDRESS` for the ports of one address, kept up
    from `start` to `stop` on a thread of its own."""

    def __init__(
        self,
        target: kubectl.Target,
        pod: str,
        ports: list[PublishedPort],
        console: Console,
        commands: Commands,
        instead: str = "run without -p",
    ) -> None:
        self._instead = instead
        self._target = target
        self._pod = pod
        self._ports = ports
        self._address = ports[0].address
        self._console = console
        self._commands = commands
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._pending = b""
        self._listening = 0  # `Forwarding from` lines of the current kubectl
        self._up = False  # the current kubectl listens on every port
        self._was_down = False
        self.ever_listened = False
        self.failure: ClusterError | None = None
        self._thread = threading.Thread(
            target=self._keep_up, name=f"port-forward-{self._address}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(STOP_JOIN_SECONDS)

    def _on_stdout(self, chunk: bytes) -> None:
        """kubectl's stdout (on the reader thread): count its `Forwarding from` lines."""
        with self._lock:
            self._pending += chunk
            *lines, self._pending = self._pending.split(b"\n")
            for line in lines:
                if line.startswith(_FORWARDING):
                    self._listening += 1
            if self._up or self._listening < len(self._ports):
                return
            self._up = True
            first = not self.ever_listened
            self.ever_listened = True
            was_down, self._was_down = self._was_down, False
        if first:
            for port in self._ports:
                self._console.notice(port.shown())
        elif was_down:
            self._console.status(f"port-forward to pod/{self._pod} is back")

    def _keep_up(self) -> None:
        pause = RESTART_FIRST_PAUSE
        while not self._stopping.is_set():
            with self._lock:
                self._listening, self._pending, self._up = 0, b"", False
            child = verbs.port_forward(
                self._target,
                self._pod,
                self._address,
                [(p.host_port, p.container_port) for p in self._ports],
                on_stdout=self._on_stdout,
            )
            while child.wait(SLICE_SECONDS) is None:
                if self._stopping.is_set():
                    child.terminate()
                    return
            if self._stopping.is_set():
                return
            reason = kubectl.Result(child.argv, child.exit_code or 0, b"", child.stderr)
            refused_inside = _nothing_listened(child.stderr)
            with self._lock:
                listened, was_up = self.ever_listened, self._up
                warn = not refused_inside and not self._was_down
                self._was_down = self._was_down or not refused_inside
            if not listened:
                self.failure = self._never_forwarded(reason.error_text)
                return
            if refused_inside:
                # The user's own connection reached a port nothing listens on in the pod
                # (yet): kubectl ends after it ("lost connection to pod"); nothing dropped.
                self._console.status(
                    f"port-forward to pod/{self._pod}: a connection found nothing listening "
                    "in the container; kubectl ended after it, starting it again"
                )
            elif warn:
                self._console.warn(
                    f"port-forward to pod/{self._pod} dropped ({reason.error_text}); "
                    "starting it again"
                )
            # A kubectl that had listened gets a prompt successor; one that could not even
            # start (the API server is restarting, say) a pause that doubles.
            pause = RESTART_FIRST_PAUSE if was_up else min(pause * 2, RESTART_MAX_PAUSE)
            if self._stopping.wait(pause):
                return

    def _never_forwarded(self, reason: str) -> ClusterError:
        ports = ", ".join(port.shown() for port in self._ports)
        command = self._commands.kubectl("auth", "can-i", "create", "pods/portforward")
        return ClusterError(
            f"cannot publish {ports}: kubectl port-forward to pod/{self._pod} failed: {reason}",
            "the cluster must serve port-forward and let you use it "
            f"(`{command}` checks); {self._instead}",
        )


class Forwarding:
    """Every -p of a run: one `_Forward` per local address."""

    def __init__(
        self,
        target: kubectl.Target,
        pod: str,
        published: Sequence[PublishedPort],
        console: Console,
        commands: Commands,
        instead: str = "run without -p",
    ) -> None:
        self._forwards = [
            _Forward(target, pod, ports, console, commands, instead)
            for ports in by_address(tuple(published)).values()
        ]

    def start(self) -> None:
        for forward in self._forwards:
            forward.start()

    def stop(self) -> None:
        for forward in self._forwards:
            forward._stopping.set()  # all at once, then each waited for
        for forward in self._forwards:
            forward.stop()

    @property
    def failure(self) -> ClusterError | None:
        """Why a forward never worked, if one did not."""
        return next((f.failure for f in self._forwards if f.failure is not None), None)
