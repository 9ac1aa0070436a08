"""One container's life on the simulated node: image, configuration, process, exit, restarts.

Owns the container status a kubelet writes and the events it records for one container:

- Image (`ensure_image`): a malformed reference waits `InvalidImageName` (events
  InspectFailed, Failed). With pull policy Never an image that is not on the node waits
  `ErrImageNeverPull`. A reference whose name is not in the scenario's catalogue fails to
  pull: waiting `ErrImagePull` with containerd's error text (events Pulling, Failed), shown
  for `err_image_pull_seconds` (option, default 0.5), then `ImagePullBackOff` (events BackOff,
  Failed) until the back-off passes, then it pulls again; the back-off starts at
  `image_pull_backoff_seconds` (default 1) and doubles up to `image_pull_backoff_max_seconds`
  (default 10); real nodes use 10 s and 300 s. A catalogue image with `pull_seconds` keeps the
  container `ContainerCreating` that long (Pulling, then Pulled "Successfully pulled image ...
  in 2s ..."), each time with policy Always, once per node with IfNotPresent; images without
  a pull delay are on every node from the start ("already present on machine").
- Configuration: env and argv from `containerconfig`; a missing Secret or ConfigMap waits
  `CreateContainerConfigError` (retried every `config_retry_seconds`, default 1); an empty
  argv waits `CreateContainerError`.
- Process: events Created and Started, state running (ready, started: no probes are run).
  An argv[0] that cannot be executed ends as terminated `StartError`, exit code 128, with
  runc's message. Exit: terminated with the exit code verbatim, reason Completed (0) or Error;
  a signal N gives 128+N; over the memory limit the monitor SIGKILLs it: `OOMKilled`, 137.
  terminationMessagePolicy FallbackToLogsOnError puts the log's tail in the message of a
  failed container (terminationMessagePath files are not read).
- Restarts (restartPolicy Always, or OnFailure after a failure; init containers unless
  Never): the first restart is immediate, later ones wait in `CrashLoopBackOff` (event
  BackOff) for `crash_backoff_seconds` (option, default 1) doubling up to
  `crash_backoff_max_seconds` (default 10); real nodes use 10 s and 300 s. The log restarts
  empty (LogBook.reset); `lastState` keeps the previous termination.
"""

from __future__ import annotations

import os
import secrets
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

from tests.kubesim import containerconfig, images, mountns
from tests.kubesim.informer import log_exception
from tests.kubesim.process import ContainerProcess
from tests.kubesim.quantities import QuantityError, parse_memory
from tests.kubesim.store import now_rfc3339

if TYPE_CHECKING:
    from tests.kubesim.kubelet import PodWorker

Obj = dict[str, Any]

TERMINATION_MESSAGE_LINES = 80
TERMINATION_MESSAGE_BYTES = 2048


def go_duration(seconds: float) -> str:
    """Go's time.Duration String() of `seconds` truncated to milliseconds."""
    ms = int(seconds * 1000)
    if ms == 0:
        return "0s"
    if ms < 1000:
        return f"{ms}ms"
    minutes, rest = divmod(ms, 60_000)
    text = f"{rest / 1000:.3f}".rstrip("0").rstrip(".") + "s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        text = (f"{hours}h" if hours else "") + f"{minutes}m" + text
    return text


def start_error(argv0: str, error: OSError) -> str:
    """runc's message for a command it cannot start."""
    if isinstance(error, PermissionError):
        detail = f'exec: "{argv0}": permission denied'
    elif "/" in argv0:
        detail = f'exec: "{argv0}": stat {argv0}: no such file or directory'
    else:
        detail = f'exec: "{argv0}": executable file not found in $PATH'
    return ("failed to create containerd task: failed to create shim task: OCI runtime create "
            "failed: runc create failed: unable to start container process: "
            f"{detail}: unknown")


class _LogSink:
    """Where a container's output goes; closed once the pod is forgotten, so a late read
    cannot write into the log of a new pod with the same name."""

    def __init__(self, worker: PodWorker, container: str):
        self._worker = worker
        self._container = container
        self._lock = threading.Lock()
        self._closed = False

    def __call__(self, data: bytes, timestamp: str, moment: Any, stream: str) -> None:
        with self._lock:
            if not self._closed:
                self._worker.kubelet.logbook.append(
                    self._worker.namespace, self._worker.name, self._container, data,
                    timestamp=timestamp, moment=moment, stream=stream)

    def end(self) -> None:
        with self._lock:
            if not self._closed:
                self._worker.kubelet.logbook.end(self._worker.namespace, self._worker.name,
                                                 self._container)

    def close(self) -> None:
        with self._lock:
            self._closed = True


class ContainerRunner:
    """The thread that runs one container of a pod (see the module docstring).

    kind: "init" (runs to completion before the others), "sidecar" (a restartable init
    container) or "regular"."""

    def __init__(self, worker: PodWorker, container: Obj, kind: str):
        self.worker = worker
        self.container = container
        self.name = str(container.get("name", ""))
        self.kind = kind
        self.restart_count = 0
        self.last_state: Obj = {}
        self.process: ContainerProcess | None = None
        self.final: Obj | None = None  # the last terminated state
        self.started = threading.Event()  # first time it ran (sidecars gate the next init)
        self.done = threading.Event()
        self._oom = False
        self._sink = _LogSink(worker, self.name)
        self._crash_backoff = 0.0
        self._pull_backoff = 0.0
        self._image: str | None = None
        self._image_id: str | None = None
        self._thread = threading.Thread(target=self._run,
                                        name=f"kubesim-{worker.name}-{self.name}", daemon=True)

    # -- plumbing --------------------------------------------------------------------------

    @property
    def field_path(self) -> str:
        section = "initContainers" if self.kind != "regular" else "containers"
        return f"spec.{section}{{{self.name}}}"

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    def close_log(self) -> None:
        self._sink.close()

    def kill(self, sig: int) -> None:
        process = self.process
        if process is not None:
            process.kill(sig)

    def running(self) -> bool:
        process = self.process
        return process is not None and not process.exited()

    def _event(self, type_: str, reason: str, message: str) -> None:
        self.worker.event(type_, reason, message, field_path=self.field_path)

    def _opt(self, name: str, default: float) -> float:
        return float(self.worker.kubelet.options.get(name, default))

    def _sleep(self, seconds: float) -> bool:
        """Wait unless the pod is stopping; True when it is."""
        return self.worker.stopping.wait(max(seconds, 0.0))

    def _status(self, state: Obj, *, ready: bool = False, started: bool = False,
                container_id: str | None = None) -> Obj:
        status: Obj = {
            "name": self.name,
            "state": state,
            "lastState": self.last_state,
            "ready": ready,
            "restartCount": self.restart_count,
            "image": self._image or str(self.container.get("image", "")),
            "imageID": self._image_id or "",
            "started": started,
        }
        if container_id:
            status["containerID"] = container_id
        return status

    def _write(self, state: Obj, **kwargs: Any) -> None:
        self.worker.set_container_status(self.kind, self._status(state, **kwargs))

    def _waiting(self, reason: str, message: str | None = None) -> None:
        waiting: Obj = {"reason": reason}
        if message:
            waiting["message"] = message
        self._write({"waiting": waiting})

    # -- the life ----------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:
            log_exception(f"container {self.name} of pod {self.worker.name}")
            self.kill(signal.SIGKILL)
        finally:
            self.done.set()
            self.worker.runner_finished()

    def _loop(self) -> None:
        while not self.worker.stopping.is_set():
            ref = self._ensure_image()
            if ref is None:
                return
            config = self._configure(ref)
            if config is None:
                continue
            terminated = self._run_once(*config)
            self.final = terminated
            if not self._should_restart(terminated):
                return
            delay = self._crash_backoff
            base = self._opt("crash_backoff_seconds", 1.0)
            self._crash_backoff = base if delay == 0 else min(
                delay * 2, self._opt("crash_backoff_max_seconds", 10.0))
            self.last_state = {"terminated": terminated}
            if delay > 0:
                pod = f"{self.worker.name}_{self.worker.namespace}({self.worker.uid})"
                self._waiting("CrashLoopBackOff", f"back-off {go_duration(delay)} restarting "
                              f"failed container={self.name} pod={pod}")
                self._event("Warning", "BackOff",
                            f"Back-off restarting failed container {self.name} in pod {pod}")
                if self._sleep(delay):
                    return
            if self.worker.stopping.is_set():
                return
            self.restart_count += 1
            self.worker.kubelet.logbook.reset(self.worker.namespace, self.worker.name, self.name,
                                              restarts=self.restart_count)

    def _should_restart(self, terminated: Obj) -> bool:
        if self.worker.stopping.is_set():
            return False
        policy = self.worker.spec.get("restartPolicy") or "Always"
        failed = terminated.get("exitCode") != 0
        if self.kind == "sidecar":
            return True
        if self.kind == "init":
            return failed and policy != "Never"
        return policy == "Always" or (policy == "OnFailure" and failed)

    # -- image -------------------------------------------------------------------------------

    def _ensure_image(self) -> images.Reference | None:
        image = str(self.container.get("image", ""))
        try:
            ref = images.parse_reference(image)
        except images.InvalidReference as exc:
            message = f"Failed to apply default image tag {images.quote(image)}: {exc}"
            self._event("Warning", "InspectFailed", message)
            self._event("Warning", "Failed", "Error: InvalidImageName")
            self._waiting("InvalidImageName", message)
            self.worker.stopping.wait()
            return None
        kubelet = self.worker.kubelet
        entry = images.catalogue_entry(kubelet.scenario, ref)
        policy = self.container.get("imagePullPolicy") or images.default_pull_policy(image)
        present = kubelet.image_present(self.worker.node, ref, entry)
        if present and policy != "Always":
            self._event("Normal", "Pulled",
                        f"Container image {images.quote(image)} already present on machine")
            return ref
        if policy == "Never":
            message = (f"Container image {images.quote(image)} is not present with pull policy "
                       "of Never")
            self._event("Warning", "ErrImageNeverPull", message)
            self._event("Warning", "Failed", "Error: ErrImageNeverPull")
            self._waiting("ErrImageNeverPull", message)
            self.worker.stopping.wait()
            return None
        while True:
            if self.worker.stopping.is_set():
                return None
            self._event("Normal", "Pulling", f"Pulling image {images.quote(image)}")
            started = time.monotonic()
            if entry is None:
                if self._sleep(self._opt("pull_failure_seconds", 0.0)):
                    return None
                error = images.pull_error(ref)
                self._event("Warning", "Failed",
                            f"Failed to pull image {images.quote(image)}: {error}")
                self._event("Warning", "Failed", "Error: ErrImagePull")
                self._waiting("ErrImagePull", error)
                delay = self._pull_backoff
                self._pull_backoff = self._opt("image_pull_backoff_seconds", 1.0) if delay == 0 \
                    else min(delay * 2, self._opt("image_pull_backoff_max_seconds", 10.0))
                retry_at = time.monotonic() + self._pull_backoff
                if self._sleep(min(self._opt("err_image_pull_seconds", 0.5), self._pull_backoff)):
                    return None
                message = f"Back-off pulling image {images.quote(image)}"
                self._event("Normal", "BackOff", message)
                self._event("Warning", "Failed", "Error: ImagePullBackOff")
                self._waiting("ImagePullBackOff", message)
                if self._sleep(retry_at - time.monotonic()):
                    return None
                continue
            if self._sleep(entry.pull_seconds):
                return None
            took = go_duration(time.monotonic() - started)
            kubelet.mark_pulled(self.worker.node, ref)
            self._event("Normal", "Pulled",
                        f"Successfully pulled image {images.quote(image)} in {took} ({took} "
                        f"including waiting). Image size: {images.image_size(ref)} bytes.")
            return ref

    # -- configuration -------------------------------------------------------------------------

    def _configure(self, ref: images.Reference) -> tuple[images.Reference, list[str],
                                                         dict[str, str], str] | None:
        kubelet = self.worker.kubelet
        pod = self.worker.pod_snapshot()
        try:
            env = containerconfig.build_env(
                pod, self.container, secrets=kubelet.scenario.secrets,
                configmaps=kubelet.scenario.configmaps,
                node_allocatable=kubelet.node_allocatable(self.worker.node))
        except containerconfig.ConfigError as exc:
            self._config_error("CreateContainerConfigError", str(exc))
            return None
        entry = images.catalogue_entry(kubelet.scenario, ref)
        entrypoint = list(entry.entrypoint) if entry else []
        cmd = list(entry.cmd) if entry else []
        argv = containerconfig.resolve_argv(self.container, entrypoint, cmd, env)
        if not argv:
            self._config_error("CreateContainerError",
                               f'failed to generate container "{secrets.token_hex(32)}" spec: '
                               "failed to generate spec: no command specified")
            return None
        cwd = containerconfig.working_dir(self.container, self.worker.scratch_dir(self.name))
        return ref, argv, env, cwd

    def _config_error(self, reason: str, message: str) -> None:
        self._event("Warning", "Failed", f"Error: {message}")
        self._waiting(reason, message)
        self._sleep(self._opt("config_retry_seconds", 1.0))

    # -- one run -------------------------------------------------------------------------------

    def _memory_limit(self) -> int | None:
        limit = ((self.container.get("resources") or {}).get("limits") or {}).get("memory")
        if limit is None:
            return None
        try:
            return parse_memory(str(limit))
        except QuantityError:
            return None

    def _on_oom(self, usage: int) -> None:
        self._oom = True
        self.kill(signal.SIGKILL)

    def _run_once(self, ref: images.Reference, argv: list[str], env: dict[str, str],
                  cwd: str) -> Obj:
        kubelet = self.worker.kubelet
        container_id = "containerd://" + secrets.token_hex(32)
        self._image, self._image_id = ref.normalized, ref.image_id
        self._oom = False
        self._event("Normal", "Created", f"Created container: {self.name}")
        started_at = now_rfc3339()
        try:
            pod_dir = os.path.dirname(self.worker.scratch_dir(self.name))
            process = ContainerProcess(
                mountns.wrap(self.worker.pod_snapshot(), self.container, pod_dir, argv, cwd),
                env, cwd, self._sink, kubelet.registry,
                stdin=bool(self.container.get("stdin")),
                stdin_once=bool(self.container.get("stdinOnce")),
                tty=bool(self.container.get("tty")))
        except OSError as exc:
            message = start_error(argv[0], exc)
            self._event("Warning", "Failed", f"Error: {message}")
            terminated = {"containerID": container_id, "exitCode": 128, "reason": "StartError",
                          "message": message, "startedAt": "1970-01-01T00:00:00Z",
                          "finishedAt": now_rfc3339()}
            self._write({"terminated": terminated}, container_id=container_id)
            self._sink.end()
            self.started.set()
            return terminated
        self.process = process
        if self.worker.stopping.is_set():
            # The pod began terminating while this one started: it gets the signal too.
            self.worker.signal_new_process(process)
        limit = self._memory_limit()
        if limit is not None:
            kubelet.monitor.watch(process.pid, limit, self._on_oom)
        self._event("Normal", "Started", f"Started container {self.name}")
        self._write({"running": {"startedAt": started_at}}, ready=True, started=True,
                    container_id=container_id)
        self.started.set()
        code = process.wait()
        kubelet.monitor.unwatch(process.pid)
        finished_at = now_rfc3339()
        self._sink.end()
        if self._oom:
            exit_code, reason = 137, "OOMKilled"
        elif code < 0:
            exit_code, reason = 128 - code, "Error"
        else:
            exit_code, reason = code, "Completed" if code == 0 else "Error"
        terminated = {"containerID": container_id, "exitCode": exit_code, "reason": reason,
                      "startedAt": started_at, "finishedAt": finished_at}
        if exit_code != 0 and self.container.get(
                "terminationMessagePolicy") == "FallbackToLogsOnError":
            message = self._log_tail()
            if message:
                terminated["message"] = message
        self._write({"terminated": terminated}, container_id=container_id)
        return terminated

    def _log_tail(self) -> str:
        data = b"".join(self.worker.kubelet.logbook.read(
            self.worker.namespace, self.worker.name, self.name,
            tail_lines=TERMINATION_MESSAGE_LINES, request=False))
        return data[-TERMINATION_MESSAGE_BYTES:].decode("utf-8", "replace")
