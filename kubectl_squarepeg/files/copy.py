"""`cp`'s local side (docs/decisions/0380): SRC checked and sent as the `-v` upload's tar
(files/upload.py, so modes, symlinks inside SRC, empty directories and odd names travel
the same way), and a tar from the container written under DEST by docker's rules.

Owns:
- `check_local_source`: `cp SRC NAME:PATH`'s SRC resolved and walked (upload.check_sources,
  its words said as `cp`'s), and what SRC is for the container's script: a file, a
  directory, or a directory's content (`SRC/.`).
- `Extractor`: `cp NAME:PATH DEST` reading the container's tar as a stream. DEST's rules
  are docker's: SRC a file: an existing directory DEST gets it under its base name, else it
  is DEST (DEST's parent must exist; `DEST/` must be an existing directory). SRC a directory:
  DEST missing is created as the copy; an existing directory DEST gets it under its base
  name, or its content with `SRC/.`; a file there is refused. What it writes: regular
  files byte-exact with their mode and mtime, directories (modes set once their content is
  in, so a read-only one can be filled), symlinks as they are, hard links as copies. A name
  that leaves DEST (absolute, `..`, or through a symlink the archive made) is refused.
"""

from __future__ import annotations

import os
import tarfile
from dataclasses import dataclass, field
from typing import IO, Literal

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.files import upload
from kubectl_squarepeg.plan.mounts import BindMount

_MARK = "/squarepeg-cp"  # the bind target check_sources names; replaced in its words
_PIECE = 64 * 1024
NO_LIMIT = 1 << 62  # docker's cp has no size limit, nor has squarepeg's


@dataclass(frozen=True)
class LocalSource:
    checked: upload.Checked
    kind: Literal["file", "dir", "contents"]
    base: str


def _said_as_cp(text: str, source: str) -> str:
    return text.replace(f"-v {source}:{_MARK}", f"cp {source}")


def check_local_source(source: str, *, cwd: str, home: str) -> LocalSource:
    """SRC walked once (nothing read but metadata); a UsageError when it cannot be sent."""
    bind = BindMount(source, _MARK, read_only=True)
    try:
        checked = upload.check_sources((bind,), NO_LIMIT, cwd=cwd, home=home)
    except UsageError as exc:
        raise UsageError(_said_as_cp(exc.message, source), exc.hint) from None
    checked.warnings[:] = [_said_as_cp(w, source) for w in checked.warnings]
    is_dir = checked.sources[0].is_dir
    contents = source == "." or source.endswith("/.")
    path = upload.resolve(source, cwd=cwd, home=home)
    base = os.path.basename(path.rstrip("/")) or "/"
    if contents and not is_dir:
        raise UsageError(f"cp {source}: not a directory", "SRC/. is a directory's content")
    return LocalSource(checked, "contents" if contents else "dir" if is_dir else "file", base)


@dataclass
class Extracted:
    """What a copy out of the container wrote: entries, bytes of file content."""

    entries: int = 0
    bytes: int = 0
    refused: list[str] = field(default_factory=list)


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Extractor:
    """Writes the container's tar under DEST; `dest` as given, `cwd` resolves it."""

    def __init__(self, dest: str, *, contents: bool, cwd: str) -> None:
        self.given = dest
        self.dest = os.path.normpath(os.path.join(cwd, os.path.expanduser(dest)))
        self.trailing_slash = dest.endswith("/")
        self.contents = contents
        self.root: str | None = None  # where the top entry goes, fixed by the first member
        self.top = ""
        self.done = Extracted()
        self._dirs: list[tuple[str, int, int]] = []
        self._files: dict[str, str] = {}  # archive name -> local path, for hard links

    def _choose_root(self, member: tarfile.TarInfo) -> str:
        """Docker's rules, once the first member says whether SRC is a directory."""
        is_dir = os.path.isdir(self.dest)
        if self.contents:
            if not member.isdir():
                raise UsageError(f"cp: the container's {member.name} is not a directory",
                                 "SRC/. is a directory's content")
            if os.path.lexists(self.dest) and not is_dir:
                raise UsageError(f"cp: {self.given} is not a directory",
                                 "give a directory, or a path that does not exist yet")
            return self.dest
        if is_dir:
            return os.path.join(self.dest, os.path.basename(member.name.rstrip("/")))
        if self.trailing_slash:
            raise UsageError(f"cp: {self.given}: no such directory",
                             "create it first, or leave out the trailing /")
        if member.isdir() and os.path.lexists(self.dest):
            raise UsageError(f"cp: cannot copy a directory to {self.given}: a file is there",
                             "give a directory, or a path that does not exist yet")
        parent = os.path.dirname(self.dest)
        if not os.path.isdir(parent):
            raise UsageError(f"cp: {parent}: no such directory", "create it first")
        return self.dest

    def _local(self, name: str) -> str | None:
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if name.startswith("/") or ".." in parts:
            return None
        if self.root is None:
            return None
        rest = parts[1:] if not self.contents else parts
        return os.path.join(self.root, *rest)

    def add(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        if self.root is None:
            self.root = self._choose_root(member)
            if os.path.isdir(self.root) and not member.isdir() and not os.path.islink(
                self.root
            ):
                raise UsageError(f"cp: cannot overwrite the directory {self.root} with a file",
                                 "give another DEST")
        path = self._local(member.name)
        if path is None:
            self.done.refused.append(f"{member.name} (a name out of DEST)")
            return
        parent = os.path.dirname(path)
        if path != self.root and not _inside(self.root, os.path.realpath(parent)):
            self.done.refused.append(f"{member.name} (its directory leaves DEST)")
            return
        self.done.entries += 1
        if member.isdir():
            if os.path.lexists(path) and not os.path.isdir(path):
                os.unlink(path)
            os.makedirs(path, exist_ok=True)
            os.chmod(path, 0o700 | (member.mode & 0o7777))  # the real mode once filled
            self._dirs.append((path, member.mode & 0o7777, int(member.mtime)))
            return
        os.makedirs(parent, exist_ok=True)
        if os.path.lexists(path) and not (os.path.isdir(path) and not os.path.islink(path)):
            os.unlink(path)
        if member.issym():
            os.symlink(member.linkname, path)
            return
        if member.islnk():
            linked = self._files.get(member.linkname.removeprefix("./"))
            if linked is None:
                self.done.refused.append(f"{member.name} (a hard link to a file not copied)")
                return
            with open(linked, "rb") as source, open(path, "wb") as out:
                while piece := source.read(_PIECE):
                    out.write(piece)
        elif member.isreg():
            reader = archive.extractfile(member)
            assert reader is not None
            with open(path, "wb") as out:
                while piece := reader.read(_PIECE):
                    out.write(piece)
            self.done.bytes += member.size
            self._files[member.name.removeprefix("./")] = path
        else:
            self.done.refused.append(f"{member.name} (not a file, directory or symlink)")
            self.done.entries -= 1
            return
        os.chmod(path, member.mode & 0o7777)
        os.utime(path, (member.mtime, member.mtime))

    def finish(self) -> None:
        """Directories' modes and times, deepest first (writing into one changes its mtime)."""
        for path, mode, mtime in reversed(self._dirs):
            os.chmod(path, mode)
            os.utime(path, (mtime, mtime))


def extract(stream: IO[bytes], extractor: Extractor) -> Extracted:
    """Read the container's tar as a stream into `extractor`; an empty archive is SRC gone."""
    with tarfile.open(fileobj=stream, mode="r|", errorlevel=2) as archive:
        for member in archive:
            extractor.add(archive, member)
    extractor.finish()
    return extractor.done
