"""Files in and out on a cluster (docs/decisions/0180 and 0220), through the installed
`kubectl-squarepeg` and the real kubectl: the same tests on kubesim and on the real node.

- A tree (nested directories, an executable, a symlink inside it, an empty directory, a
  non-ASCII name) arrives with the same sha256 sums, modes and link, checked inside the
  container; in the same run a second mount `:ro` refuses a write (EROFS), and the `rw` one
  brings back a file the container wrote and one it changed, byte-exact.
- A named volume: a missing claim is reported from the scheduler's answer; an existing one
  passes `--dry-run-server` (a run would need a bound volume, which neither cluster makes).
- Ctrl-C while the upload runs: exit 130, the pod deleted, nothing local changed.
The helper image is the node's busybox (`files_helper_image`), as an air-gapped user would
point it at a mirror.
"""

from __future__ import annotations

import hashlib
import os
import select
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import selected_cluster
from tests.e2e.conftest import Squarepeg, names
from tests.e2e.test_interrupt_e2e import terminal  # noqa: F401  # the fixture
from tests.helpers import wait_until

NON_ASCII = "größe ü.txt"


def _config(squarepeg: Squarepeg) -> dict[str, str]:
    path = squarepeg.home / "files.yaml"
    path.write_text("files_helper_image: busybox\n")
    return {"SQUAREPEG_CONFIG": str(path)}


def _tree(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "a" / "b" / "deep.bin").write_bytes(bytes(range(256)) * 40)
    (root / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (root / "run.sh").chmod(0o755)
    (root / "private.txt").write_text("mine\n")
    (root / "private.txt").chmod(0o600)
    (root / NON_ASCII).write_text("ü\n")
    (root / "changed.txt").write_text("before\n")
    os.symlink("a/b/deep.bin", root / "link")


def _expected(root: Path) -> list[str]:
    """What the container's check prints for the tree as it is here."""
    lines = []
    for path in sorted(root.rglob("*")):
        name = "./" + str(path.relative_to(root))
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            lines.append(f"L {name} {os.readlink(path)}")
        elif stat.S_ISDIR(info.st_mode):
            lines.append(f"D {name} {stat.S_IMODE(info.st_mode):o}")
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            lines.append(f"F {name} {stat.S_IMODE(info.st_mode):o} {digest}")
    return sorted(lines)


# Inside the container: one line per entry, as _expected writes them (busybox and GNU alike).
CHECK = r"""
cd /src && find . -mindepth 1 | while read -r p; do
  if [ -L "$p" ]; then echo "L $p $(readlink "$p")"
  elif [ -d "$p" ]; then echo "D $p $(stat -c %a "$p")"
  else echo "F $p $(stat -c %a "$p") $(sha256sum "$p" | cut -d' ' -f1)"; fi
done | LC_ALL=C sort
echo ---
touch /data/nope 2>&1 | grep -q 'Read-only file system' && echo EROFS
cat /data/one.txt
printf 'new\000bytes\n' > /src/written.bin
echo after > /src/changed.txt
"""


def test_a_tree_arrives_whole_ro_refuses_writes_and_rw_comes_back(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    src, data = squarepeg.cwd / "src", squarepeg.cwd / "data"
    src.mkdir()
    data.mkdir()
    _tree(src)
    (data / "one.txt").write_text("read only\n")
    expected = _expected(src)
    result = squarepeg(
        "run", "-v", "./src:/src", "-v", f"{data}:/data:ro", "busybox", "sh", "-c", CHECK,
        env=_config(squarepeg),
    )
    assert result.code == 0, result.stderr
    listing, _, rest = result.stdout.decode().partition("---\n")
    assert sorted(listing.splitlines()) == expected
    assert rest == "EROFS\nread only\n"
    assert (src / "written.bin").read_bytes() == b"new\x00bytes\n"
    assert (src / "changed.txt").read_bytes() == b"after\n"
    assert result.has_line("copied back 2 new or changed file(s)")
    assert not (data / "nope").exists()
    # The delete is not waited for; the released sidecar lets the pod go at once.
    wait_until(lambda: names(kubesim, namespace, "pods") == [], 30, "the pod to go")


def test_a_missing_claim_is_reported(squarepeg: Squarepeg, kubesim: Any, namespace: str) -> None:
    missing = squarepeg("run", "--timeout", "3", "-v", "nosuchclaim:/data", "busybox", "true")
    assert missing.code == 125
    assert missing.has_line('persistentvolumeclaim "nosuchclaim" not found')


def test_an_existing_claim_passes_the_server_dry_run(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, request: pytest.FixtureRequest
) -> None:
    if selected_cluster(request.config) != "localkube":
        pytest.skip("kubesim serves no PersistentVolumeClaims (its README's differences)")
    claim = (
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: results}\n"
        "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Mi}}}\n"
    )
    created = kubesim.kubectl("create", "-n", namespace, "-f", "-", input=claim.encode())
    assert created.returncode == 0, created.stderr
    checked = squarepeg("run", "--dry-run-server", "-v", "results:/results:ro", "busybox", "true")
    assert checked.code == 0, checked.stderr
    assert b"claimName: results" in checked.stdout
    assert names(kubesim, namespace, "pods") == []


def test_ctrl_c_during_the_upload_leaves_nothing_behind(
    terminal: Any, squarepeg: Squarepeg, kubesim: Any, namespace: str  # noqa: F811
) -> None:
    big = squarepeg.cwd / "big"
    big.mkdir()
    with (big / "sparse.bin").open("wb") as file:
        file.truncate(600 << 20)  # no disk here; every byte travels
    before = sorted(p.name for p in big.iterdir())
    term = terminal("run", "--name", "upload-stop", "-v", "./big:/big", "busybox", "true",
                    env=_config(squarepeg))

    def helper_running() -> bool:
        got = kubesim.kubectl("get", "pod", "upload-stop", "-n", namespace, "-o",
                              "jsonpath={.status.initContainerStatuses[0].state.running}")
        return got.returncode == 0 and bool(got.stdout.strip())

    wait_until(helper_running, 60, "the upload helper to run")
    # The delete's grace period, as the pod's watch shows it: `main` has not started, and
    # a SIGTERM that comes before the helper's trap is dropped (PID 1), so the pod's own
    # 300 s would keep it that long (decision 0290).
    graces = subprocess.Popen(
        ["kubectl", "get", "pod", "upload-stop", "-n", namespace, "--watch", "-o",
         "jsonpath={.metadata.deletionGracePeriodSeconds}{' '}"],
        env=kubesim.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    seen = b""
    try:
        assert graces.stdout is not None
        # Its first line (the pod as listed) before the Ctrl-C: a pod gone at once must
        # not be missed by a watch that connects late.
        ready, _, _ = select.select([graces.stdout], [], [], 20)
        assert ready, "the pod's watch did not list it within 20s"
        seen += os.read(graces.stdout.fileno(), 4096)
        term.ctrl_c()
        assert term.wait() == 130, term.stderr()
        assert "interrupted (SIGINT)" in term.stderr()
        try:
            wait_until(lambda: names(kubesim, namespace, "pods") == [], 30, "the pod to go")
        except AssertionError as gone_too_late:
            left = kubesim.kubectl("get", "pods", "-n", namespace, "-o", "yaml").stdout
            raise AssertionError(f"{gone_too_late}; squarepeg said {term.stderr()!r}; "
                                 f"left: {left.decode(errors='replace')}") from None
    finally:
        graces.terminate()
        seen += graces.communicate(timeout=10)[0]
    # 1 as squarepeg asked; then 0 on a real node, the kubelet's own final delete.
    assert b"1" in seen.split() and set(seen.split()) <= {b"1", b"0"}, seen
    assert sorted(p.name for p in big.iterdir()) == before
