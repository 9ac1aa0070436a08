"""kubectl of localkube's default release (build.DEFAULT_RELEASE, v1.34.4), built from the Go
module proxy like the control plane, for the kubectl matrix's third smoke cell (scripts/test,
issue 24).

Its Go module is `gobuild-kubectl/`, outside build.py's `gobuild/` on purpose: build.py's stamp
hashes every file there, so a module added beside the control plane's would rebuild the
control plane on every machine that has it cached. It requires the same k8s.io/kubernetes
with the same replace block (staging modules at their published versions); `go mod tidy`
added kustomize and the rest of kubectl's own dependencies. The binary goes to
`$XDG_CACHE_HOME/kubectl-squarepeg/localkube/RELEASE/kubectl-bin/kubectl`, stamped with the
hash of that module's files, with the same version ldflags (`kubectl version --client` says
RELEASE). Built in 32 s on this machine with Go's build cache warm from the control plane's
build (it shares client-go and apimachinery), 2026-12-04.

    python -m tests.localkube.kubectl_build          build it unless current; 1 if that failed
    python -m tests.localkube.kubectl_build --path   print its path if built, else exit 1
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from pathlib import Path

from tests.localkube import build

MODULE = Path(__file__).resolve().parent / "gobuild-kubectl"


def bin_dir() -> Path:
    return build.cache_root() / build.DEFAULT_RELEASE.version / "kubectl-bin"


def source_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in MODULE.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(MODULE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def is_built() -> bool:
    return build.is_current(bin_dir(), ["kubectl"], source_hash())


def ensure_built(say: Callable[[str], None]) -> bool:
    """Build kubectl unless it is current; True if it was built."""
    if is_built():
        return False
    build.build_staged(bin_dir(), source_hash(), [
        (f"kubectl {build.DEFAULT_RELEASE.version} from the Go module proxy",
         lambda staging, log_file: build.go_build(MODULE, ["k8s.io/kubernetes/cmd/kubectl"],
                                                  staging / "kubectl",
                                                  build.version_ldflags(build.DEFAULT_RELEASE),
                                                  log_file)),
    ], say, "kubectl-build.log")
    return True


def main(argv: list[str]) -> int:
    if argv == ["--path"]:
        if not is_built():
            return 1
        print(bin_dir() / "kubectl")
        return 0
    try:
        ensure_built(lambda line: print(f"localkube: {line}", file=sys.stderr))
    except build.BuildError as exc:
        print(f"localkube: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
