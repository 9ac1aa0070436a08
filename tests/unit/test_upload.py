"""files/upload.py: SRC checked, and the tar stream, extracted again with tarfile: the tree
arrives byte-exact with its modes, symlinks inside SRC, empty directories and non-ASCII
names; what a copy cannot carry is left out with one warning; memory stays flat."""

from __future__ import annotations

import hashlib
import io
import os
import socket
import stat
import tarfile
import tracemalloc
from pathlib import Path

import pytest

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.files.ignore import read_rules
from kubectl_squarepeg.files.upload import Sent, check_sources, progress_line, resolve, write_tar
from kubectl_squarepeg.plan.mounts import BindMount


def _tree(root: Path) -> None:
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "b" / "c" / "deep.txt").write_bytes(b"deep\n")
    (root / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "secret.txt").write_bytes(b"s")
    (root / "secret.txt").chmod(0o600)
    (root / "empty").mkdir()
    (root / "caf\u00e9 \u65e5\u672c.txt").write_bytes("na\u00efve\n".encode())
    (root / "link-to-deep").symlink_to("a/b/c/deep.txt")
    (root / "a" / "up-link").symlink_to("../run.sh")
    (root / "abs-link").symlink_to(root / "a" / "b")  # absolute, but inside: made relative


def _extract(data: bytes, into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|") as archive:
        for member in archive:
            archive.extract(member, into, set_attrs=True)


def _digest(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry below root: kind, mode, and content hash or link target."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        relative = str(path.relative_to(root))
        if stat.S_ISLNK(info.st_mode):
            found[relative] = ("link", 0, os.readlink(path))
        elif path.is_dir():
            found[relative] = ("dir", stat.S_IMODE(info.st_mode), "")
        else:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[relative] = ("file", stat.S_IMODE(info.st_mode), digest)
    return found


def _stream(
    binds: tuple[BindMount, ...], cwd: Path, limit: int = 1 << 30
) -> tuple[bytes, list[str]]:
    checked = check_sources(binds, limit, cwd=str(cwd), home=str(cwd))
    sink = io.BytesIO()
    sent = write_tar(checked, sink)
    return sink.getvalue(), checked.warnings + sent.warnings


def test_a_tree_round_trips_byte_exact_with_modes_links_and_names(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    _tree(src)
    data, warnings = _stream((BindMount("./src", "/src"),), tmp_path)
    out = tmp_path / "out"
    _extract(data, out)
    arrived = out / "1" / "content"
    expected = _digest(src)
    expected["abs-link"] = ("link", 0, "a/b")
    assert _digest(arrived) == expected
    assert os.access(arrived / "run.sh", os.X_OK)
    assert (arrived / "empty").is_dir() and not any((arrived / "empty").iterdir())
    assert (arrived / "link-to-deep").read_bytes() == b"deep\n"
    assert warnings == []


def test_names_are_the_original_bytes_even_when_not_utf8(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    raw = os.fsencode(src) + b"/latin-\xe9.txt"
    with open(raw, "wb") as file:
        file.write(b"x")
    data, _ = _stream((BindMount(str(src), "/src"),), tmp_path)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|", encoding="utf-8",
                      errors="surrogateescape") as archive:
        names = [os.fsencode(m.name) for m in archive]
    assert b"1/content/latin-\xe9.txt" in names


def test_a_file_source_is_the_content_entry(tmp_path: Path) -> None:
    (tmp_path / "cfg.json").write_bytes(b"{}\n")
    (tmp_path / "cfg.json").chmod(0o640)
    data, _ = _stream((BindMount("./cfg.json", "/etc/cfg.json", read_only=True),), tmp_path)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|") as archive:
        members = [(m.name, m.type, m.mode, archive.extractfile(m).read()) for m in archive]  # type: ignore[union-attr]
    assert members == [("1/content", tarfile.REGTYPE, 0o640, b"{}\n")]


def test_two_mounts_are_numbered_in_one_stream(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text(name)
    data, _ = _stream((BindMount("./one", "/a"), BindMount("./two", "/b")), tmp_path)
    out = tmp_path / "out"
    _extract(data, out)
    assert (out / "1/content/f").read_text() == "one"
    assert (out / "2/content/f").read_text() == "two"


def test_out_of_tree_links_sockets_and_fifos_are_left_out_with_one_warning(
    tmp_path: Path,
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "keep.txt").write_text("k")
    (src / "passwd").symlink_to("/etc/passwd")
    (src / "sneaky").symlink_to("../outside")
    os.mkfifo(src / "pipe")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(src / "sock"))
        data, warnings = _stream((BindMount("./src", "/src"),), tmp_path)
    finally:
        server.close()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|") as archive:
        names = sorted(m.name for m in archive)
    assert names == ["1/content", "1/content/keep.txt"]
    assert len(warnings) == 1
    line = warnings[0]
    assert "left out 4 entries" in line
    for part in ("passwd (a symlink out of SRC, to /etc/passwd)", "sneaky", "pipe (a FIFO)",
                 "sock (a socket)"):
        assert part in line


def test_the_ignore_file_excludes_paths(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "node_modules" / "x").mkdir(parents=True)
    (src / "data").mkdir()
    (src / "data" / "big.bin").write_bytes(b"0" * 10)
    (src / "data" / "keep.bin").write_bytes(b"1")
    (src / "a.log").write_text("log")
    (src / "main.py").write_text("print()")
    (src / ".squarepegignore").write_text(
        "# comment\nnode_modules/\n*.log\n/data/*.bin\n!/data/keep.bin\n")
    data, _ = _stream((BindMount(str(src), "/src"),), tmp_path)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|") as archive:
        names = sorted(m.name.removeprefix("1/content/") for m in archive)
    assert names == [".squarepegignore", "1/content", "data", "data/keep.bin", "main.py"]


def test_ignore_rules_follow_gitignore() -> None:
    rules = read_rules("build/\n/top.txt\ndocs/**/*.tmp\n?.o\n")
    assert rules.ignored("build", is_dir=True)
    assert rules.ignored("a/build", is_dir=True)
    assert not rules.ignored("build", is_dir=False)  # a trailing / matches directories only
    assert rules.ignored("top.txt", is_dir=False)
    assert not rules.ignored("sub/top.txt", is_dir=False)  # anchored
    assert rules.ignored("docs/x.tmp", is_dir=False) and rules.ignored("docs/a/b/x.tmp", False)
    assert rules.ignored("d/x.o", is_dir=False) and not rules.ignored("xy.o", is_dir=False)


def test_a_missing_src_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"-v \./gone:/x: \./gone \(.*/gone\) does not exist"):
        check_sources((BindMount("./gone", "/x"),), 1 << 30, cwd=str(tmp_path), home="/")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_in_the_tree_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "locked").write_text("x")
    (tmp_path / "s" / "locked").chmod(0)
    with pytest.raises(UsageError, match="cannot read the file"):
        check_sources((BindMount("./s", "/x"),), 1 << 30, cwd=str(tmp_path), home="/")


def test_a_tree_above_the_limit_is_refused_with_its_size_and_the_key(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    with open(tmp_path / "s" / "big", "wb") as file:
        file.truncate(3 << 20)  # sparse: 3 MiB without writing it
    with pytest.raises(UsageError) as raised:
        check_sources((BindMount("./s", "/x"),), 2 << 20, cwd=str(tmp_path), home="/")
    assert "3 MiB to upload, more than max_upload_bytes (2 MiB)" in raised.value.one_line()


def test_src_resolution() -> None:
    assert resolve("~/data", cwd="/w", home="/home/me") == "/home/me/data"
    assert resolve("~", cwd="/w", home="/home/me") == "/home/me"
    assert resolve("./a/../b", cwd="/w", home="/h") == "/w/b"
    assert resolve("/abs/x/", cwd="/w", home="/h") == "/abs/x"


class _CountingSink:
    """Counts bytes, keeps the largest single write, holds nothing."""

    def __init__(self) -> None:
        self.total = 0
        self.largest = 0
        self.digest = hashlib.sha256()

    def write(self, data: bytes) -> int:
        self.total += len(data)
        self.largest = max(self.largest, len(data))
        return len(data)


def test_memory_stays_flat_for_a_large_file(tmp_path: Path) -> None:
    """A 256 MiB (sparse) file streams with under 1 MiB allocated at the peak, in writes of
    at most a few tarfile records: nothing holds the file, or the archive, in memory."""
    (tmp_path / "s").mkdir()
    size = 256 << 20
    with open(tmp_path / "s" / "big", "wb") as file:
        file.truncate(size)
    checked = check_sources((BindMount("./s", "/x"),), 1 << 30, cwd=str(tmp_path), home="/")
    sink = _CountingSink()
    tracemalloc.start()
    try:
        sent = write_tar(checked, sink)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sent.bytes == size
    assert sink.total >= size + 1024
    assert sink.largest <= 64 * 1024, sink.largest
    assert peak < 1 << 20, f"peak {peak} bytes"


def test_a_file_that_shrinks_while_sent_is_padded_and_named(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    target = tmp_path / "s" / "log"
    target.write_bytes(b"x" * 100_000)
    checked = check_sources((BindMount("./s", "/x"),), 1 << 30, cwd=str(tmp_path), home="/")
    target.write_bytes(b"y" * 10)  # between the check and the stream
    sink = io.BytesIO()
    sent = write_tar(checked, sink)
    with tarfile.open(fileobj=io.BytesIO(sink.getvalue()), mode="r|") as archive:
        sizes = {m.name: m.size for m in archive}
    assert sizes["1/content/log"] == 10  # the stream's second walk sees the new size
    assert sent.warnings == []


def test_a_short_read_is_padded_to_the_promised_size() -> None:
    from kubectl_squarepeg.files.upload import _ExactReader

    reader = _ExactReader(io.BytesIO(b"abc"), 8)
    assert reader.read(5) + reader.read(5) + reader.read(5) == b"abc" + bytes(5)
    assert reader.shrank


def test_memory_does_not_grow_with_the_count_of_files(tmp_path: Path) -> None:
    """3,000 files in 30 directories: the peak stays under 1 MiB (tarfile's TarFile would
    keep all 3,000 members in a list; the writer keeps nothing but its buffer)."""
    for d in range(30):
        folder = tmp_path / "s" / f"d{d}"
        folder.mkdir(parents=True)
        for f in range(100):
            (folder / f"file-{f}.txt").write_bytes(b"x" * 100)
    checked = check_sources((BindMount("./s", "/x"),), 1 << 30, cwd=str(tmp_path), home="/")
    sink = _CountingSink()
    tracemalloc.start()
    try:
        sent = write_tar(checked, sink)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sent.entries == 1 + 30 + 3000
    assert peak < 1 << 20, f"peak {peak} bytes"


def test_long_names_and_a_symlinked_src_arrive(tmp_path: Path) -> None:
    deep = tmp_path / "real" / ("d" * 90) / ("e" * 90)
    deep.mkdir(parents=True)
    (deep / ("f" * 120 + ".txt")).write_text("long")
    (tmp_path / "link").symlink_to("real")  # SRC itself a symlink: followed, as docker does
    data, _ = _stream((BindMount("./link", "/x"),), tmp_path)
    out = tmp_path / "out"
    _extract(data, out)
    arrived = out / "1" / "content" / ("d" * 90) / ("e" * 90) / ("f" * 120 + ".txt")
    assert arrived.read_text() == "long"
    assert not (out / "1" / "content").is_symlink()


def test_progress_names_the_mount_being_sent_and_counts_within_it(tmp_path: Path) -> None:
    for name, sizes in (("a", (100, 200)), ("b", (5000,))):
        (tmp_path / name).mkdir()
        for number, size in enumerate(sizes):
            (tmp_path / name / f"f{number}").write_bytes(b"x" * size)
    binds = (BindMount("./a", "/a"), BindMount("./b", "/b"))
    checked = check_sources(binds, 1 << 30, cwd=str(tmp_path), home="/")
    assert (checked.total_bytes, checked.entries) == (5300, 5)  # each root is an entry
    seen: list[str] = []
    write_tar(checked, io.BytesIO(),
              progress=lambda sent: seen.append(progress_line(checked, sent)))
    assert seen[-1] == "uploading ./b:/b (2 of 2): 4.9 KiB of 4.9 KiB, 2 of 2 entries", seen
    assert any(line.startswith("uploading ./a:/a (1 of 2): ") and
               line.endswith("300 bytes of 300 bytes, 3 of 3 entries") for line in seen), seen


def test_progress_of_a_single_mount_does_not_number_it(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "f").write_bytes(b"y" * 10)
    checked = check_sources((BindMount("./s", "/x"),), 1 << 30, cwd=str(tmp_path), home="/")
    assert progress_line(checked, Sent()) == "uploading 0 bytes of 10 bytes, 0 of 2 entries"
    sent = write_tar(checked, io.BytesIO())
    assert progress_line(checked, sent) == "uploading ./s:/x: 10 bytes of 10 bytes, 2 of 2 entries"
