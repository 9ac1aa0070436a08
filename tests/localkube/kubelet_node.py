"""The kubelet node of localkube (the default node; `scripts/localkube serve`): the real
kubelet, containerd, runc and CNI bridge, with images made on the machine in a local registry.

Owns the node's configuration (rendered by the pure functions at the top), starting it and,
above all, leaving nothing behind. What it sets up, all per instance (named by the launcher's
pid, so two can run at once):
- a network namespace of its own (netns.py) holding the kubelet, containerd, the registry,
  the CNI bridge and the pods, joined to the host by one veth whose /24 overlaps no address
  or route of the machine; the kubelet refuses a loopback node IP ("nodeIP can't be loopback
  address") and the API server reaches a kubelet only at its node's InternalIP, so the
  kubelet listens on the node's end of the veth (port 10250: the namespace is the node's
  own); it reaches the API server through the launcher's forwarder on 127.0.0.1 inside;
- cgroup roots `/localkube-PID` in every mounted hierarchy (cgroup v1, driver cgroupfs),
  under which the kubelet makes `kubepods`: every process in them is a pod's, so stopping
  kills exactly those;
- `crane registry serve` on 127.0.0.1:5000 inside the namespace, holding `alpine` (latest,
  3, 3.19, 3.20) and `busybox` (busybox-static images from node_image) and `python` (latest,
  3, 3.11: busybox plus the machine's Debian python3.11), which containerd uses for
  `docker.io`: `alpine` pulls as on any cluster and a typo'd image fails with a real
  ErrImagePull;
- containerd with its root, state, socket and netns mounts in the state directory and
  `restrict_oom_score_adj` (this machine lacks CAP_SYS_RESOURCE, without which runc cannot
  give the sandbox oom_score_adj -998);
- the kubelet (the admin kubeconfig; anonymous access with AlwaysAllow on its port, as the API
  server has no kubelet client certificate; `failCgroupV1: false`, `failSwapOn: false`).
- its pod logs, kept in the state directory, bound at /var/log/pods while it runs: the
  kubelet's /logs/ endpoint (nodes/proxy) serves only /var/log.
`restart` is the node's faults (`ctl restart-kubelet`, `restart-containerd`): one component
stopped and started again with the same argv, the containers checked alive across it.
`stop` kills the pods' processes (through the cgroups), deletes containerd's tasks, stops
the kubelet, containerd, the shims it started and the registry, unmounts everything under
the state directory, removes the cgroups, the veth and the namespace. See
tests/localkube/README.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.localkube import node_build, node_image
from tests.localkube.build import BuildError
from tests.localkube.netns import (
    BRIDGE,
    ApiForwarder,
    NetworkError,
    NodeNetwork,
    call_inside,
)
from tests.localkube.processes import SERVICE_CIDR, Component, StartError, wait_for

CGROUP_MOUNTS = Path("/sys/fs/cgroup")
CONTAINER_LOG_LINKS = Path("/var/log/containers")
# Where the kubelet's /logs/ endpoint (nodes/proxy) finds pod logs: it serves /var/log only.
POD_LOG_VIEW = Path("/var/log/pods")
CNI_RESULTS = Path("/var/lib/cni/results")
SANDBOX_IMAGE = "registry.k8s.io/pause:3.10.1"
BUSYBOX_TAGS: dict[str, tuple[str, ...]] = {
    "library/alpine": ("latest", "3", "3.19", "3.20"), "library/busybox": ("latest",)}
PYTHON_TAGS: dict[str, tuple[str, ...]] = {"library/python": ("latest", "3", "3.11")}
REGISTRY = "127.0.0.1:5000"
KUBELET_PORT = 10250
KUBELET_HEALTHZ_PORT = 10248
CLUSTER_DNS = "10.0.0.10"
SHIM = "containerd-shim-runc-v2"
# A restarted node component gets this long after SIGTERM before SIGKILL: the kubelet and
# containerd end within it (their own shutdown); the pods are not theirs to stop.
RESTART_GRACE_SECONDS = 5.0
CONTAINER_WAIT_SECONDS = 60.0


# -- configuration (pure) -------------------------------------------------------------------


def containerd_config(state: Path, bin_dir: Path) -> str:
    runtime = '[plugins."io.containerd.cri.v1.runtime"]'
    images = '[plugins."io.containerd.cri.v1.images"]'
    return f'''version = 3
root = "{state / 'root'}"
state = "{state / 'state'}"

[grpc]
  address = "{state / 'containerd.sock'}"

[ttrpc]
  address = "{state / 'containerd.sock.ttrpc'}"

{runtime}
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "{bin_dir / 'runc'}"
        Root = "{state / 'runc'}"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["{bin_dir}"]
    conf_dir = "{state / 'cni'}"

{images}
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{SANDBOX_IMAGE}"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "{state / 'certs.d'}"

[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
'''


def hosts_toml(registry: str) -> str:
    return f'server = "http://{registry}"\n\n[host."http://{registry}"]\n' \
           f'  capabilities = ["pull", "resolve"]\n'


def cni_conflist(bridge: str, subnet: str, ipam_dir: Path) -> str:
    return json.dumps({"cniVersion": "1.0.0", "name": "localkube", "plugins": [{
        "type": "bridge", "bridge": bridge, "isGateway": True, "ipMasq": False,
        "ipam": {"type": "host-local", "ranges": [[{"subnet": subnet}]],
                 # The Service range through the bridge: the kubernetes Service's address
                 # answers in the node's namespace (service_address.py).
                 "routes": [{"dst": SERVICE_CIDR}],
                 "dataDir": str(ipam_dir)}}]}, indent=1)


def kubelet_config(address: str, port: int, healthz_port: int, socket: Path,
                   cgroup_root: str, pod_logs: Path) -> dict[str, Any]:
    return {
        # Not the shared /var/log/pods: a kubelet's container GC removes every pod log
        # directory there of a pod it does not know, i.e. another instance's pods' logs.
        "podLogsDir": str(pod_logs),
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": address, "port": port, "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1", "healthzPort": healthz_port,
        "cgroupDriver": "cgroupfs", "cgroupRoot": cgroup_root,
        "failSwapOn": False, "failCgroupV1": False,
        "containerRuntimeEndpoint": f"unix://{socket}",
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "clusterDomain": "cluster.local", "clusterDNS": [CLUSTER_DNS], "resolvConf": "",
        # The machine is shared and busy: only a nearly full disk or memory evicts.
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%",
                         "imagefs.available": "1%"},
        "makeIPTablesUtilChains": False, "serializeImagePulls": False,
    }


def top_mount_id(mountinfo: str, point: Path) -> str | None:
    """The id of the mount that is seen at `point` (the last mounted there), if any."""
    found = None
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4].replace("\\040", " ") == str(point):
            found = fields[0]
    return found


def mounts_under(mountinfo: str, root: Path) -> list[str]:
    """Mount points at or below `root` in /proc/self/mountinfo's text, deepest first."""
    prefix = str(root).rstrip("/")
    points = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4:
            point = fields[4].replace("\\040", " ")
            if point == prefix or point.startswith(prefix + "/"):
                points.append(point)
    return sorted(set(points), key=lambda p: (-p.count("/"), p))


# -- the running node ---------------------------------------------------------------------------


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=120)
    if done.returncode != 0:
        raise StartError(f"{what} failed (exit {done.returncode}): {' '.join(argv)}\n"
                         f"{(done.stderr or done.stdout).strip()}")
    return done.stdout


def _cgroup_hierarchies() -> list[Path]:
    hierarchies = []
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[2] in ("cgroup", "cgroup2") and fields[1].startswith(str(CGROUP_MOUNTS)):
                hierarchies.append(Path(fields[1]))
    return hierarchies


def python_libraries(ldd_outputs: list[str]) -> list[Path]:
    """The absolute paths `ldd` names (`libc.so.6 => /lib/.../libc.so.6 (0x...)` and the
    loader's `/lib64/ld-linux-x86-64.so.2 (0x...)`), each once, sorted."""
    found = set()
    for text in ldd_outputs:
        for line in text.splitlines():
            match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
            if match:
                found.add(match.group(1))
    return sorted(Path(path) for path in found)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class KubeletNode:
    """One kubelet node: its files under `state`, its processes, namespace, links, cgroups."""

    def __init__(self, state: Path, kubeconfig: Path, log: Callable[[str], Path],
                 node_name: str, api_port: int) -> None:
        self.state = state
        self.kubeconfig = kubeconfig
        self.bin = node_build.bin_dir()
        self.node_name = node_name
        self.api_port = api_port
        self.network = NodeNetwork(state, SERVICE_CIDR)
        self.forwarder: ApiForwarder | None = None
        self.address = ""  # the node's InternalIP, known once the network is made
        self.cgroup_root = f"/localkube-{os.getpid()}"
        self.containerd_dir = state / "containerd"
        self.socket = self.containerd_dir / "containerd.sock"
        inside = self.network.prefix()
        self.registry = Component("registry", [
            *inside, str(self.bin / "crane"), "registry", "serve", "--address", REGISTRY,
            "--disk", str(state / "registry")], log("registry"))
        # containerd finds its shim on PATH.
        self.containerd = Component("containerd", [
            *inside, "env", f"PATH={self.bin}:{os.environ.get('PATH', '')}",
            str(self.bin / "containerd"), "--config", str(self.containerd_dir / "config.toml")],
            log("containerd"))
        # Its argv is completed with the node's address in start().
        self.kubelet = Component("kubelet", [], log("kubelet"))
        self._cgroups_made: list[Path] = []
        self._pod_log_mount: str | None = None  # our bind at /var/log/pods (_show_pod_logs)

    def components(self) -> tuple[Component, ...]:
        return (self.registry, self.containerd, self.kubelet)

    # -- start ------------------------------------------------------------------------------

    def start(self, stopping: Callable[[], bool]) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        try:
            node_build.check_runtime_needs()
            addresses = self.network.create()
        except (NetworkError, BuildError) as exc:
            raise StartError(str(exc)) from exc
        self.address = addresses.node_address
        self.forwarder = ApiForwarder(self.network, self.api_port)
        # --v=2 logs each "SyncLoop (PLEG)" event: scripts/bench-run dates the kubelet's
        # relist from it (the largest share of a container's exit to squarepeg's).
        self.kubelet.argv = [
            *self.network.prefix(), str(self.bin / "kubelet"),
            f"--config={self.state / 'kubelet.yaml'}", f"--kubeconfig={self.kubeconfig}",
            f"--root-dir={self.state / 'kubelet'}", f"--cert-dir={self.state / 'kubelet-pki'}",
            f"--hostname-override={self.node_name}", f"--node-ip={self.address}", "--v=2"]
        self._make_cgroups()
        self._write_configs(str(addresses.pod_subnet))
        self._show_pod_logs()
        self.registry.start()
        wait_for(self._registry_up, 30, "the registry", self.registry, stopping)
        self._push_images()
        self.containerd.start()
        wait_for(self._containerd_up, 30, "containerd", self.containerd, stopping)
        pause = node_image.pause_image((self.bin / "pause").read_bytes())
        pause_tar = self.state / "pause.tar"
        pause_tar.write_bytes(node_image.layout_tar(pause, SANDBOX_IMAGE))
        self._ctr("images", "import", str(pause_tar))
        self.kubelet.start()

    def _make_cgroups(self) -> None:
        for hierarchy in _cgroup_hierarchies():
            path = hierarchy / self.cgroup_root.lstrip("/")
            path.mkdir()
            self._cgroups_made.append(path)
            if (hierarchy / "cpuset.cpus").exists():
                # A v1 cpuset cgroup takes no task until its cpus and mems are set.
                for name in ("cpuset.cpus", "cpuset.mems"):
                    (path / name).write_text((hierarchy / name).read_text())

    def _write_configs(self, pod_subnet: str) -> None:
        for directory in ("cni", "state", "root"):
            (self.containerd_dir / directory).mkdir(parents=True, exist_ok=True)
        (self.state / "registry").mkdir()
        (self.containerd_dir / "config.toml").write_text(
            containerd_config(self.containerd_dir, self.bin))
        certs = self.containerd_dir / "certs.d" / "docker.io"
        certs.mkdir(parents=True)
        (certs / "hosts.toml").write_text(hosts_toml(REGISTRY))
        (self.containerd_dir / "cni" / "10-localkube.conflist").write_text(
            cni_conflist(BRIDGE, pod_subnet, self.state / "cni-ipam"))
        config = kubelet_config(self.address, KUBELET_PORT, KUBELET_HEALTHZ_PORT, self.socket,
                                self.cgroup_root, self.state / "pod-logs")
        (self.state / "kubelet.yaml").write_text(yaml.safe_dump(config))

    def _registry_up(self) -> bool:
        def ask() -> bool:
            try:
                with urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=2):
                    return True
            except OSError:
                return False
        return call_inside(self.network.path, ask)

    def _python_image(self, busybox: bytes, applets: list[str]) -> node_image.Image:
        """busybox plus the machine's python3.11 (node_build checks that it is there)."""
        stdlib = Path("/usr/lib") / node_build.PYTHON.name
        binaries = [node_build.PYTHON, *sorted((stdlib / "lib-dynload").glob("*.so"))]
        ldd = [_run(["ldd", str(binary)], f"ldd {binary}") for binary in binaries]
        files, links = node_image.python_files(node_build.PYTHON, stdlib, python_libraries(ldd))
        return node_image.python_image(busybox, applets, files, links)

    def _push_images(self) -> None:
        busybox = node_build.BUSYBOX
        applets = _run([str(busybox), "--list-full"], "listing busybox's applets").split()
        busybox_bytes = busybox.read_bytes()
        images: list[tuple[node_image.Image, dict[str, tuple[str, ...]]]] = [
            (node_image.busybox_image(busybox_bytes, applets), BUSYBOX_TAGS),
            (self._python_image(busybox_bytes, applets), PYTHON_TAGS)]
        for number, (image, repositories) in enumerate(images):
            layout = self.state / "images" / str(number)
            node_image.write_layout(image, layout)
            for repository, tags in repositories.items():
                for tag in tags:
                    _run([*self.network.prefix(), str(self.bin / "crane"), "push",
                          "--insecure", str(layout), f"{REGISTRY}/{repository}:{tag}"],
                         f"pushing {repository}:{tag} to the local registry")

    def _ctr(self, *args: str) -> str:
        return _run([str(self.bin / "ctr"), "--address", str(self.socket), "--namespace",
                     "k8s.io", *args], f"ctr {' '.join(args[:2])}")

    def _containerd_up(self) -> bool:
        if not self.socket.exists():
            return False
        try:
            self._ctr("version")
        except StartError:
            return False
        return True

    # -- faults: a node component restarted ---------------------------------------------------

    def restart(self, which: str, down: float, stopping: Callable[[], bool],
                wait_for_containers: int = 0) -> dict[str, Any]:
        """Stop the kubelet or containerd (SIGTERM, SIGKILL after RESTART_GRACE_SECONDS),
        keep it down for `down` seconds, start it again with the same argv and wait until it
        answers (the kubelet's healthz, containerd's `ctr version`). Must run on the
        launcher's main thread (the death signal follows the thread that forked).

        With `wait_for_containers`, first waits (up to CONTAINER_WAIT_SECONDS) until at least
        that many containers run at the node: the API's `Running` lags the node (after a
        kubelet restart, pods stayed Running there for seconds with no container left).
        The running containers (containerd's tasks, sandboxes aside) are listed before, and
        each one's process is looked for afterwards: across a containerd restart they keep
        running under their shims (each shim has a process group of its own, which the
        stop's group kill does not reach). The answer lists those whose process is gone
        (`containers_gone`; one that ended by itself meanwhile, or was stopped by a delete,
        is among them too: only its run's exit code tells which)."""
        component = {"kubelet": self.kubelet, "containerd": self.containerd}[which]
        before = self._running_containers()
        deadline = time.monotonic() + CONTAINER_WAIT_SECONDS
        while (isinstance(before, dict) and len(before) < wait_for_containers
               and time.monotonic() < deadline and not stopping()):
            time.sleep(0.2)
            before = self._running_containers()
        began = time.monotonic()
        component.stop(RESTART_GRACE_SECONDS)
        stopped_in = time.monotonic() - began
        deadline = time.monotonic() + down
        while time.monotonic() < deadline:  # down, unless localkube is stopping meanwhile
            if stopping():
                return {"restarted": which, "interrupted": True}
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        component.start()
        answers = self._kubelet_up if which == "kubelet" else self._containerd_up
        wait_for(answers, 60, f"{which} to answer after its restart", component, stopping)
        answer: dict[str, Any] = {"restarted": which, "down": down,
                                  "stopped_in": round(stopped_in, 2),
                                  "back_in": round(time.monotonic() - began, 2)}
        if isinstance(before, str):
            answer["containers_unknown"] = f"ctr could not list them: {before}"
        else:
            answer["containers_running_before"] = len(before)
            answer["containers_gone"] = sorted(task for task, pid in before.items()
                                               if not _alive(pid))
        return answer

    def _running_containers(self) -> dict[str, int] | str:
        """The pods' containers running now, sandboxes aside, and their processes (`ctr
        tasks ls`: TASK PID STATUS; `ctr containers ls`: CONTAINER IMAGE RUNTIME), or why
        they could not be listed (three tries)."""
        problem = ""
        for _attempt in range(3):
            try:
                tasks = self._ctr("tasks", "ls")
                containers = self._ctr("containers", "ls")
            except (StartError, subprocess.TimeoutExpired) as exc:
                problem = str(exc).strip().splitlines()[-1][:200]
                time.sleep(0.5)
                continue
            sandboxes = {fields[0] for line in containers.splitlines()[1:]
                         if len(fields := line.split()) >= 2 and fields[1] == SANDBOX_IMAGE}
            running: dict[str, int] = {}
            for line in tasks.splitlines()[1:]:
                fields = line.split()
                if (len(fields) >= 3 and fields[2] == "RUNNING" and fields[1].isdigit()
                        and fields[0] not in sandboxes):
                    running[fields[0]] = int(fields[1])
            return running
        return problem

    def _kubelet_up(self) -> bool:
        def ask() -> bool:
            url = f"http://127.0.0.1:{KUBELET_HEALTHZ_PORT}/healthz"
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    return bool(response.status == 200)
            except OSError:
                return False
        return call_inside(self.network.path, ask)

    # -- stop -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Leave nothing behind; every step runs even when an earlier one failed."""
        self.kubelet.stop(5)
        self._kill_pod_processes()
        containers: list[str] = []
        if self.containerd.running():
            with contextlib.suppress(StartError, subprocess.TimeoutExpired):
                containers = self._ctr("containers", "ls", "--quiet").split()
                for task in self._ctr("tasks", "ls", "--quiet").split():
                    with contextlib.suppress(StartError):
                        self._ctr("tasks", "delete", "--force", task)
        self.containerd.stop(5)
        self._kill_shims()
        self.registry.stop(2)
        if self.forwarder is not None:
            self.forwarder.close()
        self._unmount()
        self._hide_pod_logs()
        self._remove_cgroups()
        self.network.remove()
        self._remove_shared_files(containers)

    def _remove_shared_files(self, containers: list[str]) -> None:
        """What the kubelet and CNI write outside the state directory, whatever the
        configuration: the container log links in /var/log/containers (to our pod-logs) and
        libcni's cached results of our sandboxes (named by the sandbox's id)."""
        for link in CONTAINER_LOG_LINKS.glob("*.log"):
            with contextlib.suppress(OSError):
                if os.readlink(link).startswith(str(self.state) + "/"):
                    link.unlink()
        ids = set(containers)
        for cached in CNI_RESULTS.glob("*"):
            if ids.intersection(re.split(r"[-_]", cached.name)):
                with contextlib.suppress(OSError):
                    cached.unlink()
    def _pod_pids(self) -> set[int]:
        pids: set[int] = set()
        for root in self._cgroups_made:
            for directory, _dirs, files in os.walk(root):
                if "cgroup.procs" in files:
                    with contextlib.suppress(OSError):
                        text = (Path(directory) / "cgroup.procs").read_text()
                        pids.update(int(pid) for pid in text.split())
        return pids

    def _kill_pod_processes(self) -> None:
        deadline = time.monotonic() + 10
        while (pids := self._pod_pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)

    def _kill_shims(self) -> None:
        """The shims outlive containerd by design; ours name our socket on their command line."""
        marker = str(self.socket).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if argv and argv[0].endswith(SHIM.encode()) and marker in argv:
                    os.kill(int(entry.name), signal.SIGKILL)

    def _show_pod_logs(self) -> None:
        """Our pod logs, bound at /var/log/pods for as long as the node runs, so that the
        kubelet's /logs/ serves them through nodes/proxy as on a node with the default
        podLogsDir (squarepeg's head check, kubectl_squarepeg/run/loghead.py). The kubelet
        itself keeps writing and collecting them in the state directory (kubelet_config).
        The machine's root mount is private, so the bind is seen nowhere else; a second
        node's bind covers this one until it ends."""
        pod_logs = self.state / "pod-logs"
        pod_logs.mkdir(exist_ok=True)
        POD_LOG_VIEW.mkdir(parents=True, exist_ok=True)
        _run(["mount", "--bind", str(pod_logs), str(POD_LOG_VIEW)], "binding the pod logs")
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            self._pod_log_mount = top_mount_id(handle.read(), POD_LOG_VIEW)

    def _hide_pod_logs(self) -> None:
        """Undo _show_pod_logs: only our own bind, and only while it is the one on top."""
        if self._pod_log_mount is None:
            return
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            if top_mount_id(handle.read(), POD_LOG_VIEW) == self._pod_log_mount:
                subprocess.run(["umount", "--lazy", str(POD_LOG_VIEW)], capture_output=True,
                               stdin=subprocess.DEVNULL)
        self._pod_log_mount = None
        with contextlib.suppress(OSError):
            POD_LOG_VIEW.rmdir()  # when no other node's pods are there

    def _unmount(self) -> None:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            points = mounts_under(handle.read(), self.state)
        for point in points:
            subprocess.run(["umount", "--lazy", point], capture_output=True,
                           stdin=subprocess.DEVNULL)

    def _remove_cgroups(self) -> None:
        for root in self._cgroups_made:
            for directory, _dirs, _files in sorted(os.walk(root), key=lambda w: -len(w[0])):
                with contextlib.suppress(OSError):
                    os.rmdir(directory)
