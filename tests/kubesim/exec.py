"""The `pods/exec` subresource: `kubectl exec [-i] [-t] POD -c C -- CMD...` over WebSocket
(v5.channel.k8s.io, then v4), enough for squarepeg's file upload and copy-back (a `tar` fed
on stdin, a `tar` read from stdout) into a running container, init containers included,
and for `kubectl squarepeg exec`: with `tty=true` the command runs on a pty of its own
(ttys.py: its controlling terminal, resized by the resize channel), and a command that
cannot be started (`FailedExec`) is answered as the node answers it.

What is served, as the apiserver and kubelet answer (recorded from kubectl 1.32 against the
real kube-apiserver 1.34 on localkube's kubelet node):
- `GET .../pods/P/exec?command=A&command=B&container=C&stdin=true&stdout=true&stderr=true`
  as a WebSocket upgrade; authorization `create` on `pods/exec` (the apiserver's
  AuthorizePodWebsocketUpgradeCreatePermission, on since 1.31); the same checks as attach
  before the upgrade (pod 404, container name, node assigned, a command given), a container
  that is not running a plain-text 500 `container not found ("C")`.
- The command runs as a new process of the container's kind here: the host's programs in
  the container's mount view (mountns.py: its emptyDir volumes at their mountPath), in the
  container's scratch working directory, with only PATH and HOME in its environment.
- The session is attach's (attach.Session): stdin written as it arrives and closed by the
  v5 close of channel 0; stdout and stderr on channels 1 and 2; at the end, channel 3 with
  Success, or for a non-zero exit the apiserver's Failure `NonZeroExitCode` whose cause
  `ExitCode` kubectl turns into its own exit code. A client that goes away kills the
  command's process group (a node leaves it running; nothing here needs that).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
from typing import TYPE_CHECKING, Any

from tests.kubesim import apierrors, attach, mountns, ttys, websocket
from tests.kubesim.admission import authorize
from tests.kubesim.process import STDERR, STDOUT, OutputListener, ProcessRegistry
from tests.kubesim.transport import Reply, Request, Upgrade

if TYPE_CHECKING:
    from tests.kubesim.api import Route
    from tests.kubesim.server import KubeSim

READ_BYTES = 64 * 1024


def _all_containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod.get("spec") or {}
    return [c for key in ("initContainers", "containers") for c in spec.get(key) or []]


def handle(sim: KubeSim, req: Request, route: Route) -> Reply | Upgrade:
    """Check an exec request; upgrade it to a session running the command, or refuse it."""
    is_websocket = req.method == "GET" and websocket.is_upgrade(
        req.header("Connection"), req.header("Upgrade"))
    if req.method not in ("GET", "POST"):
        raise apierrors.method_not_allowed(req.method, "pods")
    authorize(req.user, "create", "pods", "exec", "", route.namespace, route.name)
    pod = sim.store.get_raw("pods", route.namespace, route.name or "")
    if pod is None:
        raise apierrors.not_found("pods", "", route.name or "")
    containers = {str(c.get("name")): c for c in _all_containers(pod)}
    name = req.param("container") or ""
    regular = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    if not name:
        if len(regular) != 1:
            raise apierrors.bad_request(
                f"a container name must be specified for pod {route.name}, choose one of: "
                f"[{' '.join(regular)}]")
        name = regular[0]
    if name not in containers:
        raise apierrors.bad_request(f"container {name} is not valid for pod {route.name}")
    command = req.query.get("command") or []
    if not command:
        raise apierrors.bad_request("you must specify at least 1 command")
    if not (pod.get("spec") or {}).get("nodeName"):
        raise apierrors.bad_request(f"pod {route.name} does not have a host assigned")
    kubelet = getattr(sim.cluster, "kubelet", None)
    running = kubelet.running_process(route.namespace or "", route.name or "",
                                      pod["metadata"].get("uid"), name) if kubelet else None
    if running is None or kubelet is None:
        return Reply(500, f'container not found ("{name}")'.encode(),
                     "text/plain; charset=utf-8")
    if not is_websocket:
        raise apierrors.bad_request("kubesim speaks WebSocket (v5.channel.k8s.io, "
                                    "v4.channel.k8s.io) for exec, not SPDY/3.1")
    offered = websocket.offered_protocols(req.headers.get_all("Sec-WebSocket-Protocol") or [])
    protocol = websocket.choose_protocol(offered, attach.PROTOCOLS)
    key = req.header("Sec-WebSocket-Key")
    if protocol is None or not key or req.header("Sec-WebSocket-Version") != "13":
        raise apierrors.bad_request(
            "unable to upgrade: a WebSocket version 13 with one of the subprotocols "
            f"{', '.join(attach.PROTOCOLS)} is required")
    pod_dir = os.path.dirname(kubelet.scratch_dir_of(route.namespace or "", route.name or "",
                                                     pod["metadata"].get("uid"), name))
    cwd = os.path.join(pod_dir, name)
    argv = mountns.wrap(pod, containers[name], pod_dir, list(command), cwd)
    process: ExecProcess | FailedExec
    try:
        process = ExecProcess(argv, cwd, kubelet.registry, stdin=attach._flag(req, "stdin"),
                              tty=attach._flag(req, "tty"))
    except OSError as exc:
        process = FailedExec(str(command[0]), exc)
    session = attach.Session(process, protocol, stdin=attach._flag(req, "stdin"),  # type: ignore[arg-type]
                             stdout=attach._flag(req, "stdout"),
                             stderr=attach._flag(req, "stderr"),
                             final_status=lambda: process.status(command))
    return Upgrade({"Upgrade": "websocket", "Connection": "Upgrade",
                    "Sec-WebSocket-Accept": websocket.accept_key(key),
                    "Sec-WebSocket-Protocol": protocol}, session.serve)


class ExecProcess:
    """One exec'd command: a process group of its own, its output sent to the one session
    from the moment it attaches (so nothing is lost), its exit code for the final Status."""

    stdin_once = True

    def __init__(self, argv: list[str], cwd: str, registry: ProcessRegistry, *,
                 stdin: bool, tty: bool = False) -> None:
        self.stdin_enabled = stdin
        self.tty = tty
        self._registry = registry
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "HOME": "/root"}
        self._pty: ttys.Pty | None = None
        if tty:
            # `exec -t`: the command's session has the pty as its controlling terminal, as
            # runc's exec console is: a typed Ctrl-C is its SIGINT, a resize its SIGWINCH.
            env["TERM"] = "xterm"
            self._pty = terminal = ttys.Pty()
            try:
                self._popen = subprocess.Popen(
                    argv, env=env, cwd=cwd, stdin=terminal.slave, stdout=terminal.slave,
                    stderr=terminal.slave, start_new_session=True, close_fds=True,
                    preexec_fn=ttys.make_controlling_terminal)
            except OSError:
                terminal.close()
                raise
            terminal.close_slave()
        else:
            self._popen = subprocess.Popen(
                argv, env=env, cwd=cwd, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                close_fds=True)
        self.pid = self._popen.pid
        registry.add(self)  # type: ignore[arg-type]
        self._listener: OutputListener | None = None
        self._stdin_lock = threading.Lock()
        self.exit_code: int | None = None

    def attach(self, listener: OutputListener) -> bool:
        self._listener = listener
        if self._pty is not None:
            readers = [threading.Thread(target=self._pump_pty, args=(self._pty.master,),
                                        daemon=True)]
        else:
            readers = [threading.Thread(target=self._pump, args=(pipe.fileno(), stream),
                                        daemon=True)
                       for pipe, stream in ((self._popen.stdout, STDOUT),
                                            (self._popen.stderr, STDERR))]
        for reader in readers:
            reader.start()
        threading.Thread(target=self._wait, args=(readers, listener), daemon=True).start()
        return True

    def _pump(self, fd: int, stream: int) -> None:
        while data := os.read(fd, READ_BYTES):
            if self._listener is not None:
                self._listener.output(stream, data)

    def _pump_pty(self, fd: int) -> None:
        with contextlib.suppress(OSError):  # EIO: the terminal's last holder has exited
            self._pump(fd, STDOUT)

    def _wait(self, readers: list[threading.Thread], listener: OutputListener) -> None:
        self.exit_code = self._popen.wait()
        for reader in readers:
            reader.join(5.0)
        if self._pty is not None:
            self._pty.close()
        self._registry.discard(self)  # type: ignore[arg-type]
        listener.ended()

    def detach(self, listener: OutputListener) -> None:
        self._listener = None
        if self._popen.poll() is None:
            self.kill(signal.SIGKILL)

    def write_stdin(self, data: bytes) -> bool:
        if self._pty is not None:
            try:
                os.write(self._pty.master, data)
            except OSError:
                return False
            return True
        with self._stdin_lock:
            stdin = self._popen.stdin
            if stdin is None or stdin.closed:
                return False
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError):
                return False
        return True

    def close_stdin(self) -> None:
        if self._pty is not None:
            self._pty.end_of_input()
            return
        with self._stdin_lock, contextlib.suppress(OSError):
            if self._popen.stdin is not None:
                self._popen.stdin.close()

    def resize(self, rows: int, columns: int) -> None:
        if self._pty is not None:
            self._pty.resize(rows, columns)

    def kill(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def status(self, command: list[str]) -> bytes:
        code = self.exit_code if self.exit_code is not None else self._popen.wait()
        if code == 0:
            return attach.SUCCESS
        code = 128 - code if code < 0 else code
        return json.dumps({
            "metadata": {}, "status": "Failure",
            "message": "command terminated with non-zero exit code: error executing command "
                       f"[{' '.join(command)}], exit code {code}",
            "reason": "NonZeroExitCode",
            "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
        }).encode()


class FailedExec:
    """A command the runtime could not start (not found, not executable): on the node the
    session still opens, then ends at once with the kubelet's InternalError, which kubectl
    prints as `error: Internal error occurred: ...` and exits 1 (recorded on localkube's
    containerd 2.2 and runc 1.4; docker says 127 and 126 for the same two)."""

    tty = False
    stdin_enabled = False
    stdin_once = True

    def __init__(self, command: str, error: OSError) -> None:
        why = ("permission denied" if isinstance(error, PermissionError)
               else "executable file not found in $PATH")
        self.message = (
            "Internal error occurred: error executing command in container: failed to exec "
            f'in container: failed to start exec "{os.urandom(32).hex()}": OCI runtime exec '
            "failed: exec failed: unable to start container process: exec: "
            f'"{command}": {why}')

    def attach(self, listener: OutputListener) -> bool:
        return False  # the session ends at once

    def detach(self, listener: OutputListener) -> None:
        pass

    def write_stdin(self, data: bytes) -> bool:
        return False

    def close_stdin(self) -> None:
        pass

    def resize(self, rows: int, columns: int) -> None:
        pass

    def kill(self, sig: int) -> None:
        pass

    def status(self, command: list[str]) -> bytes:
        return json.dumps({
            "metadata": {}, "status": "Failure",
            "message": f"Internal error occurred: {self.message}",
            "reason": "InternalError", "details": {"causes": [{"message": self.message}]},
            "code": 500,
        }).encode()
