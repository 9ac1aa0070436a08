"""The local side of the copy-back (run/files.py, docs/decisions/0220), fed crafted tars: what
the container sent is written under SRC only, new and changed files by rename, unchanged
ones untouched, and everything that would leave SRC refused and named."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

from kubectl_squarepeg.files.ignore import IgnoreRules
from kubectl_squarepeg.files.upload import Source
from kubectl_squarepeg.plan.mounts import BindMount
from kubectl_squarepeg.run.files import CopiedBack, extract_stream


def _tar(*members: tuple[str, bytes | str | None, int]) -> io.BytesIO:
    """Entries (name, bytes for a file / str for a symlink target / None for a dir, mode)."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for name, content, mode in members:
            info = tarfile.TarInfo(name)
            info.mode, info.mtime = mode, 1_700_000_000
            if content is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            elif isinstance(content, str):
                info.type, info.linkname = tarfile.SYMTYPE, content
                archive.addfile(info)
            else:
                info.size = len(content)
                archive.addfile(info, io.BytesIO(content))
    data.seek(0)
    return data


def _source(root: Path, number: int = 1, *, is_dir: bool = True) -> Source:
    return Source(number, BindMount(str(root), "/src"), str(root), is_dir, IgnoreRules(()))


def test_new_and_changed_files_come_back_and_the_same_ones_stay_untouched(
    tmp_path: Path,
) -> None:
    (tmp_path / "same.txt").write_bytes(b"same\n")
    (tmp_path / "same.txt").chmod(0o644)
    os.utime(tmp_path / "same.txt", (1, 1))
    (tmp_path / "changed.txt").write_bytes(b"before\n")
    copied = CopiedBack()
    extract_stream(_tar(
        ("1/content", None, 0o755),
        ("1/content/same.txt", b"same\n", 0o644),
        ("1/content/changed.txt", b"after\n", 0o644),
        ("1/content/new/tool.sh", b"#!/bin/sh\n", 0o755),
        ("1/content/link", "new/tool.sh", 0o777),
    ), [_source(tmp_path)], copied)
    assert copied.refused == []
    assert (copied.written, copied.unchanged) == (3, 1)
    assert os.stat(tmp_path / "same.txt").st_mtime == 1  # not rewritten
    assert (tmp_path / "changed.txt").read_bytes() == b"after\n"
    assert os.stat(tmp_path / "new" / "tool.sh").st_mode & 0o777 == 0o755
    assert os.readlink(tmp_path / "link") == "new/tool.sh"
    assert not list(tmp_path.rglob("*.squarepeg-tmp"))


def test_what_would_leave_src_is_refused_and_named(tmp_path: Path) -> None:
    src, outside = tmp_path / "src", tmp_path / "outside"
    src.mkdir()
    outside.mkdir()
    os.symlink(str(outside), src / "escape")  # a local symlink out of SRC
    copied = CopiedBack()
    extract_stream(_tar(
        ("1/content/../../evil.txt", b"x", 0o644),
        ("/etc/evil.txt", b"x", 0o644),
        ("2/content/not-rw.txt", b"x", 0o644),
        ("1/content/up", "../../outside", 0o777),
        ("1/content/escape/through.txt", b"x", 0o644),
    ), [_source(src)], copied)
    assert len(copied.refused) == 5, copied.refused
    assert copied.written == 0
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "evil.txt").exists()
    assert not (src / "up").exists()


def test_a_file_mount_comes_back_as_that_file(tmp_path: Path) -> None:
    target = tmp_path / "one.txt"
    target.write_bytes(b"one\n")
    copied = CopiedBack()
    extract_stream(_tar(("3/content", b"one\ntwo\n", 0o640)),
                   [_source(target, 3, is_dir=False)], copied)
    assert target.read_bytes() == b"one\ntwo\n"
    assert copied.written == 1 and copied.refused == []
