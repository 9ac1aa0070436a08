"""The helpers' protocol, run here with the local sh and tar (plan/filehelpers.py,
docs/decisions/0180): the upload helper's wait ends when the upload command has extracted
squarepeg's tar stream, and fails when the upload fails; the copy-back helper outlives a
SIGTERM until squarepeg has copied. The paths are moved under a temporary directory; the
image's busybox is checked on the real node by the cluster half."""

from __future__ import annotations

import io
import signal
import subprocess
import tarfile
from pathlib import Path

import pytest

from kubectl_squarepeg.files.upload import check_sources, write_tar
from kubectl_squarepeg.plan import filehelpers
from kubectl_squarepeg.plan.mounts import BindMount
from tests.helpers import kill_leftover, wait_until

DEADLINE = 20.0


def _local(words: list[str], root: Path) -> list[str]:
    return [
        w.replace(filehelpers.CONTROL_DIR, str(root / "control")).replace(
            filehelpers.MOUNTS_DIR, str(root / "mounts")
        )
        for w in words
    ]


def _helper(name: str, root: Path) -> subprocess.Popen[bytes]:
    container = next(
        c
        for c in filehelpers.init_containers(
            (BindMount("./s", "/s"),), image="x", user=None, main_resources={}
        )
        if c["name"] == name
    )
    return subprocess.Popen(_local(container["command"], root), stderr=subprocess.PIPE)


def _prepare(root: Path) -> None:
    (root / "control").mkdir()
    (root / "mounts" / "1").mkdir(parents=True)
    (root / "s" / "sub").mkdir(parents=True)
    (root / "s" / "run.sh").write_text("echo hi\n")
    (root / "s" / "run.sh").chmod(0o750)
    (root / "s" / "sub" / "d.txt").write_text("d")


def _wait(process: subprocess.Popen[bytes]) -> int:
    try:
        return process.wait(timeout=DEADLINE)
    finally:
        kill_leftover(process)


def _wait_for_its_loop(process: subprocess.Popen[bytes]) -> None:
    """Until the helper has started its first `sleep` (so its trap is set)."""
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    wait_until(lambda: children.read_text().strip(), DEADLINE, "the helper to reach its loop",
               interval=0.01)


def test_the_upload_helper_ends_once_the_upload_command_has_extracted(tmp_path: Path) -> None:
    _prepare(tmp_path)
    helper = _helper(filehelpers.UPLOAD_HELPER, tmp_path)
    try:
        checked = check_sources((BindMount("./s", "/s"),), 1 << 20, cwd=str(tmp_path), home="/")
        upload = subprocess.Popen(
            _local(filehelpers.upload_command(owner_kept=False), tmp_path),
            stdin=subprocess.PIPE,
        )
        assert upload.stdin is not None
        write_tar(checked, upload.stdin)
        upload.stdin.close()
        assert _wait(upload) == 0
        assert _wait(helper) == 0
    finally:
        kill_leftover(helper)
    arrived = tmp_path / "mounts" / "1" / "content"
    assert (arrived / "sub" / "d.txt").read_text() == "d"
    assert (arrived / "run.sh").stat().st_mode & 0o777 == 0o750


def test_a_failed_upload_fails_the_helper(tmp_path: Path) -> None:
    _prepare(tmp_path)
    helper = _helper(filehelpers.UPLOAD_HELPER, tmp_path)
    upload = subprocess.run(
        _local(filehelpers.upload_command(owner_kept=False), tmp_path),
        input=b"not a tar archive" * 100,
        capture_output=True,
        timeout=DEADLINE,
    )
    assert upload.returncode != 0
    assert _wait(helper) == 1


def test_the_copy_back_helper_outlives_sigterm_until_squarepeg_has_copied(
    tmp_path: Path,
) -> None:
    _prepare(tmp_path)
    (tmp_path / "mounts" / "1" / "content").mkdir()
    (tmp_path / "mounts" / "1" / "content" / "result.txt").write_text("42\n")
    helper = _helper(filehelpers.COPY_BACK_HELPER, tmp_path)
    try:
        _wait_for_its_loop(helper)  # a TERM before its trap is set would end it at once
        helper.send_signal(signal.SIGTERM)  # what the kubelet sends when main has ended
        copy = subprocess.run(
            _local(filehelpers.copy_back_command([1]), tmp_path),
            capture_output=True,
            timeout=DEADLINE,
        )
        assert copy.returncode == 0, copy.stderr
        assert helper.poll() is None, "the helper ended before squarepeg had copied"
        with tarfile.open(fileobj=io.BytesIO(copy.stdout), mode="r|") as archive:
            contents = {m.name: archive.extractfile(m).read() for m in archive if m.isfile()}  # type: ignore[union-attr]
        assert contents == {"1/content/result.txt": b"42\n"}
        subprocess.run(_local(filehelpers.COPIED_COMMAND, tmp_path), check=True)
        assert _wait(helper) == 0
    finally:
        kill_leftover(helper)


@pytest.mark.parametrize("name", [filehelpers.UPLOAD_HELPER, filehelpers.COPY_BACK_HELPER])
def test_the_scripts_parse(name: str, tmp_path: Path) -> None:
    container = next(
        c
        for c in filehelpers.init_containers(
            (BindMount("./s", "/s"),), image="x", user=None, main_resources={}
        )
        if c["name"] == name
    )
    assert subprocess.run(["sh", "-n", "-c", container["command"][2]]).returncode == 0
