"""The cluster half of files in and out (docs/decisions/0180 and 0220): the upload into the
pod before `main` starts, and the copy of `rw` mounts back after it ended.

Owns:
- `FileTransfer.upload`: waits (within --timeout) for the init container `squarepeg-files`
  to run, then one `kubectl exec -i ... -c squarepeg-files -- sh -c UPLOAD` whose stdin is a
  pipe that a thread of ours fills with files/upload.py's tar stream as the tree is read
  (nothing is held in memory or on disk). The main thread waits in short slices, so a
  Ctrl-C ends the run at once: the exec is ended with every child, the pod is deleted, and
  nothing local was touched. Progress (the mount being sent, its bytes and entries) is the
  status line on a terminal; a summary line on stderr otherwise when the upload is big;
  nothing with -q.
- `FileTransfer.copy_back`: after `main` terminated, `kubectl exec ... -c
  squarepeg-files-back -- sh -c 'touch copying && tar -c ...'` read as a stream by
  tarfile, each entry written locally under SRC (`extract_member`): only new or changed
  files, each to a temporary name beside it and renamed over the old one, so that a stop
  leaves every file old or new, never half; nothing is deleted locally. What the container
  sent is not trusted: names outside `N/content`, `..`, absolute names, symlinks that leave
  SRC, and paths that pass through a local symlink out of SRC are refused and named; hard
  links, devices and FIFOs are left out and named. Then `touch copied` lets the sidecar end.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
import tarfile
import threading
import time
from dataclasses import dataclass, field, replace
from typing import IO, TYPE_CHECKING, Any

from kubectl_squarepeg.cluster import kubectl, podstate, verbs
from kubectl_squarepeg.errors import ClusterError, StartupError
from kubectl_squarepeg.files.upload import Checked, Sent, Source, progress_line, write_tar
from kubectl_squarepeg.plan.filehelpers import (
    CONTENT,
    COPIED_COMMAND,
    COPY_BACK_HELPER,
    UPLOAD_HELPER,
    copy_back_command,
    upload_command,
)
from kubectl_squarepeg.plan.mounts import human_bytes

if TYPE_CHECKING:
    from kubectl_squarepeg.cluster.commands import Commands
    from kubectl_squarepeg.run.watch import PodWatch
    from kubectl_squarepeg.terminal.console import Console

SLICE_SECONDS = 0.1  # the main thread's wait while the upload runs (Ctrl-C, progress)
SUMMARY_BYTES = 8 << 20  # an upload at least this big says what it sent, also off a terminal
COPY_BACK_SECONDS = 600.0  # at most, then the copy-back is reported as failed
RELEASE_SECONDS = 30.0
_CHUNK = 64 * 1024


def _init_state(pod: dict[str, Any], container: str) -> dict[str, Any]:
    for item in (pod.get("status") or {}).get("initContainerStatuses") or ():
        if isinstance(item, dict) and item.get("name") == container:
            state = item.get("state")
            return state if isinstance(state, dict) else {}
    return {}


@dataclass
class CopiedBack:
    """What a copy-back wrote locally, and what it refused or left out."""

    written: int = 0
    unchanged: int = 0
    bytes: int = 0
    refused: list[str] = field(default_factory=list)


class FileTransfer:
    """The execs of one run's bind mounts, on the pod squarepeg created."""

    def __init__(
        self,
        checked: Checked,
        target: kubectl.Target,
        commands: Commands,
        console: Console,
        *,
        owner_kept: bool,
    ) -> None:
        self.checked = checked
        self.target = target
        self.commands = commands
        self.console = console
        self.owner_kept = owner_kept
        self.copied_back = [s for s in checked.sources if s.bind.copied_back]

    # -- the upload

    def wait_for_helper(self, watch: PodWatch, timeout: float) -> str | None:
        """Wait until `squarepeg-files` runs; the pod's name, or None when the pod moved on
        without it (deleted, or the helper already ended: the start's wait reports that)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StartupError(
                    f"the file upload helper of pod {watch.pod_name} did not start within the "
                    f"startup timeout of {timeout:g}s",
                    "raise --timeout if it is just slow; "
                    f"`{self.commands.events(str(watch.pod_name))}` lists the pod's events",
                )
            event = watch.next(min(0.5, remaining))
            if event is None:
                continue
            pod = event.pod
            name = podstate.name(pod)
            if event.type == "DELETED" or podstate.phase(pod) in ("Succeeded", "Failed"):
                return None
            state = _init_state(pod, UPLOAD_HELPER)
            if "running" in state:
                return name
            if "terminated" in state:
                return None
            stuck = podstate.fail_fast(pod)
            if stuck is not None:
                raise StartupError(
                    f"container {stuck.container} of pod {name} cannot start: {stuck.reason}"
                    + (f": {stuck.message}" if stuck.message else ""),
                    "the helper image is the config key `files_helper_image` (an image with "
                    f"sh and tar); `{self.commands.events(name)}` lists the pod's events",
                )

    def upload(self, pod: str) -> Sent:
        """Stream every bind mount into the running helper; what was sent."""
        read_fd, write_fd = os.pipe()
        try:
            child = verbs.exec_reading(
                self.target, pod, UPLOAD_HELPER, upload_command(owner_kept=self.owner_kept),
                stdin_fd=read_fd,
            )
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        sent = Sent()
        writer = PipeWriter(write_fd, self.checked, sent)
        writer.start()
        began = time.monotonic()
        total = self.checked.total_bytes
        while (code := child.wait(SLICE_SECONDS)) is None:
            self.console.progress(progress_line(self.checked, sent))
        writer.join(5.0)
        self.console.end_progress()
        for warning in sent.warnings:
            self.console.warn(warning)
        if code != 0 or writer.failure is not None:
            said = kubectl.Result(child.argv, code, b"", child.stderr).error_text
            if writer.failure is not None and code == 0:
                said = f"reading the files failed: {writer.failure}"
            raise ClusterError(
                f"the upload of the files into pod {pod} failed: {said}",
                "check that `files_helper_image` has sh and tar; "
                f"`{self.commands.logs('Pod', pod, UPLOAD_HELPER)}` shows the helper's side",
            )
        seconds = time.monotonic() - began
        if total >= SUMMARY_BYTES:
            self.console.status(
                f"uploaded {human_bytes(sent.bytes)} in {sent.entries} entries in {seconds:.1f}s"
            )
        return sent

    # -- results back

    def copy_back(self, pod: str) -> CopiedBack:
        """Copy every rw mount back into its SRC; raises ClusterError when it failed."""
        numbers = [s.number for s in self.copied_back]
        read_fd, write_fd = os.pipe()
        try:
            child = verbs.exec_writing(
                self.target, pod, COPY_BACK_HELPER, copy_back_command(numbers),
                stdout_fd=write_fd,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        copied = CopiedBack()
        failure: str | None = None
        with os.fdopen(read_fd, "rb") as stream:
            try:
                extract_stream(stream, self.copied_back, copied)
            except (tarfile.TarError, OSError) as exc:
                failure = str(exc)
                child.terminate()
        code = child.wait(COPY_BACK_SECONDS)
        if code is None:
            child.terminate()
            failure = failure or f"it did not end within {COPY_BACK_SECONDS:g}s"
        elif code != 0 and failure is None:
            failure = kubectl.Result(child.argv, code, b"", child.stderr).error_text
        for refused in copied.refused:
            self.console.warn(refused)
        if failure is not None:
            by_hand = self.commands.kubectl(
                "exec", pod, "-c", COPY_BACK_HELPER, "--", *copy_back_command(numbers)
            )
            raise ClusterError(
                f"the copy of the rw mounts back from pod {pod} failed: {failure}",
                f"with --keep the pod stays a while; fetch them by hand: `{by_hand} | tar -x`",
            )
        self.console.status(
            f"copied back {copied.written} new or changed file(s), {human_bytes(copied.bytes)}; "
            f"{copied.unchanged} unchanged; files deleted in the container stay here"
        )
        return copied

    def release(self, pod: str) -> None:
        """Tell the copy-back sidecar it may end, so the pod completes (quietly: a pod gone
        or a sidecar already ended has nothing to be told)."""
        with contextlib.suppress(ClusterError):
            kubectl.collect(
                kubectl.start(["exec", pod, "-c", COPY_BACK_HELPER, "--", *COPIED_COMMAND],
                              self.target),
                timeout=RELEASE_SECONDS,
            )


class PipeWriter:
    """The tar stream written into the exec's stdin on a thread of its own; a reader that
    went away (the exec ended) ends it quietly, any other failure is kept for the caller."""

    def __init__(self, fd: int, checked: Checked, sent: Sent) -> None:
        self._fd = fd
        self._checked = checked
        self._sent = sent
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._write_all, name="upload", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def _write_all(self) -> None:
        try:
            result = write_tar(self._checked, self, progress=self._progress)
            self._sent.warnings.extend(result.warnings)
        except BrokenPipeError:
            pass  # the exec ended; its exit code says why
        except BaseException as exc:
            self.failure = exc
        finally:
            os.close(self._fd)

    def _progress(self, sent: Sent) -> None:
        # Read by the main thread's progress line: each field is replaced whole, never
        # changed in place, so a line shows a value that was true at some instant.
        self._sent.bytes, self._sent.entries = sent.bytes, sent.entries
        self._sent.source, self._sent.of_source = sent.source, replace(sent.of_source)


# -- the local side of the copy-back ------------------------------------------------------


def extract_stream(stream: IO[bytes], sources: list[Source], copied: CopiedBack) -> None:
    """Read a tar of `N/content...` entries as a stream and write each under its SRC."""
    by_number = {str(s.number): s for s in sources}
    with tarfile.open(fileobj=stream, mode="r|", errorlevel=2) as archive:
        for member in archive:
            extract_member(archive, member, by_number, copied)


def _local_path(member_name: str, by_number: dict[str, Source]) -> tuple[Source, str] | str:
    """SRC and the local path of an entry; or why it is refused."""
    name = member_name.rstrip("/")
    if name.startswith("./"):
        name = name[2:]
    parts = name.split("/")
    if name.startswith("/") or ".." in parts or len(parts) < 2 or parts[1] != CONTENT:
        return "a name outside the mounts"
    source = by_number.get(parts[0])
    if source is None:
        return "a mount that is not rw"
    rest = parts[2:]
    if not source.is_dir:
        return (source, source.root) if not rest else "a path under a file mount"
    return source, os.path.join(source.root, *rest)


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def extract_member(
    archive: tarfile.TarFile,
    member: tarfile.TarInfo,
    by_number: dict[str, Source],
    copied: CopiedBack,
) -> None:
    found = _local_path(member.name, by_number)
    if isinstance(found, str):
        copied.refused.append(f"copy-back: refused {member.name!r}: {found}")
        return
    source, path = found
    parent = os.path.dirname(path)
    if source.is_dir and path != source.root and not _inside(
        source.root, os.path.realpath(parent)
    ):
        copied.refused.append(f"copy-back: refused {member.name!r}: its directory leaves SRC")
        return
    if member.isdir():
        if not os.path.lexists(path):
            os.makedirs(path, mode=member.mode & 0o7777 or 0o755, exist_ok=True)
        elif not os.path.isdir(path) or os.path.islink(path):
            copied.refused.append(f"copy-back: left {path}: a directory there, not here")
        return
    if member.issym():
        _write_symlink(source, path, member, copied)
        return
    if not member.isreg():
        copied.refused.append(f"copy-back: left out {member.name!r}: not a file, directory "
                              "or symlink")
        return
    reader = archive.extractfile(member)
    assert reader is not None
    _write_file(path, member, reader, copied)


def _write_file(path: str, member: tarfile.TarInfo, reader: IO[bytes], copied: CopiedBack) -> None:
    """Write the file beside `path` and rename it over `path`, unless it is the same file
    (bytes and mode), read side by side as it arrives: the stream cannot be read twice."""
    mode = member.mode & 0o7777
    local = _open_same_candidate(path, member)
    temporary = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.squarepeg-tmp")
    same = local is not None
    os.makedirs(os.path.dirname(path), exist_ok=True)  # a tar may list a file before its dir
    try:
        with open(temporary, "wb") as out:
            while piece := reader.read(_CHUNK):
                out.write(piece)
                if same and local is not None and local.read(len(piece)) != piece:
                    same = False
        if same:
            os.unlink(temporary)
            copied.unchanged += 1
            return
        os.chmod(temporary, mode)
        os.utime(temporary, (member.mtime, member.mtime))
        if os.path.isdir(path) and not os.path.islink(path):
            raise IsADirectoryError(f"{path} is a directory here, a file in the container")
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    finally:
        if local is not None:
            local.close()
    copied.written += 1
    copied.bytes += member.size


def _open_same_candidate(path: str, member: tarfile.TarInfo) -> IO[bytes] | None:
    """The local file, open, when its size and mode are the member's (it may be the same)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_size != member.size:
        return None
    if stat.S_IMODE(info.st_mode) != member.mode & 0o7777:
        return None
    try:
        return open(path, "rb")  # closed by the caller
    except OSError:
        return None


def _write_symlink(
    source: Source, path: str, member: tarfile.TarInfo, copied: CopiedBack
) -> None:
    link = member.linkname
    resolved = posixpath.normpath(posixpath.join(os.path.dirname(path), link))
    if os.path.isabs(link) or not _inside(source.root, resolved):
        copied.refused.append(f"copy-back: refused {member.name!r}: a symlink out of SRC")
        return
    with contextlib.suppress(OSError):
        if os.readlink(path) == link:
            copied.unchanged += 1
            return
    if os.path.isdir(path) and not os.path.islink(path):
        copied.refused.append(f"copy-back: left {path}: a directory here, a symlink there")
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.squarepeg-tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)
    os.symlink(link, temporary)
    os.replace(temporary, path)
    copied.written += 1

