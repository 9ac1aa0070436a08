"""The kubelet node of localkube (opt-in: `scripts/localkube serve --node kubelet`): the real
kubelet, containerd, runc and CNI bridge, with images made on the machine in a local registry.

Owns the node's configuration (rendered by the pure functions at the top), starting it and,
above all, leaving nothing behind. What it sets up, all per instance (a random slot N, so two
can run at once):
- a veth pair `lknN`/`lkpN` with 192.0.2.N/32 on `lknN`: the kubelet refuses a loopback node
  IP ("nodeIP can't be loopback address") and the API server reaches a kubelet only at its
  node's InternalIP, so the kubelet listens on that TEST-NET-1 address, which only this
  machine routes; the CNI bridge `lkcniN` with host-local IPAM on 10.244.N.0/24 (no
  masquerade: there is no iptables);
- cgroup roots `/localkube-N` in every mounted hierarchy (cgroup v1, driver cgroupfs), under
  which the kubelet makes `kubepods`: every process in them is a pod's, so stopping kills
  exactly those;
- `crane registry serve` on 127.0.0.1 holding `alpine` (latest, 3, 3.19, 3.20) and `busybox`
  (busybox-static images from node_image), which containerd uses for `docker.io`: `alpine`
  pulls as on any cluster and a typo'd image fails with a real ErrImagePull;
- containerd with its root, state, socket and netns mounts in the state directory and
  `restrict_oom_score_adj` (this machine lacks CAP_SYS_RESOURCE, without which runc cannot
  give the sandbox oom_score_adj -998);
- the kubelet (the admin kubeconfig; anonymous access with AlwaysAllow on its port, as the API
  server has no kubelet client certificate; `failCgroupV1: false`, `failSwapOn: false`).
`stop` kills the pods' processes (through the cgroups), deletes containerd's tasks, stops
the kubelet, containerd, the shims it started and the registry, unmounts everything under
the state directory, removes the cgroups and the links. See tests/localkube/README.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.localkube import node_build, node_image
from tests.localkube.processes import Component, StartError, free_port, wait_for

CGROUP_MOUNTS = Path("/sys/fs/cgroup")
SANDBOX_IMAGE = "registry.k8s.io/pause:3.10.1"
IMAGE_TAGS = {"library/alpine": ("latest", "3", "3.19", "3.20"), "library/busybox": ("latest",)}
CLUSTER_DNS = "10.0.0.10"
SHIM = "containerd-shim-runc-v2"


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
                 "dataDir": str(ipam_dir)}}]}, indent=1)


def kubelet_config(address: str, port: int, healthz_port: int, socket: Path,
                   cgroup_root: str) -> dict[str, Any]:
    return {
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


def _free_slot() -> int:
    taken = set(os.listdir("/sys/class/net"))
    free = [n for n in range(1, 255) if f"lkn{n}" not in taken and f"lkcni{n}" not in taken]
    if not free:
        raise StartError("no free localkube node slot (links lkn1..lkn254 all exist)")
    return random.choice(free)


def _cgroup_hierarchies() -> list[Path]:
    hierarchies = []
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        for line in mounts:
            fields = line.split()
            if fields[2] in ("cgroup", "cgroup2") and fields[1].startswith(str(CGROUP_MOUNTS)):
                hierarchies.append(Path(fields[1]))
    return hierarchies


class KubeletNode:
    """One kubelet node: its files under `state`, its processes, links and cgroups."""

    def __init__(self, state: Path, kubeconfig: Path, log: Callable[[str], Path],
                 node_name: str) -> None:
        self.state = state
        self.kubeconfig = kubeconfig
        self.bin = node_build.bin_dir()
        self.node_name = node_name
        self.slot = _free_slot()
        self.address = f"192.0.2.{self.slot}"
        self.link, self.peer, self.bridge = (f"lkn{self.slot}", f"lkp{self.slot}",
                                             f"lkcni{self.slot}")
        self.cgroup_root = f"/localkube-{self.slot}"
        self.containerd_dir = state / "containerd"
        self.socket = self.containerd_dir / "containerd.sock"
        registry_port = free_port()
        self.registry_address = f"127.0.0.1:{registry_port}"
        self.registry = Component("registry", [
            str(self.bin / "crane"), "registry", "serve", "--address", self.registry_address,
            "--disk", str(state / "registry")], log("registry"))
        # containerd finds its shim on PATH.
        self.containerd = Component("containerd", [
            "env", f"PATH={self.bin}:{os.environ.get('PATH', '')}", str(self.bin / "containerd"),
            "--config", str(self.containerd_dir / "config.toml")],
            log("containerd"))
        self.kubelet = Component("kubelet", [
            str(self.bin / "kubelet"), f"--config={state / 'kubelet.yaml'}",
            f"--kubeconfig={kubeconfig}", f"--root-dir={state / 'kubelet'}",
            f"--cert-dir={state / 'kubelet-pki'}", f"--hostname-override={node_name}",
            f"--node-ip={self.address}", "--v=1"], log("kubelet"))
        self._links_made = False
        self._cgroups_made: list[Path] = []

    def components(self) -> tuple[Component, ...]:
        return (self.registry, self.containerd, self.kubelet)

    # -- start ------------------------------------------------------------------------------

    def start(self, stopping: Callable[[], bool]) -> None:
        self._make_links()
        self._make_cgroups()
        self._write_configs()
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

    def _make_links(self) -> None:
        self._links_made = True
        _run(["ip", "link", "add", self.link, "type", "veth", "peer", "name", self.peer],
             "making the node's veth pair")
        _run(["ip", "addr", "add", f"{self.address}/32", "dev", self.link],
             "giving the node its address")
        for link in (self.peer, self.link):
            _run(["ip", "link", "set", link, "up"], f"bringing {link} up")

    def _make_cgroups(self) -> None:
        for hierarchy in _cgroup_hierarchies():
            path = hierarchy / self.cgroup_root.lstrip("/")
            path.mkdir()
            self._cgroups_made.append(path)
            if (hierarchy / "cpuset.cpus").exists():
                # A v1 cpuset cgroup takes no task until its cpus and mems are set.
                for name in ("cpuset.cpus", "cpuset.mems"):
                    (path / name).write_text((hierarchy / name).read_text())

    def _write_configs(self) -> None:
        for directory in ("cni", "state", "root"):
            (self.containerd_dir / directory).mkdir(parents=True, exist_ok=True)
        (self.state / "registry").mkdir()
        (self.containerd_dir / "config.toml").write_text(
            containerd_config(self.containerd_dir, self.bin))
        certs = self.containerd_dir / "certs.d" / "docker.io"
        certs.mkdir(parents=True)
        (certs / "hosts.toml").write_text(hosts_toml(self.registry_address))
        (self.containerd_dir / "cni" / "10-localkube.conflist").write_text(
            cni_conflist(self.bridge, f"10.244.{self.slot}.0/24", self.state / "cni-ipam"))
        config = kubelet_config(self.address, free_port(), free_port(), self.socket,
                                self.cgroup_root)
        (self.state / "kubelet.yaml").write_text(yaml.safe_dump(config))

    def _registry_up(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.registry_address}/v2/", timeout=2):
                return True
        except OSError:
            return False

    def _push_images(self) -> None:
        busybox = node_build.BUSYBOX
        applets = _run([str(busybox), "--list-full"], "listing busybox's applets").split()
        image = node_image.busybox_image(busybox.read_bytes(), applets)
        layout = self.state / "images" / "busybox"
        node_image.write_layout(image, layout)
        for repository, tags in IMAGE_TAGS.items():
            for tag in tags:
                _run([str(self.bin / "crane"), "push", "--insecure", str(layout),
                      f"{self.registry_address}/{repository}:{tag}"],
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

    # -- stop -------------------------------------------------------------------------------

    def stop(self) -> None:
        """Leave nothing behind; every step runs even when an earlier one failed."""
        self.kubelet.stop(5)
        self._kill_pod_processes()
        if self.containerd.running():
            with contextlib.suppress(StartError, subprocess.TimeoutExpired):
                for task in self._ctr("tasks", "ls", "--quiet").split():
                    with contextlib.suppress(StartError):
                        self._ctr("tasks", "delete", "--force", task)
        self.containerd.stop(5)
        self._kill_shims()
        self.registry.stop(2)
        self._unmount()
        self._remove_cgroups()
        if self._links_made:
            for link in (self.link, self.bridge):
                subprocess.run(["ip", "link", "del", link], capture_output=True,
                               stdin=subprocess.DEVNULL)

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
