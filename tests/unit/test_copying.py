"""`cp`'s pure plan (plan/copying.py), its container scripts run by the local sh and tar
(what busybox and GNU tar share), and the local extractor's docker rules (files/copy.py)."""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from kubectl_squarepeg.errors import ClusterError, UsageError
from kubectl_squarepeg.files import copy as local
from kubectl_squarepeg.files import upload
from kubectl_squarepeg.plan import copying


def test_parse_reads_the_direction_docker_s_way() -> None:
    out = copying.parse_copy("box:/data/x/", "here")
    assert (out.direction, out.run, out.remote, out.local) == ("out_of", "box", "/data/x/",
                                                               "here")
    assert copying.parse_copy("box:data/..//etc", "-").remote == "/etc"
    assert copying.parse_copy("box:/data/.", "d").contents
    into = copying.parse_copy("./a:b", "box:/x")
    assert (into.direction, into.local, into.remote) == ("into", "./a:b", "/x")
    assert copying.parse_copy("dir/.", "box:/x").contents
    assert copying.parse_copy("-", "box:/x").streamed


@pytest.mark.parametrize(("source", "dest", "said"), [
    ("a:/x", "b:/y", "both sides name a run"),
    ("here", "there", "neither side names a run"),
    ("Bad_Name:/x", "here", "cannot be the name of a squarepeg run"),
    ("box:", "here", "no path after the run's name"),
    ("here", "box:", "no path after the run's name"),
])
def test_parse_refuses(source: str, dest: str, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        copying.parse_copy(source, dest)


def test_said_line_is_the_script_s_refusal() -> None:
    assert copying.said_line("noise\nsquarepeg-cp: /x: no such directory\n") == (
        "/x: no such directory")
    assert copying.said_line("error: unable to upgrade connection") is None


needs_tar = pytest.mark.skipif(shutil.which("tar") is None, reason="no tar on this machine")


def _tree(root: Path) -> None:
    (root / "sub" / "empty").mkdir(parents=True)
    (root / "sub" / "f.bin").write_bytes(os.urandom(3000))
    (root / "sub" / "f.bin").chmod(0o640)
    (root / "x.sh").write_text("#!/bin/sh\n")
    (root / "x.sh").chmod(0o755)
    os.symlink("sub/f.bin", root / "link")


def _listing(root: Path) -> list[str]:
    lines = []
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        name = str(path.relative_to(root))
        if stat.S_ISLNK(info.st_mode):
            lines.append(f"L {name} {os.readlink(path)}")
        elif stat.S_ISDIR(info.st_mode):
            lines.append(f"D {name} {stat.S_IMODE(info.st_mode):o}")
        else:
            lines.append(f"F {name} {stat.S_IMODE(info.st_mode):o} {path.read_bytes().hex()}")
    return lines


def _upload(source: Path | str, dest: Path, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """The into script run here, with the upload's tar on its stdin."""
    checked = local.check_local_source(str(source), cwd=str(cwd), home=str(cwd))
    sink = io.BytesIO()
    upload.write_tar(checked.checked, sink)
    command = copying.into_command(str(dest), checked.kind, checked.base)
    return subprocess.run(command, input=sink.getvalue(), capture_output=True, check=False)


@needs_tar
def test_into_follows_docker_s_rules(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _tree(src)
    box = tmp_path / "box"
    box.mkdir()
    assert _upload(src, box / "copy", tmp_path).returncode == 0  # missing: becomes it
    assert _listing(box / "copy") == _listing(src)
    assert _upload(src, box / "copy", tmp_path).returncode == 0  # a directory: goes in
    assert _listing(box / "copy" / "src") == _listing(src)
    assert _upload(src / "x.sh", box, tmp_path).returncode == 0
    assert (box / "x.sh").read_bytes() == (src / "x.sh").read_bytes()
    refused = _upload(src, box / "x.sh", tmp_path)
    assert refused.returncode != 0
    assert copying.said_line(refused.stderr.decode()) == (
        f"cannot copy a directory to {box / 'x.sh'}: a file is there")
    missing = _upload(src / "x.sh", box / "no" / "where", tmp_path)
    assert copying.said_line(missing.stderr.decode()) == f"{box / 'no'}: no such directory"
    assert sorted(os.listdir(box)) == ["copy", "x.sh"]  # no temporary directory left


@needs_tar
def test_the_content_of_a_directory_merges(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _tree(src)
    box = tmp_path / "box"
    box.mkdir()
    (box / "kept").write_text("k")
    assert _upload(f"{src}/.", box, tmp_path).returncode == 0
    assert [line for line in _listing(box) if not line.startswith("F kept ")] == _listing(src)
    assert (box / "kept").read_text() == "k"


def _out_of(path: Path, contents: bool) -> bytes:
    done = subprocess.run(copying.out_of_command(str(path), contents), capture_output=True,
                          check=True)
    return done.stdout


def _extract(data: bytes, dest: Path | str, contents: bool, cwd: Path) -> local.Extracted:
    extractor = local.Extractor(str(dest), contents=contents, cwd=str(cwd))
    return local.extract(io.BytesIO(data), extractor)


@needs_tar
def test_out_of_follows_docker_s_rules(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _tree(src)
    (src / "sub").chmod(0o750)
    out = tmp_path / "out"
    out.mkdir()
    _extract(_out_of(src, False), out / "copy", False, tmp_path)  # missing: becomes it
    assert _listing(out / "copy") == _listing(src)
    _extract(_out_of(src, False), out, False, tmp_path)  # a directory: under its name
    assert _listing(out / "src") == _listing(src)
    _extract(_out_of(src, True), out / "content", True, tmp_path)
    assert _listing(out / "content") == _listing(src)
    _extract(_out_of(src / "x.sh", False), out / "renamed", False, tmp_path)
    assert (out / "renamed").read_bytes() == (src / "x.sh").read_bytes()
    with pytest.raises(UsageError, match="no such directory"):
        _extract(_out_of(src / "x.sh", False), f"{out}/nope/", False, tmp_path)
    with pytest.raises(UsageError, match="a file is there"):
        _extract(_out_of(src, False), out / "renamed", False, tmp_path)


def test_a_name_out_of_dest_is_refused(tmp_path: Path) -> None:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        top = tarfile.TarInfo("top")
        top.type = tarfile.DIRTYPE
        tar.addfile(top)
        link = tarfile.TarInfo("top/up")
        link.type, link.linkname = tarfile.SYMTYPE, "../.."
        tar.addfile(link)
        for name in ("top/../../evil", "top/up/evil"):
            member = tarfile.TarInfo(name)
            member.size = 1
            tar.addfile(member, io.BytesIO(b"x"))
    done = _extract(data.getvalue(), tmp_path / "d", False, tmp_path)
    assert len(done.refused) == 2
    assert not (tmp_path / "evil").exists() and not (tmp_path.parent / "evil").exists()


def test_help_is_in_docker_s_words() -> None:
    from click.testing import CliRunner

    from kubectl_squarepeg.cli.app import cli

    shown = CliRunner().invoke(cli, ["cp", "--help"])
    assert shown.exit_code == 0
    text = " ".join(shown.output.split())
    assert "Copy files/folders between a run's container and the local filesystem" in text
    assert "Use '-' as the source to read a tar archive from stdin" in text
    assert "kubectl squarepeg cp NAME:SRC_PATH DEST_PATH|-" in text


def test_a_local_path_completes_as_files() -> None:
    from kubectl_squarepeg.cli.app import cli
    from kubectl_squarepeg.cli.completion import DIRECTIVE_DEFAULT, complete_words

    answer = complete_words(cli, ["cp", "./som"])
    assert (answer.candidates, answer.directive) == ((), DIRECTIVE_DEFAULT)


class _Ended:
    """What `_failed` reads of an ended kubectl exec."""

    def __init__(self, stderr: bytes) -> None:
        self.argv = ("kubectl", "exec")
        self.stderr = stderr


@pytest.mark.parametrize(("stderr", "code", "said", "kind"), [
    (b"squarepeg-cp: /x: no such directory\n", 65, "cp: /x: no such directory (in run box's",
     UsageError),
    (b"squarepeg-cp: the image has no tar; cp needs sh and tar in the container\n", 69,
     "the image has no tar", UsageError),
    (b'error: Internal error occurred: exec: "sh": executable file not found in $PATH\n', 1,
     "run box's image has no sh", UsageError),
    (b"command terminated with exit code 126\n", 126, "run box's image has no sh", UsageError),
    (b"error: unable to upgrade connection: container not found (\"main\")\n", 1,
     "cp into run box failed: unable to upgrade connection", ClusterError),
])
def test_a_failed_exec_is_one_line(stderr: bytes, code: int, said: str, kind: type) -> None:
    from kubectl_squarepeg.run.copy import _failed

    error = _failed("box", _Ended(stderr), code, "into")  # type: ignore[arg-type]
    assert isinstance(error, kind) and said in error.message
    assert error.exit_code == 125 and error.hint
