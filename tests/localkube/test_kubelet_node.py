"""The opt-in kubelet node (`scripts/localkube serve --node kubelet`, kubelet_node.py): its
pure parts (images, configuration, mount order), and `kubectl squarepeg` on the real kubelet,
which is skipped unless the session's localkube runs it (LOCALKUBE_NODE=kubelet; it is not
the default and not in CI: its build adds minutes, see tests/localkube/README.md).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Localkube
from tests.localkube import build, kubelet_node, node_build, node_image

KUBELET_NODE = os.environ.get("LOCALKUBE_NODE") == "kubelet"
SQUAREPEG = str(Path(sys.executable).parent / "kubectl-squarepeg")


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


def test_the_configuration_fits_this_machine() -> None:
    config = kubelet_node.kubelet_config("192.0.2.7", 10250, 10248, Path("/s/c.sock"),
                                         "/localkube-7")
    assert config["cgroupDriver"] == "cgroupfs" and config["cgroupRoot"] == "/localkube-7"
    assert config["failSwapOn"] is False and config["failCgroupV1"] is False
    assert config["address"] == "192.0.2.7" and config["healthzBindAddress"] == "127.0.0.1"
    containerd = kubelet_node.containerd_config(Path("/s"), Path("/b"))
    assert "restrict_oom_score_adj = true" in containerd
    assert 'BinaryName = "/b/runc"' in containerd and "SystemdCgroup = false" in containerd
    conflist = json.loads(kubelet_node.cni_conflist("lkcni7", "10.244.7.0/24", Path("/i")))
    assert conflist["plugins"][0]["ipMasq"] is False


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


@pytest.fixture(scope="module")
def kubesim(localkube_session: Localkube) -> Iterator[Localkube]:
    yield localkube_session


def _squarepeg(cluster: Localkube, namespace: str,
               *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([SQUAREPEG, "run", "-n", namespace, *args], env=cluster.env,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=120)


@pytest.mark.skipif(not KUBELET_NODE, reason="opt-in: the session's localkube runs the real "
                    "kubelet only with LOCALKUBE_NODE=kubelet (tests/localkube/README.md)")
def test_squarepeg_on_the_real_kubelet(kubesim: Localkube, namespace: str) -> None:
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
