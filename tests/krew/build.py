"""krew itself for the tests: the real `krew` and its `validate-krew-manifest`, built from the
Go module proxy at a pinned version, `render-krew-template` (./render), which renders
krew-release-bot's `.krew.yaml` with Go's text/template as the bot does, and `actionlint`
(pinned), which checks the release workflow.

Owns what is built and where it is kept (tests/e2e/test_krew.py uses it; `scripts/krew`
is its command line):

- `krew` and `validate-krew-manifest` of `sigs.k8s.io/krew` KREW_VERSION, by `go install
  PACKAGE@VERSION` (no module of the project's own: krew's go.mod is used as it is);
- `render-krew-template`, from ./render (the standard library only);
- `actionlint` of `github.com/rhysd/actionlint` ACTIONLINT_VERSION, by `go install`;
- into `$XDG_CACHE_HOME/kubectl-squarepeg/krew/KREW_VERSION/bin` (default `~/.cache/...`),
  beside a stamp holding the hash of the pinned versions and ./render's files, the way localkube
  keeps its binaries (tests/localkube/build.py's build_staged: a staging directory renamed
  into place only when every step succeeded, at `nice -n 19`). A lock file makes two
  sessions (or pytest workers) that build at once build once.

Built in 6 min 15 s with empty Go caches (GOMODCACHE and GOCACHE; downloads included, at
load 15), 44 s with this machine's Go caches, 0.3 s when current (docs/release.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.localkube import build

KREW_VERSION = "v0.4.3"
KREW_MODULE = "sigs.k8s.io/krew"
RENDER_MODULE = Path(__file__).resolve().parent / "render"
KREW = "krew"
VALIDATE = "validate-krew-manifest"
RENDER = "render-krew-template"
ACTIONLINT_MODULE = "github.com/rhysd/actionlint"
ACTIONLINT_VERSION = "v1.7.12"
ACTIONLINT = "actionlint"
BINARIES = (KREW, VALIDATE, RENDER, ACTIONLINT)
BuildError = build.BuildError


def bin_dir() -> Path:
    return build.cache_root().parent / "krew" / KREW_VERSION / "bin"


def source_hash() -> str:
    pinned = f"{KREW_MODULE}@{KREW_VERSION}\0{ACTIONLINT_MODULE}@{ACTIONLINT_VERSION}\0"
    digest = hashlib.sha256(pinned.encode())
    for path in sorted(p for p in RENDER_MODULE.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(RENDER_MODULE)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def is_built() -> bool:
    return build.is_current(bin_dir(), BINARIES, source_hash())


def path_of(name: str) -> Path:
    return bin_dir() / name


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    lock = bin_dir().parent / ".build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
        yield


def _go_install(what: str, packages: list[str]) -> build.Step:
    def install(staging: Path, log_file: Path) -> None:
        build.run_logged([build.go_command(), "install", "-trimpath", "-ldflags", "-s -w",
                          *packages], staging, log_file, "go install",
                         {"GOBIN": str(staging), "GOFLAGS": "-buildvcs=false"})

    return f"{what} from the Go module proxy", install


def ensure_built(say: Callable[[str], None]) -> bool:
    """Build what is missing; True if something was built. BuildError if Go is missing or
    a build failed."""
    if is_built():
        return False
    with _locked():
        if is_built():  # another process built it while this one waited
            return False
        build.build_staged(bin_dir(), source_hash(), [
            _go_install(f"krew and validate-krew-manifest {KREW_VERSION}",
                        [f"{KREW_MODULE}/cmd/{name}@{KREW_VERSION}" for name in (KREW, VALIDATE)]),
            _go_install(f"actionlint {ACTIONLINT_VERSION}",
                        [f"{ACTIONLINT_MODULE}/cmd/{ACTIONLINT}@{ACTIONLINT_VERSION}"]),
            (RENDER, lambda staging, log_file: build.go_build(
                RENDER_MODULE, ["."], staging / RENDER, "-s -w", log_file)),
        ], say, "build.log")
    return True


def main(argv: list[str]) -> int:
    if argv == ["--path"]:
        if not is_built():
            return 1
        print(bin_dir())
        return 0
    if argv == ["--check"]:
        built = is_built()
        print(f"krew {KREW_VERSION}: {'built' if built else 'not built'} in {bin_dir()}",
              file=sys.stderr)
        return 0 if built else 1
    if argv:
        print("usage: scripts/krew [--check | --path]", file=sys.stderr)
        return 2
    try:
        ensure_built(lambda line: print(f"krew: {line}", file=sys.stderr))
    except build.BuildError as exc:
        print(f"krew: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
