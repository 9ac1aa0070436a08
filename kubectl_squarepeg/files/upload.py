"""The upload's local side: each bind mount's SRC resolved and checked, and one tar stream of
them all, produced while it is sent (docs/decisions/0180).

Owns:
- `check_sources`: SRC resolved (`~`, the working directory; a symlinked SRC is followed,
  as docker does), missing or unreadable refused, the ignore file read, every entry walked
  once to add up the bytes, and a tree above `max_upload_bytes` refused before anything
  is created; what a tar cannot carry safely (a symlink out of SRC, a socket, a FIFO, a
  device) is skipped, named in one warning per mount.
- `write_tar`: the archive, `N/content[/PATH]` for the Nth mount, written to a sink as it
  is read: the tree is walked again (nothing is listed in memory and nothing is copied to
  disk), each file read in 64 KiB pieces, small pieces gathered in a 64 KiB buffer, so memory
  stays flat whatever the size and the count of files. Headers are tarfile's (`tobuf`). Modes,
  owners (numeric), mtimes, symlinks inside SRC and empty directories are kept; names are
  written as their bytes (UTF-8, or the bytes of a name that is not). GNU format: busybox
  and GNU tar read it, and sizes above 8 GiB with it.
A file that shrinks while it is sent is padded with zeros to the size its header promised
(and named in a warning); one that grows is sent at its first size; one that vanished is
left out and named. Hard links arrive as separate copies.
"""

from __future__ import annotations

import os
import stat
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.files.ignore import IGNORE_FILE, IgnoreRules, read_rules
from kubectl_squarepeg.plan.filehelpers import CONTENT
from kubectl_squarepeg.plan.mounts import BindMount, human_bytes

COPY_PIECE = 64 * 1024
MAX_IGNORE_FILE = 1 << 20
_SHOWN_SKIPS = 5


class Sink(Protocol):
    def write(self, data: bytes, /) -> int | None: ...


@dataclass(frozen=True)
class Source:
    """One bind mount's SRC, resolved: `root` is its real path."""

    number: int
    bind: BindMount
    root: str
    is_dir: bool
    rules: IgnoreRules


@dataclass
class Size:
    """Bytes of file content and entries, of one mount's SRC."""

    bytes: int = 0
    entries: int = 0


@dataclass
class Checked:
    """What the upload will send: the sources, their bytes and entries (in all, and per
    source number), and the warnings."""

    sources: list[Source]
    total_bytes: int = 0
    entries: int = 0
    warnings: list[str] = field(default_factory=list)
    sizes: dict[int, Size] = field(default_factory=dict)


@dataclass(frozen=True)
class _Entry:
    path: str  # absolute, under the source's root
    name: str  # in the archive
    info: os.stat_result
    link: str | None = None  # a symlink's target as it will be written


@dataclass(frozen=True)
class _Skipped:
    path: str  # relative to SRC, for the warning
    why: str


def _given(bind: BindMount) -> str:
    return f"{bind.source}:{bind.target}"


def resolve(source: str, *, cwd: str, home: str) -> str:
    """SRC as an absolute path: `~` is `home`, a relative path is under `cwd`."""
    if source == "~" or source.startswith("~/"):
        source = home + source[1:]
    elif source.startswith("~"):
        source = os.path.expanduser(source)  # ~user: the password database knows
    return os.path.normpath(os.path.join(cwd, source))


def _refuse(bind: BindMount, what: str, hint: str) -> UsageError:
    return UsageError(f"-v {_given(bind)}: {what}", hint)


def _open_source(number: int, bind: BindMount, cwd: str, home: str) -> Source:
    path = resolve(bind.source, cwd=cwd, home=home)
    shown = bind.source if path == bind.source else f"{bind.source} ({path})"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise _refuse(
            bind, f"{shown} does not exist", "give an existing file or directory as SRC"
        ) from None
    except OSError as exc:
        raise _refuse(bind, f"cannot read {shown}: {exc.strerror}", "check SRC") from None
    is_dir = stat.S_ISDIR(info.st_mode)
    if not is_dir and not stat.S_ISREG(info.st_mode):
        raise _refuse(bind, f"{shown} is not a file or directory", "give a file or directory")
    if not os.access(path, os.R_OK | (os.X_OK if is_dir else 0)):
        raise _refuse(
            bind, f"{shown} is not readable by you", "give a SRC you can read (check its mode)"
        )
    root = os.path.realpath(path)
    return Source(number, bind, root, is_dir, _ignore_rules(bind, root) if is_dir else _NONE)


_NONE = IgnoreRules(())


def _ignore_rules(bind: BindMount, root: str) -> IgnoreRules:
    path = os.path.join(root, IGNORE_FILE)
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_IGNORE_FILE + 1)
    except FileNotFoundError:
        return _NONE
    except OSError as exc:
        raise _refuse(bind, f"cannot read {path}: {exc.strerror}", "fix or remove it") from None
    if len(data) > MAX_IGNORE_FILE:
        raise _refuse(bind, f"{path} is larger than 1 MiB", "keep the ignore file short")
    return read_rules(data.decode("utf-8", "surrogateescape"))


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _symlink(source: Source, path: str, relative: str) -> _Entry | _Skipped:
    """A symlink is kept when it points inside SRC: a relative target as written, an
    absolute one rewritten relative to the link (the container cannot know your paths)."""
    target = os.readlink(path)
    lexical = os.path.normpath(os.path.join(os.path.dirname(path), target))
    resolved = os.path.realpath(path) if os.path.exists(path) else lexical
    if not (_inside(source.root, lexical) and _inside(source.root, resolved)):
        return _Skipped(relative, f"a symlink out of SRC, to {target}")
    if os.path.isabs(target):
        target = os.path.relpath(lexical, os.path.dirname(path))
    return _Entry(path, "", os.lstat(path), target)


_OTHER_KINDS = (
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _walk(source: Source) -> Iterator[_Entry | _Skipped]:
    """Every entry of one source, parents before children, in name order; the archive name
    is `N/content/RELATIVE`."""
    top = f"{source.number}/{CONTENT}"
    yield _Entry(source.root, top, os.stat(source.root))
    if not source.is_dir:
        return
    pending = [(source.root, "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            with os.scandir(directory) as found:
                children = sorted(found, key=lambda e: e.name)
        except OSError as exc:
            raise _refuse(
                source.bind, f"cannot read {directory}: {exc.strerror}", "fix its mode"
            ) from None
        below = []
        for child in children:
            relative = prefix + child.name
            info = child.stat(follow_symlinks=False)
            is_dir = stat.S_ISDIR(info.st_mode)
            if source.rules.ignored(relative, is_dir):
                continue
            name = f"{top}/{relative}"
            if stat.S_ISLNK(info.st_mode):
                entry = _symlink(source, child.path, relative)
                yield entry if isinstance(entry, _Skipped) else _Entry(
                    child.path, name, info, entry.link
                )
            elif is_dir:
                if not os.access(child.path, os.R_OK | os.X_OK):
                    raise _refuse(
                        source.bind, f"cannot read the directory {child.path}", "fix its mode"
                    )
                yield _Entry(child.path, name, info)
                below.append((child.path, relative + "/"))
            elif stat.S_ISREG(info.st_mode):
                if not os.access(child.path, os.R_OK):
                    raise _refuse(
                        source.bind, f"cannot read the file {child.path}", "fix its mode"
                    )
                yield _Entry(child.path, name, info)
            else:
                why = next((w for test, w in _OTHER_KINDS if test(info.st_mode)), "not a file")
                yield _Skipped(relative, why)
        pending.extend(reversed(below))  # depth first, in name order


def _skip_warning(bind: BindMount, skipped: list[_Skipped]) -> str:
    shown = "; ".join(f"{s.path} ({s.why})" for s in skipped[:_SHOWN_SKIPS])
    more = f"; and {len(skipped) - _SHOWN_SKIPS} more" if len(skipped) > _SHOWN_SKIPS else ""
    return (
        f"-v {_given(bind)}: left out {len(skipped)} "
        f"entr{'y' if len(skipped) == 1 else 'ies'} a copy cannot carry: {shown}{more}"
    )


def check_sources(
    binds: tuple[BindMount, ...],
    max_bytes: int,
    *,
    cwd: str | None = None,
    home: str | None = None,
) -> Checked:
    """Resolve and walk every SRC once; refuse a missing or unreadable one, or a total above
    `max_bytes`. Nothing is read but metadata and the ignore files."""
    cwd = os.getcwd() if cwd is None else cwd
    home = os.path.expanduser("~") if home is None else home
    checked = Checked([_open_source(n, b, cwd, home) for n, b in enumerate(binds, start=1)])
    for source in checked.sources:
        skipped = []
        size = checked.sizes[source.number] = Size()
        for entry in _walk(source):
            if isinstance(entry, _Skipped):
                skipped.append(entry)
                continue
            size.entries += 1
            if stat.S_ISREG(entry.info.st_mode):
                size.bytes += entry.info.st_size
        checked.entries += size.entries
        checked.total_bytes += size.bytes
        if skipped:
            checked.warnings.append(_skip_warning(source.bind, skipped))
    if checked.total_bytes > max_bytes:
        names = ", ".join(_given(s.bind) for s in checked.sources)
        raise UsageError(
            f"-v {names}: {human_bytes(checked.total_bytes)} to upload, more than "
            f"max_upload_bytes ({human_bytes(max_bytes)})",
            f"leave paths out in SRC/{IGNORE_FILE}, or raise `max_upload_bytes` in a config file",
        )
    return checked


class _ExactReader:
    """A file read as exactly `size` bytes: zeros after an early end (the file shrank)."""

    def __init__(self, file: BinaryIO, size: int) -> None:
        self._file = file
        self._left = size
        self.shrank = False

    def read(self, count: int = -1) -> bytes:
        count = self._left if count < 0 else min(count, self._left)
        data = self._file.read(count) if not self.shrank else b""
        if len(data) < count:
            self.shrank = True
            data += bytes(count - len(data))
        self._left -= len(data)
        return data


def _header(entry: _Entry) -> tarfile.TarInfo:
    info = entry.info
    header = tarfile.TarInfo(entry.name)
    header.mode = stat.S_IMODE(info.st_mode)
    header.uid, header.gid = info.st_uid, info.st_gid
    header.uname = header.gname = ""  # numeric owners: the container has its own names
    header.mtime = int(info.st_mtime)
    if entry.link is not None:
        header.type, header.linkname = tarfile.SYMTYPE, entry.link
    elif stat.S_ISDIR(info.st_mode):
        header.type = tarfile.DIRTYPE
    else:
        header.type, header.size = tarfile.REGTYPE, info.st_size
    return header


@dataclass
class Sent:
    """What `write_tar` sent: bytes of file content and entries (in all, and of the source
    it is at, by number), and the warnings."""

    bytes: int = 0
    entries: int = 0
    warnings: list[str] = field(default_factory=list)
    source: int = 0
    of_source: Size = field(default_factory=Size)


def progress_line(checked: Checked, sent: Sent) -> str:
    """The status line of an upload under way: the mount it is at (and which of how many),
    its bytes and entries sent of those it has."""
    at = next((s for s in checked.sources if s.number == sent.source), None)
    if at is None:
        return (f"uploading {human_bytes(sent.bytes)} of {human_bytes(checked.total_bytes)}, "
                f"{sent.entries} of {checked.entries} entries")
    size = checked.sizes.get(at.number, Size())
    which = f" ({at.number} of {len(checked.sources)})" if len(checked.sources) > 1 else ""
    return (f"uploading {_given(at.bind)}{which}: {human_bytes(sent.of_source.bytes)} of "
            f"{human_bytes(size.bytes)}, {sent.of_source.entries} of {size.entries} entries")


class _TarWriter:
    """Writes a tar archive to a sink through a buffer of at most BUFFER bytes: tarfile's
    own TarFile keeps every member it wrote in a list (memory grows with the count of
    files) and copies each header object; this keeps nothing but the buffer."""

    BUFFER = 64 * 1024

    def __init__(self, sink: Sink) -> None:
        self._sink = sink
        self._buffer = bytearray()
        self._written = 0

    def _write(self, data: bytes) -> None:
        # Small pieces (headers, small files) gather into one write; a full piece of a
        # large file goes straight through, without a copy into the buffer.
        if len(self._buffer) + len(data) > self.BUFFER:
            self._flush()
        if len(data) >= self.BUFFER:
            self._sink.write(data)
            self._written += len(data)
        else:
            self._buffer += data

    def _flush(self) -> None:
        if self._buffer:
            self._sink.write(bytes(self._buffer))
            self._written += len(self._buffer)
            self._buffer.clear()

    def add(self, header: tarfile.TarInfo, content: _ExactReader | None = None) -> None:
        self._write(header.tobuf(tarfile.GNU_FORMAT, "utf-8", "surrogateescape"))
        if content is None:
            return
        left = header.size
        while left:
            piece = content.read(min(COPY_PIECE, left))
            left -= len(piece)
            self._write(piece)
        if header.size % tarfile.BLOCKSIZE:
            self._write(bytes(tarfile.BLOCKSIZE - header.size % tarfile.BLOCKSIZE))

    def close(self) -> None:
        """The end: two zero blocks, then zeros to a whole record, as tar writes it."""
        self._write(bytes(2 * tarfile.BLOCKSIZE))
        size = self._written + len(self._buffer)
        if size % tarfile.RECORDSIZE:
            self._write(bytes(tarfile.RECORDSIZE - size % tarfile.RECORDSIZE))
        self._flush()


def write_tar(
    checked: Checked, sink: Sink, progress: Callable[[Sent], None] | None = None
) -> Sent:
    """Write the archive of every checked source to `sink`, as it is read (GNU format, what
    tarfile's `tobuf` makes of each header)."""
    sent = Sent()
    archive = _TarWriter(sink)
    for source in checked.sources:
        sent.source, sent.of_source = source.number, Size()
        for entry in _walk(source):
            if isinstance(entry, _Skipped):
                continue  # named by check_sources
            _add(archive, source, entry, sent)
            if progress is not None:
                progress(sent)
    archive.close()
    return sent


def _add(archive: _TarWriter, source: Source, entry: _Entry, sent: Sent) -> None:
    header = _header(entry)
    if header.type != tarfile.REGTYPE:
        archive.add(header)
        sent.entries += 1
        sent.of_source.entries += 1
        return
    given = _given(source.bind)
    try:
        file = open(entry.path, "rb")  # noqa: SIM115  # closed below, after addfile
    except OSError as exc:
        sent.warnings.append(f"-v {given}: left out {entry.path}: {exc.strerror}")
        return
    with file:
        reader = _ExactReader(file, header.size)
        archive.add(header, reader)
    sent.entries += 1
    sent.bytes += header.size
    sent.of_source.entries += 1
    sent.of_source.bytes += header.size
    if reader.shrank:
        sent.warnings.append(
            f"-v {given}: {entry.path} shrank while it was sent; its end is zeros"
        )
