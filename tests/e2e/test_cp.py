"""`cp` end to end (issue 35, docs/decisions/0380): the installed `kubectl-squarepeg` with the
real kubectl against the selected cluster (kubesim, or localkube's real node), into and out
of a detached run's `main` container.

- Both ways: a 300 KB random file, and a tree with nested and empty directories, modes
  (755, 600, 640, a 750 directory) and a symlink inside it, come back byte-exact with the
  same modes and link; docker's rules for a missing DEST, an existing directory DEST (the
  copy goes in under its base name) and `SRC/.` (the content).
- `-` both ways: a tar on stdout holds the tree; a tar on stdin lands in a directory.
- The refusals, one line and exit 125 each: a name that is no run of yours, a finished run
  (with how to keep its files), a path missing in the container, both sides or neither
  naming a run; TAB completes a run's name as `NAME:` with no space after it.
- Ctrl-C while a copy waits in kubectl exec: exit 130, no kubectl left running.
"""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import BIN, Squarepeg, isolated_env, names
from tests.helpers import wait_until

RUN = "cp-box"
BIG = 300 * 1024


@pytest.fixture(autouse=True)
def nothing_left(kubesim: Any, namespace: str) -> Any:
    yield
    if names(kubesim, namespace):
        kubesim.kubectl("delete", "pods,jobs", "--all", "-n", namespace, "--wait=false")
        wait_until(lambda: names(kubesim, namespace) == [], 60, "the leftovers to be gone")


def _tree(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "a" / "b" / "deep.bin").write_bytes(os.urandom(5000) + b"\0\r\n\xff")
    (root / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (root / "run.sh").chmod(0o755)
    (root / "private.txt").write_text("mine\n")
    (root / "private.txt").chmod(0o600)
    (root / "group.txt").write_text("ours\n")
    (root / "group.txt").chmod(0o640)
    (root / "a").chmod(0o750)
    os.symlink("a/b/deep.bin", root / "link")


def _listing(root: Path) -> list[str]:
    """Every entry: its kind, mode and bytes (or a symlink's target)."""
    lines = []
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        info = path.lstat()
        mode = f"{stat.S_IMODE(info.st_mode):o}"
        if stat.S_ISLNK(info.st_mode):
            lines.append(f"L {name} -> {os.readlink(path)}")
        elif stat.S_ISDIR(info.st_mode):
            lines.append(f"D {name} {mode}")
        else:
            lines.append(f"F {name} {mode} {path.read_bytes().hex()}")
    return lines


def _start(squarepeg: Squarepeg, name: str = RUN) -> None:
    # A PID 1 that ends on SIGTERM: the teardown's delete is not held for the grace period.
    started = squarepeg("run", "-d", "--name", name, "--tmpfs", "/cpdata", "alpine",
                        "sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait")
    assert started.code == 0, started.stderr


def _ok(done: Any) -> None:
    assert done.code == 0, done.stderr
    assert not [line for line in done.lines if "error" in line], done.stderr


def _in_container(kubesim: Any, namespace: str, script: str) -> str:
    done = kubesim.kubectl("exec", "-n", namespace, RUN, "-c", "main", "--", "sh", "-c", script)
    assert done.returncode == 0, done.stderr
    return str(done.stdout.decode())


def test_cp_both_ways_is_byte_exact(squarepeg: Squarepeg, kubesim: Any, namespace: str,
                                    tmp_path: Path) -> None:
    _start(squarepeg)
    tree = tmp_path / "tree"
    tree.mkdir()
    _tree(tree)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(BIG))
    big.chmod(0o640)

    # DEST missing: the tree becomes it; an existing directory: the file goes in.
    _ok(squarepeg("cp", str(tree), f"{RUN}:/cpdata/tree"))
    _ok(squarepeg("cp", str(big), f"{RUN}:/cpdata"))
    # the tree again, into the existing /cpdata/tree: under its base name, as docker does
    _ok(squarepeg("cp", str(tree), f"{RUN}:/cpdata/tree"))
    seen = _in_container(kubesim, namespace, "ls /cpdata; ls /cpdata/tree/tree; "
                         "stat -c %a /cpdata/big.bin /cpdata/tree/a")
    assert seen.split() == ["big.bin", "tree", "a", "empty", "group.txt", "link",
                            "private.txt", "run.sh", "640", "750"]

    out = tmp_path / "out"
    out.mkdir()
    _ok(squarepeg("cp", f"{RUN}:/cpdata/big.bin", str(out)))  # into an existing directory
    assert (out / "big.bin").read_bytes() == big.read_bytes()
    assert stat.S_IMODE((out / "big.bin").stat().st_mode) == 0o640
    _ok(squarepeg("cp", f"{RUN}:/cpdata/big.bin", str(out / "renamed.bin")))
    assert (out / "renamed.bin").read_bytes() == big.read_bytes()

    _ok(squarepeg("cp", f"{RUN}:/cpdata/tree", str(out / "back")))  # DEST missing
    expected = _listing(tree)
    top = f"D tree {stat.S_IMODE(tree.stat().st_mode):o}"
    assert sorted(_listing(out / "back")) == sorted(
        [*expected, top, *(_under("tree", line) for line in expected)])
    _ok(squarepeg("cp", f"{RUN}:/cpdata/tree/.", str(out / "content")))  # SRC/.
    assert sorted(_listing(out / "content")) == sorted(_listing(out / "back"))
    _ok(squarepeg("cp", f"{RUN}:/cpdata/tree/tree", str(out)))  # DEST exists: under its name
    assert _listing(out / "tree") == expected


def _under(top: str, line: str) -> str:
    kind, rest = line.split(" ", 1)
    return f"{kind} {top}/{rest}"


def test_cp_streams_a_tar_both_ways(squarepeg: Squarepeg, kubesim: Any, namespace: str,
                                    tmp_path: Path) -> None:
    _start(squarepeg)
    payload = os.urandom(BIG)
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w", format=tarfile.GNU_FORMAT) as tar:
        folder = tarfile.TarInfo("dir")
        folder.type, folder.mode = tarfile.DIRTYPE, 0o700
        tar.addfile(folder)
        member = tarfile.TarInfo("dir/random.bin")
        member.size, member.mode = len(payload), 0o604
        tar.addfile(member, io.BytesIO(payload))
    given = tmp_path / "in.tar"
    given.write_bytes(archive.getvalue())
    with given.open("rb") as stdin:
        done = squarepeg.finish(squarepeg.start("cp", "-", f"{RUN}:/cpdata", stdin=stdin))
    _ok(done)

    streamed = squarepeg("cp", f"{RUN}:/cpdata/dir", "-")
    _ok(streamed)
    with tarfile.open(fileobj=io.BytesIO(streamed.stdout), mode="r:") as tar:
        members = {m.name.rstrip("/"): m for m in tar.getmembers()}
        assert sorted(members) == ["dir", "dir/random.bin"]
        assert members["dir"].mode & 0o7777 == 0o700
        assert members["dir/random.bin"].mode & 0o7777 == 0o604
        read = tar.extractfile(members["dir/random.bin"])
        assert read is not None and read.read() == payload


def test_cp_refusals_are_one_line_and_125(squarepeg: Squarepeg, kubesim: Any, namespace: str,
                                          tmp_path: Path) -> None:
    local = tmp_path / "f.txt"
    local.write_text("x\n")

    def refused(*args: str) -> str:
        done = squarepeg("cp", *args)
        assert done.code == 125, done.stderr
        [line] = done.lines
        assert line.startswith("squarepeg: error: ") and "Traceback" not in done.stderr
        return line

    assert "no squarepeg run named nosuch" in refused(str(local), "nosuch:/tmp")
    assert "both sides name a run" in refused("a:/x", "b:/y")
    assert "neither side names a run" in refused(str(local), str(tmp_path / "g"))
    assert "does not exist" in refused(str(tmp_path / "missing"), f"{RUN}:/cpdata")

    _start(squarepeg)
    tab = subprocess.run(
        [str(BIN / "kubectl_complete-squarepeg"), "cp", "-n", namespace, "cp-b"],
        env=isolated_env(kubesim, squarepeg.home), capture_output=True, timeout=30)
    assert tab.stdout.decode().splitlines() == [f"{RUN}:", ":6"], tab  # no space after it
    assert "/cpdata/nope: no such file or directory" in refused(f"{RUN}:/cpdata/nope",
                                                                str(tmp_path))
    assert "/cpdata/x/y/: no such directory" in refused(str(local), f"{RUN}:/cpdata/x/y/")
    assert not (tmp_path / "nope").exists()

    ended = squarepeg("run", "-d", "--name", "cp-ended", "alpine", "true")
    assert ended.code == 0, ended.stderr
    assert squarepeg("wait", "cp-ended").code == 0
    line = refused("cp-ended:/etc/hostname", str(tmp_path))
    assert "run cp-ended has ended" in line and "-v DIR:PATH" in line


def _execs_in(namespace: str) -> list[str]:
    """The `kubectl exec` processes on this machine that squarepeg started in the namespace."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            words = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"exec" in words and f"--namespace={namespace}".encode() in words:
            found.append(entry)
    return found


def test_ctrl_c_during_a_copy_exits_130_and_leaves_no_kubectl(
        squarepeg: Squarepeg, kubesim: Any, namespace: str) -> None:
    _start(squarepeg)
    read_fd, write_fd = os.pipe()
    try:
        # a tar on stdin that never ends: the copy waits in kubectl exec
        process = squarepeg.start("cp", "-", f"{RUN}:/cpdata", stdin=read_fd)
        os.close(read_fd)
        wait_until(lambda: _execs_in(namespace) != [], 60, "kubectl exec to start")
        process.send_signal(signal.SIGINT)  # kubectl is in a session of its own: only we get it
        done = squarepeg.finish(process, timeout=60)
    finally:
        os.close(write_fd)
    assert done.code == 130, done.stderr
    wait_until(lambda: _execs_in(namespace) == [], 30, "no kubectl left")
