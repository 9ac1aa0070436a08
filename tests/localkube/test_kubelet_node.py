"""The kubelet node (localkube's default; kubelet_node.py, netns.py): its pure parts (images,
configuration, mount order, the choice of its addresses against `ip -j` output), then on the
session's cluster `kubectl squarepeg` on the real kubelet and where the node's network is,
and a cluster of the test's own that must leave nothing behind when it stops. The tests of
a running node are skipped when the session's node is the agent (LOCALKUBE_NODE=agent).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import ipaddress
import json
import os
import random
import re
import struct
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Localkube
from tests.helpers import wait_until
from tests.kubesim.launcher import descendants
from tests.localkube import build, kubelet_node, netns, node_build, node_image
from tests.localkube.commands import ip_json, run, squarepeg


def _layer_members(img: node_image.Image) -> dict[str, tarfile.TarInfo]:
    manifest = json.loads(img.blobs[img.manifest_digest])
    layer = gzip.decompress(img.blobs[manifest["layers"][0]["digest"]])
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        return {member.name: member for member in tar.getmembers()}


def test_a_busybox_image_is_reproducible_and_runnable_by_name() -> None:
    first = node_image.busybox_image(b"\x7fELF fake", ["bin/sh", "usr/bin/wc", "bin/busybox"])
    again = node_image.busybox_image(b"\x7fELF fake", ["usr/bin/wc", "bin/sh"])
    assert first.manifest_digest == again.manifest_digest
    members = _layer_members(first)
    assert members["bin/sh"].issym() and members["bin/sh"].linkname == "/bin/busybox"
    assert members["bin/busybox"].mode == 0o755
    assert members["tmp"].mode == 0o1777
    assert "etc/passwd" in members
    files = node_image.layout_files(first, "docker.io/library/alpine:latest")
    blobs = {name: data for name, data in files.items() if name.startswith("blobs/")}
    assert len(blobs) == 3
    for name, data in blobs.items():
        assert name == "blobs/sha256/" + hashlib.sha256(data).hexdigest()
    index = json.loads(files["index.json"])
    [entry] = index["manifests"]
    assert entry["digest"] == first.manifest_digest
    assert entry["annotations"]["io.containerd.image.name"] == "docker.io/library/alpine:latest"


def test_the_pause_image_runs_only_pause() -> None:
    img = node_image.pause_image(b"\x7fELF pause")
    manifest = json.loads(img.blobs[img.manifest_digest])
    config = json.loads(img.blobs[manifest["config"]["digest"]])
    assert config["config"] == {"Entrypoint": ["/pause"]}
    assert list(_layer_members(img)) == ["pause"]


def _elf(program_types: list[int]) -> bytes:
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x20, 64)
    struct.pack_into("<HH", header, 0x36, 56, len(program_types))
    return bytes(header) + b"".join(struct.pack("<I", t) + bytes(52) for t in program_types)


def test_only_an_elf_without_an_interpreter_is_static() -> None:
    assert node_build.is_static_elf(_elf([1, 1]))
    assert not node_build.is_static_elf(_elf([6, 3, 1]))  # PT_INTERP: dynamically linked
    assert not node_build.is_static_elf(b"#!/bin/sh\n")


def test_mounts_are_undone_deepest_first_and_only_ours() -> None:
    mountinfo = "\n".join([
        "30 1 0:25 / /tmp/lk/kubelet rw - ext4 /dev/vda rw",
        "31 30 0:26 / /tmp/lk/kubelet/pods/x/volumes/token rw - tmpfs tmpfs rw",
        "32 1 0:27 / /tmp/lk/containerd/state/k8s.io/abc/rootfs rw - overlay overlay rw",
        "33 1 0:28 / /tmp/lkother rw - tmpfs tmpfs rw",
        "34 1 0:29 / /tmp/lk/with\\040space rw - tmpfs tmpfs rw",
    ])
    assert kubelet_node.mounts_under(mountinfo, Path("/tmp/lk")) == [
        "/tmp/lk/containerd/state/k8s.io/abc/rootfs", "/tmp/lk/kubelet/pods/x/volumes/token",
        "/tmp/lk/kubelet", "/tmp/lk/with space"]


def test_a_nodes_mount_namespace_lets_go_of_every_other_instances_mounts() -> None:
    """What a node's new mount namespace copied from the machine and undoes at once: the
    namespace files, and the mounts of other localkube state directories (another instance,
    this cluster's other nodes); never its own, nor the machine's."""
    mountinfo = "\n".join([
        "20 1 0:20 / / rw shared:1 - ext4 /dev/vda rw",
        "21 20 0:21 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory",
        "22 20 0:4 net:[4026532] /tmp/localkube-a/node/netns rw - nsfs nsfs rw",
        "23 20 0:4 net:[4026533] /tmp/localkube-b/node-2/netns rw - nsfs nsfs rw",
        "24 20 0:30 / /tmp/localkube-b/node-2/containerd/state/x/rootfs rw - overlay o rw",
        "25 20 0:31 / /tmp/localkube-a/node-3/kubelet/pods/y/vol rw - tmpfs tmpfs rw",
        "26 20 0:32 / /tmp/localkube-b/node/kubelet rw - ext4 /dev/vda rw",
        "27 20 0:33 / /tmp/other/dir rw - tmpfs tmpfs rw",
        "28 20 0:4 net:[4026534] /run/netns/someone rw - nsfs nsfs rw",
        "29 20 0:34 / /var/log rw - ext4 /dev/vda rw",
    ])
    foreign = kubelet_node.foreign_mounts(mountinfo, Path("/tmp/localkube-b/node"),
                                          Path("/tmp"))
    assert foreign == [
        "/tmp/localkube-a/node-3/kubelet/pods/y/vol",
        "/tmp/localkube-b/node-2/containerd/state/x/rootfs",
        "/tmp/localkube-a/node/netns", "/tmp/localkube-b/node-2/netns", "/run/netns/someone"]


def test_the_configuration_fits_this_machine() -> None:
    config = kubelet_node.kubelet_config("192.0.2.7", 10250, 10248, Path("/s/c.sock"),
                                         "/localkube-7", Path("/s/var-log/pods"))
    # Not the /var/log/pods of every kubelet: the node's /var/log is its var-log.
    assert config["podLogsDir"] == "/s/var-log/pods"
    assert "nodeLeaseDurationSeconds" not in config  # the release's 40 s
    short = kubelet_node.kubelet_config("192.0.2.7", 10250, 10248, Path("/s/c.sock"),
                                        "/localkube-7", Path("/s/var-log/pods"), 8)
    assert short["nodeLeaseDurationSeconds"] == 8
    assert config["cgroupDriver"] == "cgroupfs" and config["cgroupRoot"] == "/localkube-7"
    assert config["failSwapOn"] is False and config["failCgroupV1"] is False
    assert config["address"] == "192.0.2.7" and config["healthzBindAddress"] == "127.0.0.1"
    containerd = kubelet_node.containerd_config(Path("/s"), Path("/b"))
    assert "restrict_oom_score_adj = true" in containerd
    assert 'BinaryName = "/b/runc"' in containerd and "SystemdCgroup = false" in containerd
    conflist = json.loads(kubelet_node.cni_conflist("lkcni7", "10.244.7.0/24", Path("/i")))
    assert conflist["plugins"][0]["ipMasq"] is False
    # The Service range and the pools of every node's block, never a default route.
    routes = [r["dst"] for r in conflist["plugins"][0]["ipam"]["routes"]]
    assert routes == ["10.0.0.0/24", *netns.CANDIDATE_POOLS]


def test_several_nodes_have_names_links_and_routes_of_their_own() -> None:
    from tests.localkube import launcher
    assert launcher.node_names(1) == ["localkube-node"]  # a single node keeps its name
    assert launcher.node_names(3) == ["localkube-node-1", "localkube-node-2",
                                      "localkube-node-3"]
    assert launcher.added_node_name(2) == "localkube-node-2"
    assert netns.host_link_name(1, 4194304) == "lkh4194304"
    assert netns.host_link_name(12, 4194304) == "lkh4194304-12"
    assert len(netns.host_link_name(99, 4194304)) <= 15  # IFNAMSIZ - 1
    one = netns.NodeAddresses(ipaddress.IPv4Network("10.244.7.0/24"))
    two = netns.NodeAddresses(ipaddress.IPv4Network("10.244.9.0/24"))
    assert one.fabric_address == "10.244.7.133"
    fabric = ipaddress.ip_address(one.fabric_address)
    assert fabric not in one.link and fabric not in one.pod_subnet and fabric in one.block
    assert netns.fabric_routes(one, [one, two]) == [
        ["10.244.9.133/32", "dev", "fab0", "scope", "link"],
        ["10.244.9.0/25", "via", "10.244.9.133", "dev", "fab0"]]


def test_the_node_controllers_grace_is_the_releases_unless_asked() -> None:
    from tests.localkube import processes
    assert processes.node_grace_flags(None, None) == ([], [])
    controller, api = processes.node_grace_flags(8, 20)
    assert controller == ["--node-monitor-grace-period=8s", "--node-monitor-period=1.6s"]
    assert api == ["--default-not-ready-toleration-seconds=20",
                   "--default-unreachable-toleration-seconds=20"]
    assert processes.node_grace_flags(60, None)[0][1] == "--node-monitor-period=5s"


def test_a_drain_leaves_daemonsets_static_and_deleted_pods() -> None:
    from tests.localkube import launcher
    assert launcher.drainable({"metadata": {"name": "p"}}) is None
    assert launcher.drainable({"metadata": {"ownerReferences": [{"kind": "DaemonSet"}]}})
    assert launcher.drainable({"metadata": {"ownerReferences": [{"kind": "Job"}]}}) is None
    assert launcher.drainable({"metadata": {
        "annotations": {"kubernetes.io/config.mirror": "x"}}}) == "a static pod"
    assert launcher.drainable({"metadata": {"deletionTimestamp": "2026-12-07T00:00:00Z"}})


def _writes(name: str) -> build.Step:
    def step(staging: Path, _log: Path) -> None:
        (staging / name).write_text("#!/bin/sh\n")
        (staging / name).chmod(0o755)
    return name, step


def _fails(staging: Path, _log: Path) -> None:
    raise build.BuildError("the compiler said no")


def test_a_failed_build_keeps_the_previous_binaries(tmp_path: Path) -> None:
    """The staged build that both the control plane's and the node's builds use."""
    target = tmp_path / "bin"
    said: list[str] = []
    build.build_staged(target, "first", [_writes("one"), _writes("two")], said.append, "b.log")
    assert build.is_current(target, ["one", "two"], "first")
    assert not build.is_current(target, ["one", "two"], "second")
    with pytest.raises(build.BuildError, match="the compiler said no"):
        build.build_staged(target, "second", [_writes("one"), ("bad", _fails)], said.append,
                           "b.log")
    assert build.is_current(target, ["one", "two"], "first")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.log", "bin"]
    assert any(line.startswith("built two in ") for line in said)


# `ip -j -4 addr` and `ip -j -4 route show table all` of this machine (trimmed): eth0 is
# 192.0.2.2/24 with its gateway at 192.0.2.1.
MACHINE_ADDRESSES: list[dict[str, Any]] = [
    {"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8}]},
    {"ifname": "eth0", "addr_info": [
        {"family": "inet", "local": "192.0.2.2", "prefixlen": 24},
        {"family": "inet6", "local": "fd00::2", "prefixlen": 64}]},
]
MACHINE_ROUTES: list[dict[str, Any]] = [
    {"dst": "default", "gateway": "192.0.2.1", "dev": "eth0"},
    {"dst": "192.0.2.0/24", "dev": "eth0", "prefsrc": "192.0.2.2"},
    {"type": "local", "dst": "127.0.0.0/8", "dev": "lo", "table": "local"},
    {"type": "local", "dst": "192.0.2.2", "dev": "eth0", "table": "local"},
    {"type": "broadcast", "dst": "192.0.2.255", "dev": "eth0", "table": "local"},
]


def _block_overlaps_machine(block: ipaddress.IPv4Network, addresses: list[dict[str, Any]],
                            routes: list[dict[str, Any]]) -> bool:
    return any(block.overlaps(taken) for taken in netns.taken_networks(addresses, routes))


def test_the_node_takes_no_address_or_route_of_the_machine() -> None:
    rng = random.Random(3)
    for _ in range(200):
        chosen = netns.choose_block(MACHINE_ADDRESSES, MACHINE_ROUTES, rng=rng)
        assert not _block_overlaps_machine(chosen.block, MACHINE_ADDRESSES, MACHINE_ROUTES)
        assert chosen.block.subnet_of(ipaddress.IPv4Network("10.244.0.0/16"))
        addresses = {chosen.host_address, chosen.node_address}
        assert all(ipaddress.ip_address(a) in chosen.link for a in addresses)
        assert not chosen.link.overlaps(chosen.pod_subnet)
        assert chosen.pod_subnet.subnet_of(chosen.block) and chosen.link.subnet_of(chosen.block)
    # The old node's choice, 192.0.2.N/32 for N in 1..254, could take eth0's own address or
    # the gateway's; none of the candidates is in eth0's network.
    assert not any(block.overlaps(ipaddress.IPv4Network("192.0.2.0/24"))
                   for block in netns.free_blocks([]))


def test_a_taken_block_is_never_chosen_and_the_next_pool_serves() -> None:
    """Another link's /30 and a route to a block take them; so does the reserved range."""
    routes = [*MACHINE_ROUTES, {"dst": "10.244.0.0/17", "dev": "wg0"},
              {"dst": "10.244.128.0/17", "type": "unreachable"}]
    chosen = netns.choose_block(MACHINE_ADDRESSES, routes, rng=random.Random(1))
    assert chosen.block.subnet_of(ipaddress.IPv4Network("172.29.0.0/16"))
    addresses = [*MACHINE_ADDRESSES, {"ifname": "lkh9", "addr_info": [
        {"family": "inet", "local": "10.244.7.129", "prefixlen": 30}]}]
    for seed in range(100):
        block = netns.choose_block(addresses, MACHINE_ROUTES, rng=random.Random(seed)).block
        assert block != ipaddress.IPv4Network("10.244.7.0/24")
        reserved = [ipaddress.IPv4Network("10.244.0.0/17")]
        block = netns.choose_block(MACHINE_ADDRESSES, MACHINE_ROUTES, reserved,
                                   rng=random.Random(seed)).block
        assert block.subnet_of(ipaddress.IPv4Network("10.244.128.0/17"))


def test_no_free_block_is_refused_with_why() -> None:
    routes = [*MACHINE_ROUTES, {"dst": "10.0.0.0/8"}, {"dst": "172.16.0.0/12"},
              {"dst": "192.168.0.0/16"}]
    with pytest.raises(netns.NetworkError) as refused:
        netns.choose_block(MACHINE_ADDRESSES, routes)
    said = str(refused.value)
    assert "no free /24 for the kubelet node's network" in said
    assert "10.244.0.0/16" in said and "192.168.0.0/16" in said  # what was tried
    assert "10.0.0.0/8" in said and "192.0.2.0/24" in said  # what took them


def test_the_python_image_holds_what_ldd_names_and_no_test_suite(tmp_path: Path) -> None:
    ldd = ("\tlinux-vdso.so.1 (0x00007ffd)\n"
           "\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f77)\n"
           "\t/lib64/ld-linux-x86-64.so.2 (0x00007f77)\n")
    assert kubelet_node.python_libraries([ldd, ldd]) == [
        Path("/lib/x86_64-linux-gnu/libm.so.6"), Path("/lib64/ld-linux-x86-64.so.2")]
    stdlib = tmp_path / "usr" / "lib" / "python3.11"
    for name in ("os.py", "json/__init__.py", "test/test_os.py", "config-3.11-x/libpython.a"):
        (stdlib / name).parent.mkdir(parents=True, exist_ok=True)
        (stdlib / name).write_text("#")
    interpreter = tmp_path / "python3.11"
    interpreter.write_bytes(b"\x7fELF")
    files, links = node_image.python_files(interpreter, stdlib, [])
    names = {name.split("python3.11/")[-1] for name in files}
    assert names == {"usr/bin/python3.11", "os.py", "json/__init__.py"}
    assert links["usr/bin/python3"] == "python3.11"


@pytest.fixture(scope="module")
def kubesim(localkube_session: Localkube) -> Iterator[Localkube]:
    yield localkube_session


def _squarepeg(cluster: Localkube, namespace: str,
               *args: str) -> subprocess.CompletedProcess[bytes]:
    return squarepeg(cluster.env, "run", "-n", namespace, *args, timeout=120)


def _needs_the_kubelet(cluster: Localkube) -> None:
    if cluster.node != "kubelet":
        pytest.skip("this session's node is the node agent (LOCALKUBE_NODE=agent)")


def test_squarepeg_on_the_real_kubelet(kubesim: Localkube, namespace: str) -> None:
    _needs_the_kubelet(kubesim)
    nodes = json.loads(kubesim.kubectl("get", "nodes", "-o", "json", check=True).stdout)
    [node] = nodes["items"]
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    done = _squarepeg(kubesim, namespace, "alpine", "sh", "-c",
                      "echo hi; grep -c kubepods /proc/self/cgroup; exit 3")
    assert (done.returncode, done.stdout.split(b"\n")[0]) == (3, b"hi"), done.stderr
    assert int(done.stdout.split(b"\n")[1]) > 0  # in the kubelet's cgroups
    oom = _squarepeg(kubesim, namespace, "-m", "50m", "busybox", "dd", "if=/dev/zero",
                     "of=/dev/null", "bs=200M", "count=1")
    assert oom.returncode == 137 and b"OOMKilled" in oom.stderr, oom.stderr
    typo = _squarepeg(kubesim, namespace, "alpinee", "true")
    assert typo.returncode == 125 and b"ErrImagePull" in typo.stderr, typo.stderr
    assert b"docker.io/library/alpinee:latest: not found" in typo.stderr


def _cluster_pids(cluster: Localkube) -> dict[str, int]:
    """The pid of each of the cluster's processes, by its program's name."""
    found = {}
    for pid, _ in descendants(cluster.process.pid):
        with contextlib.suppress(OSError):
            found[Path(os.readlink(f"/proc/{pid}/exe")).name] = pid
    return found


def test_the_node_network_is_a_namespace_of_its_own(kubesim: Localkube) -> None:
    """The kubelet, containerd and the pods' bridge are in a network namespace that is not
    the machine's; the machine gained one link (the veth's host end) with one address, in a
    /30 that overlaps no other address or route it has, and the node's InternalIP is not
    one of the machine's addresses."""
    _needs_the_kubelet(kubesim)
    pids = _cluster_pids(kubesim)
    host = os.readlink("/proc/self/ns/net")
    node = os.readlink(f"/proc/{pids['kubelet']}/ns/net")
    assert node != host
    assert os.readlink(f"/proc/{pids['containerd']}/ns/net") == node
    assert os.readlink(f"/proc/{pids['kube-apiserver']}/ns/net") == host
    nodes = json.loads(kubesim.kubectl("get", "nodes", "-o", "json", check=True).stdout)
    [internal] = [a["address"] for a in nodes["items"][0]["status"]["addresses"]
                  if a["type"] == "InternalIP"]
    ours = f"lkh{kubesim.process.pid}"  # scripts/localkube execs the launcher in place
    addresses, routes = ip_json("-4", "addr"), ip_json("-4", "route", "show", "table", "all")
    held = {(link["ifname"], info["local"]) for link in addresses
            for info in link.get("addr_info") or [] if info.get("family") == "inet"}
    assert internal not in {address for _, address in held}
    [(_, host_end)] = [(name, address) for name, address in held if name == ours]
    link = ipaddress.IPv4Network(f"{host_end}/30", strict=False)
    assert ipaddress.ip_address(internal) in link
    others = netns.taken_networks(
        [a for a in addresses if a["ifname"] != ours],
        [r for r in routes if r.get("dev") != ours])
    assert not any(link.overlaps(other) for other in others), others
    inside = run(["nsenter", f"--net=/proc/{pids['kubelet']}/ns/net", "ip", "-j", "-4",
                  "route"], check=True).stdout
    node_routes = json.loads(inside)
    assert not any(r["dst"] == "default" for r in node_routes), node_routes  # goes nowhere
    assert {r["dev"] for r in node_routes} == {netns.NODE_LINK, netns.BRIDGE}, node_routes


def _mount_points() -> list[str]:
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]


def test_a_stopped_kubelet_node_leaves_nothing(tmp_path: Path) -> None:
    """A localkube of the test's own, with a pod running when it is stopped: afterwards no
    process of it, no link, no mount, no cgroup, no state directory are left, nor the files
    the kubelet and libcni write outside it (container log links, cached CNI results)."""
    var_log_before = _mount_points().count(str(kubelet_node.NODE_VAR_LOG))
    cluster = Localkube(tmp_path, node="kubelet")
    launcher = cluster.process.pid
    try:
        state = Path(re.findall(r"state in (\S+)", cluster.err.read_text())[-1])
        run = cluster.kubectl("run", "left", "--image=alpine", "--restart=Never", "--",
                              "sleep", "600")
        assert run.returncode == 0, run.stderr
        wait_until(lambda: b"Running" in cluster.kubectl(
            "get", "pod", "left", "-o", "jsonpath={.status.phase}").stdout, 60, "Running")
        assert any(p.startswith(str(state)) for p in _mount_points())
        # The node's /var/log is in its own mount namespace, not the machine's.
        assert _mount_points().count(str(kubelet_node.NODE_VAR_LOG)) == var_log_before
        kubelet = _cluster_pids(cluster)["kubelet"]
        assert os.readlink(f"/proc/{kubelet}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        node_mounts = Path(f"/proc/{kubelet}/mountinfo").read_text()
        assert f"{state}/node/var-log /var/log " in node_mounts.replace("\\040", " ") or \
            any(line.split()[4] == "/var/log" for line in node_mounts.splitlines())
        assert f"lkh{launcher}" in {link["ifname"] for link in ip_json("link")}
        assert _shared_files_of(state)  # so the check below can see them
    finally:
        cluster.stop()  # fails if a process started under it outlived it
    assert not state.exists()
    assert not [p for p in _mount_points() if p.startswith(str(state))]
    assert f"lkh{launcher}" not in {link["ifname"] for link in ip_json("link")}
    assert _mount_points().count(str(kubelet_node.NODE_VAR_LOG)) == var_log_before
    assert not list(Path("/sys/fs/cgroup").glob(f"*/localkube-{launcher}"))
    assert not _shared_files_of(state)


def _shared_files_of(state: Path) -> list[Path]:
    """The container log links into `state` and the cached CNI results naming it."""
    found = []
    for link in kubelet_node.CONTAINER_LOG_LINKS.glob("*.log"):
        with contextlib.suppress(OSError):
            if os.readlink(link).startswith(f"{state}/"):
                found.append(link)
    for cached in kubelet_node.CNI_RESULTS.glob("*"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            config = base64.b64decode(json.loads(cached.read_text())["config"])
            if str(state).encode() in config:
                found.append(cached)
    return found
