"""The binaries of the kubelet node (localkube's default node): kubelet, containerd,
runc, the CNI plugins, a registry and the pause program, cached beside the control plane's.

Owns their pinned versions and how they are built. The kubelet comes from the control
plane's own module (the selected release's `kube/`, build.py, with the same version
`-ldflags`); the others, the same for every release, are modules without `replace`
directives, so `go install MODULE/CMD@VERSION` builds them with their own go.sum checks and
no module file of ours. runc is cgo and built with the `seccomp`
tag (it needs libseccomp-dev); the pause program is C of our own (`node/pause.c`), linked
statically. The images need Debian's `busybox-static` and `python3.11` (checked here, used
by kubelet_node); running the node needs iproute2's `ip` and util-linux's `unshare` and
`nsenter` (checked here too, so that a fresh machine learns it all at once).
APT_PACKAGES is what scripts/test installs on a machine that lacks them.
Everything goes to `$XDG_CACHE_HOME/kubectl-squarepeg/localkube/RELEASE/node-bin` with a
stamp of the pins; builds run at `nice -n 19` and say what they build and how long it took.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.localkube import build
from tests.localkube.build import BuildError

CONTAINERD = ("github.com/containerd/containerd/v2", "v2.2.9")
RUNC = ("github.com/opencontainers/runc", "v1.4.2")
CNI_PLUGINS = ("github.com/containernetworking/plugins", "v1.9.1")
CRANE = ("github.com/google/go-containerregistry", "v0.22.1")
PAUSE_SOURCE = Path(__file__).resolve().parent / "node" / "pause.c"
BUSYBOX = Path("/bin/busybox")
PYTHON = Path("/usr/bin/python3.11")
APT_PACKAGES = ("gcc", "libc6-dev", "pkg-config", "libseccomp-dev", "busybox-static",
                "python3.11", "iproute2", "util-linux")
BINARIES = ("kubelet", "containerd", "containerd-shim-runc-v2", "ctr", "runc", "loopback",
            "bridge", "host-local", "crane", "pause")


def bin_dir(release: build.Release | None = None) -> Path:
    return build.cache_root() / (release or build.selected()).version / "node-bin"


def pins_hash(release: build.Release | None = None) -> str:
    release = release or build.selected()
    digest = hashlib.sha256()
    digest.update(repr((release.version, CONTAINERD, RUNC, CNI_PLUGINS, CRANE)).encode())
    digest.update(PAUSE_SOURCE.read_bytes())
    digest.update(build.source_hash(release).encode())
    return digest.hexdigest()[:16]


def is_built(release: build.Release | None = None) -> bool:
    release = release or build.selected()
    return build.is_current(bin_dir(release), BINARIES, pins_hash(release))


def is_static_elf(data: bytes) -> bool:
    """True for a 64-bit little-endian ELF without a program interpreter (PT_INTERP)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return False
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    return all(struct.unpack_from("<I", data, phoff + i * phentsize)[0] != 3
               for i in range(phnum))


def check_prerequisites() -> None:
    """The node's needs beyond Go, each with how to get it."""
    if shutil.which("gcc") is None or shutil.which("pkg-config") is None:
        raise BuildError("the kubelet node needs gcc and pkg-config (runc is cgo): "
                               "apt-get install gcc pkg-config")
    if not (Path("/usr/include/seccomp.h").exists()):
        raise BuildError("the kubelet node needs libseccomp's headers for runc: "
                               "apt-get install libseccomp-dev")
    check_runtime_needs()


def check_runtime_needs() -> None:
    """What running the node needs besides its binaries (BuildError says how to get it)."""
    missing = [tool for tool in ("ip", "unshare", "nsenter", "ldd") if shutil.which(tool) is None]
    if missing:
        raise BuildError(f"the kubelet node needs {', '.join(missing)} (its network "
                               "namespace): apt-get install iproute2 util-linux libc-bin")
    if not (PYTHON.exists() and (Path("/usr/lib") / PYTHON.name / "os.py").exists()):
        raise BuildError(f"the kubelet node's python image needs Debian's {PYTHON} "
                               "and its standard library: apt-get install python3.11")
    if not (BUSYBOX.exists() and is_static_elf(BUSYBOX.read_bytes())):
        raise BuildError(f"the kubelet node's images need a static {BUSYBOX}: "
                               "apt-get install busybox-static")


def missing_packages() -> list[str]:
    """The APT_PACKAGES dpkg does not list as installed."""
    missing = []
    for package in APT_PACKAGES:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0 or not done.stdout.endswith(" installed"):
            missing.append(package)
    return missing


def install_packages(log: Callable[[str], None]) -> None:
    """`apt-get install` the missing APT_PACKAGES (as root, noninteractive); nothing when
    they are all there; BuildError when they cannot be (not root, no apt, apt failed)."""
    if shutil.which("dpkg-query") is None or shutil.which("apt-get") is None:
        log("no dpkg/apt-get here: the kubelet node's packages are not checked")
        return
    missing = missing_packages()
    if not missing:
        return
    command = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]
    if os.geteuid() != 0:
        raise BuildError(f"the kubelet node needs {', '.join(missing)}: "
                         f"sudo apt-get update && sudo {' '.join(command)}")
    log(f"installing {', '.join(missing)} with apt-get")
    began = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for argv in (["apt-get", "update", "-q"], command):
        done = subprocess.run(argv, capture_output=True, text=True, env=env,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise BuildError(f"{' '.join(argv)} failed (exit {done.returncode}):\n"
                             + "\n".join((done.stderr or done.stdout).splitlines()[-10:]))
    log(f"installed {', '.join(missing)} in {time.monotonic() - began:.0f}s")


def _go_install(packages: list[str], target: Path, ldflags: str, log_file: Path,
                tags: str = "") -> None:
    argv = [build.go_command(), "install", "-trimpath", "-ldflags", ldflags]
    argv += ["-tags", tags] if tags else []
    build.run_logged([*argv, *packages], target, log_file, "go install",
                     {"GOFLAGS": "-buildvcs=false", "GOBIN": str(target)})


def ensure_built(log: Callable[[str], None], install: bool = False,
                 release: build.Release | None = None) -> bool:
    """Build what is missing of `release`'s node (default: the selected release; with
    `install`, first apt-get install the packages it needs); True if something was built."""
    release = release or build.selected()
    if install:
        install_packages(log)
    if is_built(release):
        return False
    check_prerequisites()
    containerd, containerd_version = CONTAINERD
    runc, runc_version = RUNC
    plugins, plugins_version = CNI_PLUGINS
    crane, crane_version = CRANE
    build.build_staged(bin_dir(release), pins_hash(release), [
        (f"kubelet {release.version}", lambda staging, log_file: build.go_build(
            release.modules / "kube", ["k8s.io/kubernetes/cmd/kubelet"], staging / "kubelet",
            build.version_ldflags(release), log_file)),
        (f"runc {runc_version}", lambda staging, log_file: _go_install(
            [f"{runc}@{runc_version}"], staging,
            f"-s -w -X main.version={runc_version.lstrip('v')}", log_file, tags="seccomp")),
        (f"containerd {containerd_version}", lambda staging, log_file: _go_install(
            [f"{containerd}/cmd/{c}@{containerd_version}"
             for c in ("containerd", "containerd-shim-runc-v2", "ctr")], staging,
            f"-s -w -X {containerd}/version.Version={containerd_version}", log_file)),
        (f"CNI plugins {plugins_version}", lambda staging, log_file: _go_install(
            [f"{plugins}/plugins/{p}@{plugins_version}"
             for p in ("main/loopback", "main/bridge", "ipam/host-local")], staging,
            "-s -w", log_file)),
        (f"crane {crane_version} (the registry)", lambda staging, log_file: _go_install(
            [f"{crane}/cmd/crane@{crane_version}"], staging, "-s -w", log_file)),
        ("pause", lambda staging, log_file: build.run_logged(
            ["gcc", "-O2", "-static", "-o", str(staging / "pause"), str(PAUSE_SOURCE)],
            staging, log_file, "gcc")),
    ], log, "node-build.log")
    return True
