"""The localkube binaries: etcd, kube-apiserver, kube-controller-manager and kube-scheduler,
built from the Go module proxy at a pinned release and cached outside the checkout.

Owns the releases localkube can build (RELEASES: v1.34.4, the default, and v1.37.2), which
one is selected (`LOCALKUBE_RELEASE`, e.g. `1.37`; `scripts/localkube --release` and pytest's
`--localkube-release` set it), where the binaries live and how they are built:

- `gobuild/kube/` is a Go module of the project's own that requires `k8s.io/kubernetes` at
  v1.34.4 and replaces each of its staging modules (`k8s.io/api`, `k8s.io/client-go`, ...,
  `./staging/...` at v0.0.0 in kubernetes' own go.mod, which the proxy cannot serve) by the
  published v0.MINOR.PATCH; `gobuild-1.37/kube/` is the same for v1.37.2, outside
  `gobuild/` so that the first release's stamp (below) does not move. `gobuild/etcd/`
  requires `go.etcd.io/etcd/server/v3`, in a module of its own so that etcd's dependencies
  never move Kubernetes'; both releases use it (1.37's kubeadm accepts an external etcd
  from 3.5.24 on).
- The binaries go to `$XDG_CACHE_HOME/kubectl-squarepeg/localkube/RELEASE/bin` (default
  `~/.cache/...`), beside a stamp holding the hash of the release's module files (all of
  `gobuild/` for v1.34.4; `gobuild-1.37/` and `gobuild/etcd/` for v1.37.2): a second start
  builds nothing, a change to a go.mod rebuilds. Go's own caches (GOMODCACHE, GOCACHE) are
  used as they are.
- The API server reports RELEASE from `/version` only if the build says so: the version
  variables of k8s.io/component-base and client-go are set with `-ldflags -X`, as
  kubernetes' own build does (without them it answers v0.0.0-master and the kubectl
  dispatcher cannot pick a kubectl by minor).
- Builds run at `nice -n 19` (the machines are shared); each prints what it builds and how
  long it took on the `log` callable.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

ETCD_VERSION = "v3.6.16"
HERE = Path(__file__).resolve().parent
GOBUILD = HERE / "gobuild"
ETCD_MODULE = GOBUILD / "etcd"
RELEASE_VARIABLE = "LOCALKUBE_RELEASE"
KUBE_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
BINARIES = ("etcd", *KUBE_COMMANDS)
STAMP = ".source-hash"

# One step of a build: what it builds, and how, given the staging directory and the log file.
Step = tuple[str, Callable[[Path, Path], None]]


class BuildError(RuntimeError):
    """go is missing or a build failed; str() says which and where its log is."""


class UnknownRelease(ValueError):
    """A release localkube does not build; str() names the ones it does."""


@dataclass(frozen=True)
class Release:
    """One Kubernetes release localkube builds: its tag and the folder holding its `kube/`
    module (control plane and kubelet; etcd is ETCD_MODULE for every release)."""

    version: str
    modules: Path

    @property
    def minor(self) -> str:
        return ".".join(self.version.lstrip("v").split(".")[:2])


RELEASES = (Release("v1.34.4", GOBUILD), Release("v1.37.2", HERE / "gobuild-1.37"))
DEFAULT_RELEASE = RELEASES[0]


def selected(name: str | None = None) -> Release:
    """The release `name` (else $LOCALKUBE_RELEASE, else the default) names: `1.37`,
    `1.37.2` or `v1.37.2`; UnknownRelease for any other."""
    name = name or os.environ.get(RELEASE_VARIABLE) or DEFAULT_RELEASE.version
    for release in RELEASES:
        if name.lstrip("v") in (release.minor, release.version.lstrip("v")):
            return release
    known = ", ".join(f"{r.minor} ({r.version})" for r in RELEASES)
    raise UnknownRelease(f"localkube builds no Kubernetes release {name!r}; it builds {known}")


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kubectl-squarepeg" / "localkube"


def bin_dir(release: Release | None = None) -> Path:
    return cache_root() / (release or selected()).version / "bin"


def source_hash(release: Release | None = None) -> str:
    """Hash of every file of the Go modules that make the release's binaries. For the
    default release that is `gobuild/` alone, hashed as before there were two releases, so
    that its cached binaries stay current."""
    release = release or selected()
    roots = [release.modules]
    if not ETCD_MODULE.is_relative_to(release.modules):
        roots.append(ETCD_MODULE)
    digest = hashlib.sha256()
    for root in roots:
        base = root if root == release.modules else root.parent
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(base)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def is_current(directory: Path, names: Iterable[str], digest: str) -> bool:
    """Every binary of `names` in `directory`, built from sources whose hash is `digest`."""
    stamp = directory / STAMP
    return (all(os.access(directory / name, os.X_OK) for name in names)
            and stamp.is_file() and stamp.read_text().strip() == digest)


def is_built(release: Release | None = None) -> bool:
    release = release or selected()
    return is_current(bin_dir(release), BINARIES, source_hash(release))


def version_ldflags(release: Release | None = None) -> str:
    version = (release or selected()).version
    major, minor = version.lstrip("v").split(".")[:2]
    flags = ["-s", "-w"]
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {package}.gitVersion={version}", f"-X {package}.gitMajor={major}",
                  f"-X {package}.gitMinor={minor}", f"-X {package}.gitTreeState=clean",
                  f"-X {package}.buildDate=1970-01-01T00:00:00Z"]
    return " ".join(flags)


def run_logged(argv: list[str], cwd: Path, log_file: Path, what: str,
               env: dict[str, str] | None = None) -> None:
    """Run `argv` at `nice -n 19` in `cwd`, its output appended to `log_file`; BuildError
    naming `what` and showing the log's end if it fails."""
    full = ["nice", "-n", "19", *argv]
    with log_file.open("ab") as handle:
        handle.write(f"$ (cd {cwd} && {' '.join(full)})\n".encode())
        handle.flush()
        done = subprocess.run(full, cwd=cwd, env={**os.environ, **(env or {})}, stdout=handle,
                              stderr=handle, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        tail = log_file.read_text(errors="replace").splitlines()[-15:]
        raise BuildError(f"{what} in {cwd} failed (exit {done.returncode}); the last "
                         f"lines of {log_file}:\n" + "\n".join(tail))


def go_command() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("localkube needs Go (1.24 or newer) on PATH to build the control plane")
    return go


def go_build(module: Path, packages: list[str], out: Path, ldflags: str,
             log_file: Path) -> None:
    run_logged([go_command(), "build", "-trimpath", "-ldflags", ldflags, "-o", str(out),
                *packages], module, log_file, "go build", {"GOFLAGS": "-buildvcs=false"})


def build_staged(target: Path, digest: str, steps: list[Step], log: Callable[[str], None],
                 log_name: str) -> None:
    """Run each (what, build(staging, log_file)) step into a fresh directory beside `target`
    and put it in `target`'s place, stamped with `digest`, only when every step succeeded."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=target.parent))
    log_file = target.parent / log_name
    log_file.write_bytes(b"")
    began = time.monotonic()
    try:
        for what, step in steps:
            log(f"building {what} (first time only; log: {log_file})")
            step_began = time.monotonic()
            step(staging, log_file)
            log(f"built {what} in {time.monotonic() - step_began:.0f}s")
        (staging / STAMP).write_text(digest + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log(f"build finished in {time.monotonic() - began:.0f}s; binaries in {target}")


def ensure_built(log: Callable[[str], None], release: Release | None = None) -> bool:
    """Build what is missing of `release` (default: the selected one); True if something
    was built."""
    release = release or selected()
    if is_built(release):
        return False
    kube = [f"k8s.io/kubernetes/cmd/{c}" for c in KUBE_COMMANDS]
    build_staged(bin_dir(release), source_hash(release), [
        (f"kube-apiserver, kube-controller-manager and kube-scheduler {release.version} from "
         "the Go module proxy",
         lambda staging, log_file: go_build(release.modules / "kube", kube, staging,
                                            version_ldflags(release), log_file)),
        (f"etcd {ETCD_VERSION}",
         lambda staging, log_file: go_build(ETCD_MODULE, ["go.etcd.io/etcd/server/v3"],
                                            staging / "etcd", "-s -w", log_file)),
    ], log, "build.log")
    return True
