"""The release installed by the real krew for scripts/test's smoke cell through krew.

`python -m tests.krew.smoke_install install ROOT` builds this checkout's release into
ROOT/dist (scripts/build-release: the archive and its manifest), builds krew when it is not
cached (tests/krew/build.py), installs the archive with `krew install --manifest --archive`
into KREW_ROOT=ROOT/krew, and prints the path of the `kubectl-squarepeg` link krew made: what
`kubectl squarepeg` runs for a user who installed it with krew. The e2e smoke set then runs
that link (SQUAREPEG_TEST_BINARY, tests/e2e/conftest.py) on localkube's real node; ROOT is
then removed (that `krew uninstall` leaves nothing behind is test_krew.py's).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.krew import build as krew_build

CHECKOUT = Path(__file__).resolve().parents[2]


def _say(text: str) -> None:
    print(f"smoke_install: {text}", file=sys.stderr)


def _krew(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KREW_ROOT": str(root / "krew")}
    return subprocess.run([str(krew_build.path_of(krew_build.KREW)), *args], env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def install(root: Path) -> int:
    try:
        krew_build.ensure_built(_say)
    except Exception as exc:  # BuildError: Go missing, or a build failed
        _say(f"building krew failed: {exc}")
        return 1
    dist = root / "dist"
    manifest = root / "source-plugin.yaml"
    manifest.write_bytes((CHECKOUT / "plugin.yaml").read_bytes())
    built = subprocess.run(
        [sys.executable, str(CHECKOUT / "scripts" / "build-release"), "--out", str(dist),
         "--manifest", str(manifest)],
        capture_output=True, text=True, timeout=900, check=False,
    )
    if built.returncode != 0:
        _say(f"scripts/build-release failed: {built.stderr.strip()}")
        return 1
    [archive] = sorted(dist.glob("kubectl-squarepeg-v*.tar.gz"))
    done = _krew(root, "install", f"--manifest={dist / 'plugin.yaml'}", f"--archive={archive}")
    if done.returncode != 0:
        _say(f"krew install failed: {done.stderr.strip()}")
        return 1
    link = root / "krew" / "bin" / "kubectl-squarepeg"
    if not os.access(link, os.X_OK):
        _say(f"krew made no executable link at {link}")
        return 1
    print(link)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] != "install":
        _say("usage: python -m tests.krew.smoke_install install ROOT")
        return 2
    return install(Path(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
