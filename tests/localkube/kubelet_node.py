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
  ErrImagePull; beside it, private_registry.py's proxy on 127.0.0.1:5001 asking for HTTP
  Basic credentials, which containerd uses for `private.localkube:5001`;
- containerd with its root, state, socket and netns mounts in the state directory and
  `restrict_oom_score_adj` (this machine lacks CAP_SYS_RESOURCE, without which runc cannot
  give the sandbox oom_score_adj -998);
- the kubelet (the admin kubeconfig; anonymous access with AlwaysAllow on its port, as the API
  server has no kubelet client certificate; `failCgroupV1: false`, `failSwapOn: false`).
- a mount namespace of its own (a file `mnt` in the state directory, made with `unshare
  --mount=FILE`) holding the kubelet, containerd, the shims and the pods: their mounts
  (rootfs overlays, volumes, the pods' network namespaces) are the node's alone and go with
  it, and the node's `/var/log` there is its own directory `var-log`, whose `pods` is the
  kubelet's podLogsDir: the kubelet's /logs/ endpoint (nodes/proxy) serves only /var/log,
  and several nodes on one machine each serve their own. The machine's mounts are copied
  in at its making, private (nothing propagates either way); the copies of other
  instances' and nodes' mounts (their state directories, namespace files) are undone in it
  at once, so that it pins none of them.
Several nodes (`serve --nodes N`, `ctl add-node`): node K has the state directory, cgroup
root (`/localkube-PID-K`) and host link (`lkhPID-K`) of its own, K = 1 keeping the names
of a single node; they share only the image layouts (written once) and the fabric
(netns.py). `power_off` is a machine that lost power (`ctl stop-node`): its links down
first, then SIGKILL of the kubelet, containerd, the shims and every pod process, and its
mount namespace dropped (the pods' mounts and network namespaces gone); `power_on`
(`ctl start-node`) boots it again with its disk: containerd's and runc's state
directories (a real node's /run) emptied, its root (images, metadata), the kubelet's root
and the pod logs kept.
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
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import processes
from tests.localkube import node_build, node_image, private_registry
from tests.localkube.build import BuildError
from tests.localkube.commands import run_checked
from tests.localkube.netns import (
    BRIDGE,
    CANDIDATE_POOLS,
    ApiForwarder,
    NetworkError,
    NodeNetwork,
    call_inside,
    host_link_name,
    release_namespace_file,
)
from tests.localkube.processes import SERVICE_CIDR, Component, StartError, wait_for

CGROUP_MOUNTS = Path("/sys/fs/cgroup")
CONTAINER_LOG_LINKS = Path("/var/log/containers")
# What the kubelet's /logs/ endpoint (nodes/proxy) serves: /var/log only, here the node's own.
NODE_VAR_LOG = Path("/var/log")
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
                 # answers in the node's namespace (service_address.py). The pools the
                 # nodes' blocks come from: the other nodes' pods, through the fabric.
                 "routes": [{"dst": SERVICE_CIDR}, *({"dst": pool} for pool in CANDIDATE_POOLS)],
                 "dataDir": str(ipam_dir)}}]}, indent=1)


def kubelet_config(address: str, port: int, healthz_port: int, socket: Path,
                   cgroup_root: str, pod_logs: Path,
                   lease_seconds: int | None = None) -> dict[str, Any]:
    """The KubeletConfiguration; `lease_seconds` shortens the node lease (renewed at a
    quarter of it) for a controller manager with a short node-monitor-grace-period."""
    lease = {} if lease_seconds is None else {"nodeLeaseDurationSeconds": lease_seconds}
    return {
        **lease,
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


def foreign_mounts(mountinfo: str, own: Path, temp: Path) -> list[str]:
    """The mounts a node's new mount namespace copied from the machine and must not pin:
    namespace files (nsfs) anywhere, and whatever is mounted under another localkube state
    directory of `temp` (other instances' nodes, this cluster's other nodes) than `own`;
    deepest first."""
    points = set()
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) < 5 or " - " not in line:
            continue
        point = fields[4].replace("\\040", " ")
        fstype = line.split(" - ", 1)[1].split()[0]
        path = Path(point)
        another_instance = (path.is_relative_to(temp) and path != temp
                            and path.relative_to(temp).parts[0].startswith("localkube-")
                            and not path.is_relative_to(own) and not own.is_relative_to(path))
        if fstype == "nsfs" or another_instance:
            points.add(point)
    return sorted(points, key=lambda p: (-p.count("/"), p))


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
    return run_checked(argv, what, StartError, timeout=120)


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


def _rss_kib(pid: int) -> int | None:
    """A process's VmRSS in KiB, or None when it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) if match else None


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
                 node_name: str, api_port: int, index: int = 1, images: Path | None = None,
                 lease_seconds: int | None = None) -> None:
        self.state = state
        self.kubeconfig = kubeconfig
        self.bin = node_build.bin_dir()
        self.node_name = node_name
        self.api_port = api_port
        self.index = index
        self.lease_seconds = lease_seconds
        # The image layouts, written by the first node that needs them, pushed by each.
        self.images = images or state / "images"
        self.network = NodeNetwork(state, SERVICE_CIDR, host_link_name(index))
        self.mounts = state / "mnt"  # the node's mount namespace, bound on a file
        self.forwarder: ApiForwarder | None = None
        self.address = ""  # the node's InternalIP, known once the network is made
        suffix = "" if index == 1 else f"-{index}"
        self.cgroup_root = f"/localkube-{os.getpid()}{suffix}"
        self.containerd_dir = state / "containerd"
        self.socket = self.containerd_dir / "containerd.sock"
        self.powered = False  # between start (or power_on) and power_off (or stop)
        inside = self.network.prefix()
        self.registry = Component(f"registry{suffix}", [
            *inside, str(self.bin / "crane"), "registry", "serve", "--address", REGISTRY,
            "--disk", str(state / "registry")], log(f"registry{suffix}"))
        # The same registry behind HTTP Basic authentication (private_registry.py).
        self.private_registry = Component(f"private-registry{suffix}", [
            *inside, sys.executable, "-I", private_registry.__file__,
            "--listen", private_registry.LISTEN, "--upstream", REGISTRY],
            log(f"private-registry{suffix}"))
        # containerd finds its shim on PATH.
        self.containerd = Component(f"containerd{suffix}", [
            *self.prefix(), "env", f"PATH={self.bin}:{os.environ.get('PATH', '')}",
            str(self.bin / "containerd"), "--config", str(self.containerd_dir / "config.toml")],
            log(f"containerd{suffix}"))
        # Its argv is completed with the node's address in start().
        self.kubelet = Component(f"kubelet{suffix}", [], log(f"kubelet{suffix}"))
        self._cgroups_made: list[Path] = []
        self._mounts_made = False

    def prefix(self) -> list[str]:
        """The argv prefix that runs a command in the node: its network and mount namespaces."""
        return [*self.network.prefix(), f"--mount={self.mounts}"]

    def components(self) -> tuple[Component, ...]:
        return (self.registry, self.private_registry, self.containerd, self.kubelet)

    def watched_components(self) -> tuple[Component, ...]:
        """The components that must be running: the kubelet and containerd only while the
        node has power (the registry stands for a registry elsewhere: it stays)."""
        return self.components() if self.powered else (self.registry, self.private_registry)

    def memory(self) -> dict[str, int]:
        """The resident memory (VmRSS, KiB) of the node's kubelet, containerd, shims and
        registry, each present only while it runs."""
        found: dict[str, int] = {}
        for name, component in (("kubelet", self.kubelet), ("containerd", self.containerd),
                                ("registry", self.registry)):
            if component.running() and component.process is not None:
                rss = _rss_kib(component.process.pid)
                if rss is not None:
                    found[name] = rss
        shims = [rss for pid in self._shim_pids() if (rss := _rss_kib(pid)) is not None]
        if shims:
            found["shims"] = sum(shims)
        return found

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
            *self.prefix(), str(self.bin / "kubelet"),
            f"--config={self.state / 'kubelet.yaml'}", f"--kubeconfig={self.kubeconfig}",
            f"--root-dir={self.state / 'kubelet'}", f"--cert-dir={self.state / 'kubelet-pki'}",
            f"--hostname-override={self.node_name}", f"--node-ip={self.address}", "--v=2"]
        self._make_cgroups()
        self._write_configs(str(addresses.pod_subnet))
        self._make_mount_namespace()
        self.registry.start()
        self.private_registry.start()
        wait_for(self._registry_up, 30, "the registry", self.registry, stopping)
        self._push_images()
        wait_for(self._private_registry_up, 30, "the private registry", self.private_registry,
                 stopping)
        self.containerd.start()
        wait_for(self._containerd_up, 30, "containerd", self.containerd, stopping)
        pause = node_image.pause_image((self.bin / "pause").read_bytes())
        pause_tar = self.state / "pause.tar"
        pause_tar.write_bytes(node_image.layout_tar(pause, SANDBOX_IMAGE))
        self._ctr("images", "import", str(pause_tar))
        self.kubelet.start()
        self.powered = True

    def _make_mount_namespace(self) -> None:
        """The node's mount namespace, bound on `mnt`, with its own /var/log (module
        docstring); the copies of foreign mounts undone in it."""
        var_log = self.state / "var-log"
        (var_log / "pods").mkdir(parents=True, exist_ok=True)
        self.mounts.touch()
        self._mounts_made = True
        _run(["unshare", f"--mount={self.mounts}", "--propagation", "private", "true"],
             "making the node's mount namespace")
        inside = ["nsenter", f"--mount={self.mounts}"]
        copied = _run([*inside, "cat", "/proc/self/mountinfo"], "reading the node's mounts")
        foreign = foreign_mounts(copied, self.state, Path(tempfile.gettempdir()))
        for start in range(0, len(foreign), 50):
            subprocess.run([*inside, "umount", "--lazy", *foreign[start:start + 50]],
                           capture_output=True, stdin=subprocess.DEVNULL, timeout=60)
        _run([*inside, "mount", "--bind", str(var_log), str(NODE_VAR_LOG)],
             "giving the node its /var/log")

    def _drop_mount_namespace(self) -> None:
        """Unbind `mnt`: the namespace, and every mount in it, goes with its last process."""
        if not self._mounts_made:
            return
        release_namespace_file(self.mounts)
        self._mounts_made = False

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
        private = self.containerd_dir / "certs.d" / private_registry.HOST
        private.mkdir()
        (private / "hosts.toml").write_text(hosts_toml(private_registry.LISTEN))
        (self.containerd_dir / "cni" / "10-localkube.conflist").write_text(
            cni_conflist(BRIDGE, pod_subnet, self.state / "cni-ipam"))
        config = kubelet_config(self.address, KUBELET_PORT, KUBELET_HEALTHZ_PORT, self.socket,
                                self.cgroup_root, self.state / "var-log" / "pods",
                                self.lease_seconds)
        (self.state / "kubelet.yaml").write_text(yaml.safe_dump(config))

    def _registry_up(self) -> bool:
        def ask() -> bool:
            try:
                with urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=2):
                    return True
            except OSError:
                return False
        return call_inside(self.network.path, ask)

    def _private_registry_up(self) -> bool:
        """Up when it refuses a request without credentials, as it should."""
        def ask() -> bool:
            try:
                with urllib.request.urlopen(f"http://{private_registry.LISTEN}/v2/", timeout=2):
                    return False
            except urllib.error.HTTPError as refused:
                return refused.code == 401
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

    def _write_images(self) -> None:
        """The image layouts under `images`, once for all the cluster's nodes (`written`
        marks them complete)."""
        if (self.images / "written").exists():
            return
        busybox = node_build.BUSYBOX
        applets = _run([str(busybox), "--list-full"], "listing busybox's applets").split()
        busybox_bytes = busybox.read_bytes()
        images = (node_image.busybox_image(busybox_bytes, applets),
                  self._python_image(busybox_bytes, applets))
        for number, image in enumerate(images):
            node_image.write_layout(image, self.images / str(number))
        (self.images / "written").touch()

    def _push_images(self) -> None:
        self._write_images()
        for number, repositories in enumerate((BUSYBOX_TAGS, PYTHON_TAGS)):
            layout = self.images / str(number)
            for repository, tags in repositories.items():
                for tag in tags:
                    _run([*self.network.prefix(), str(self.bin / "crane"), "push",
                          "--insecure", str(layout), f"{REGISTRY}/{repository}:{tag}"],
                         f"pushing {repository}:{tag} to the local registry")
        # The private registry's image: the busybox one again (its blobs are there already).
        _run([*self.network.prefix(), str(self.bin / "crane"), "push", "--insecure",
              str(self.images / "0"),
              f"{REGISTRY}/{private_registry.REPOSITORY}:{private_registry.TAG}"],
             "pushing the private registry's image")

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

    # -- faults: the node loses power, and boots again -------------------------------------------

    def power_off(self) -> dict[str, Any]:
        """A machine that lost power: nothing tells the API. Its links go down first (what
        the dying processes send reaches no one: the API server's connections to the
        kubelet hang, as on a real loss), then SIGKILL of the kubelet and containerd, of
        every pod process (the cgroups) and of the shims, and its mount namespace is
        dropped. The registry, the forwarders and the network namespace stay (a registry
        elsewhere, the wires). Main thread only, as every start."""
        began = time.monotonic()
        self.network.link_down()
        self.powered = False
        for component in (self.kubelet, self.containerd):
            component.kill()
        self._kill_pod_processes()
        self._kill_shims()
        self._drop_mount_namespace()
        return {"stopped": self.node_name, "in": round(time.monotonic() - began, 2)}

    def power_on(self, stopping: Callable[[], bool]) -> dict[str, Any]:
        """Boot the node again with its disk: containerd's and runc's state directories
        (a real node's /run) emptied, the rest kept; a new mount namespace, the links up,
        containerd, then the kubelet; returns once the kubelet's healthz answers."""
        began = time.monotonic()
        for ram in ("state", "runc"):
            shutil.rmtree(self.containerd_dir / ram, ignore_errors=True)
        (self.containerd_dir / "state").mkdir(exist_ok=True)
        self._make_mount_namespace()
        self.network.link_up()
        self.containerd.start()
        wait_for(self._containerd_up, 60, "containerd to answer after the node's boot",
                 self.containerd, stopping)
        self.kubelet.start()
        wait_for(self._kubelet_up, 60, "the kubelet to answer after the node's boot",
                 self.kubelet, stopping)
        self.powered = True
        return {"started": self.node_name, "in": round(time.monotonic() - began, 2)}

    # -- stop -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Leave nothing behind; every step runs even when an earlier one failed."""
        self.powered = False
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
        self.private_registry.stop(2)
        self.registry.stop(2)
        if self.forwarder is not None:
            self.forwarder.close()
        self._unmount()
        self._drop_mount_namespace()
        self._remove_cgroups()
        self.network.remove()
        self._remove_shared_files(containers)

    def _remove_shared_files(self, containers: list[str]) -> None:
        """What the kubelet and CNI write outside the state directory, whatever the
        configuration: libcni's cached results of our sandboxes (named by the sandbox's id),
        and container log links in the machine's /var/log/containers into our state (none
        since the node has a /var/log of its own, where the kubelet makes them; kept for a
        node of an older checkout)."""
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

    def _shim_pids(self) -> list[int]:
        """The shims outlive containerd by design; ours name our socket on their command line."""
        marker = str(self.socket).encode()
        found = []
        for pid, (cmdline,) in processes("cmdline"):
            argv = cmdline.split(b"\0")
            if argv and argv[0].endswith(SHIM.encode()) and marker in argv:
                found.append(pid)
        return found

    def _kill_shims(self) -> None:
        for pid in self._shim_pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

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
