"""`cp`'s plan, pure: which way a copy goes, and the small sh scripts squarepeg execs in the
run's `main` container for it (docs/decisions/0380).

Owns:
- `parse_copy`: `cp NAME:PATH DEST` / `cp SRC NAME:PATH` read into a `Copy`, docker's way:
  exactly one side names a run; `-` is a tar stream on stdin or stdout; a container path is
  absolute (a relative one is under `/`, as docker reads it); a trailing `/.` on SRC means
  the directory's content.
- the container's side of each direction: `into_command` (extract a tar from stdin, then
  put it where docker's rules say), `into_stream_command` (`cp - NAME:DIR`: the tar as it
  is, into a directory that exists), `out_of_command` (a tar of PATH on stdout).
The scripts need `sh` and `tar` in the image (and `mktemp`, `mv`, `cp -a`, `rm`, which a
shell's image has: busybox and coreutils alike). A failure the scripts recognise is one
line on stderr starting `squarepeg-cp: `, which squarepeg shows as the error; a missing
`tar` is such a line; a missing `sh` is kubectl exec's "not found", exit 126/127.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Literal

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan import names, values

STREAM = "-"
SAID = "squarepeg-cp: "  # the prefix of a line the container's scripts say for a refusal


@dataclass(frozen=True)
class Copy:
    """One `cp`: `run` is the run's name, `remote` its normalised absolute path;
    `local` is the local path as given, or `-`. `contents`: SRC ended with `/.`."""

    direction: Literal["into", "out_of"]
    run: str
    remote: str
    local: str
    contents: bool = False

    @property
    def streamed(self) -> bool:
        return self.local == STREAM


def _remote(word: str) -> tuple[str, str] | None:
    """(NAME, PATH) when `word` is NAME:PATH; a local path is anything without a colon
    before the first slash (docker's rule: `./a:b` is a local file)."""
    head, colon, path = word.partition(":")
    if not colon or "/" in head or not head:
        return None
    return head, path


def _normal(path: str, word: str) -> str:
    if not path:
        raise UsageError(
            f"{word!r}: no path after the run's name", "give NAME:PATH, e.g. NAME:/data"
        )
    normal = posixpath.normpath(posixpath.join("/", path))
    return normal + "/" if path.endswith("/") and normal != "/" else normal


def _run_name(name: str) -> str:
    try:
        return names.validate_name(name)
    except values.ValueProblem as problem:
        raise UsageError(
            f"{name!r} cannot be the name of a squarepeg run",
            f"{problem}; `kubectl squarepeg ps -a` lists your runs",
        ) from None


def _contents(path: str) -> bool:
    return path == "." or path.endswith("/.")


def parse_copy(source: str, dest: str) -> Copy:
    """SRC and DEST as `cp` takes them; a UsageError for a copy docker would not make."""
    remote_source, remote_dest = _remote(source), _remote(dest)
    if remote_source is not None and remote_dest is not None:
        raise UsageError(
            f"cp {source} {dest}: both sides name a run",
            "copy between runs through a local directory, in two steps",
        )
    if remote_source is None and remote_dest is None:
        raise UsageError(
            f"cp {source} {dest}: neither side names a run",
            "write the run's side as NAME:PATH (`kubectl squarepeg ps` lists your runs)",
        )
    if remote_source is not None:
        name, path = remote_source
        if not dest:
            raise UsageError("cp: DEST is empty", "give a local path, or - for a tar on stdout")
        return Copy("out_of", _run_name(name), _normal(path, source), dest, _contents(path))
    assert remote_dest is not None
    name, path = remote_dest
    if not source:
        raise UsageError("cp: SRC is empty", "give a local path, or - for a tar on stdin")
    return Copy("into", _run_name(name), _normal(path, dest), source, _contents(source))


_NEEDS_TAR = (
    f"command -v tar >/dev/null 2>&1 || {{ echo '{SAID}the image has no tar; "
    "cp needs sh and tar in the container' >&2; exit 69; }\n"
)

# $1 the destination, $2 file|dir|contents (what SRC is), $3 SRC's base name.
# Nothing is read from stdin before the destination is judged, so a refusal costs no upload;
# the archive lands in a directory beside its target first (its own filesystem, so the
# final `mv` is a rename), and is then moved or merged into place.
_INTO = _NEEDS_TAR + f"""\
umask 0
d=$1; k=$2; b=$3
if [ -d "$d" ]; then
  if [ "$k" = contents ]; then t=$d; else t=${{d%/}}/$b; fi
elif [ -e "$d" ] || [ -L "$d" ]; then
  case $d in */) echo "{SAID}$d is not a directory" >&2; exit 65;; esac
  [ "$k" = file ] || {{ echo "{SAID}cannot copy a directory to $d: a file is there" >&2; exit 65; }}
  t=$d
else
  case $d in */) echo "{SAID}$d: no such directory" >&2; exit 65;; esac
  p=$(dirname "$d")
  [ -d "$p" ] || {{ echo "{SAID}$p: no such directory" >&2; exit 65; }}
  t=$d
fi
if [ -d "$t" ] && [ ! -L "$t" ] && [ "$k" = file ]; then
  echo "{SAID}cannot overwrite the directory $t with a file" >&2; exit 65
fi
if [ -e "$t" ] && [ ! -d "$t" ] && [ "$k" != file ]; then
  echo "{SAID}cannot overwrite the file $t with a directory" >&2; exit 65
fi
tmp=$(mktemp -d "$(dirname "$t")/.squarepeg-cp.XXXXXX") || exit 73
trap 'rm -rf "$tmp"' EXIT
tar -x -f - -C "$tmp" || exit 74
s=$tmp/1/content
if [ -d "$t" ] && [ ! -L "$t" ]; then
  cp -a "$s/." "$t/" || exit 75
else
  rm -f "$t" && mv "$s" "$t" || exit 75
fi
"""

_INTO_STREAM = _NEEDS_TAR + f"""\
umask 0
[ -d "$1" ] || {{ echo "{SAID}$1: no such directory (a tar is extracted into one)" >&2
  exit 65; }}
tar -x -f - -C "$1"
"""

# $1 the path; $2 1 for its content (SRC/.), else the entry itself with its base name.
_OUT_OF = _NEEDS_TAR + f"""\
s=$1
[ -e "$s" ] || [ -L "$s" ] || {{ echo "{SAID}$s: no such file or directory" >&2; exit 66; }}
if [ "$2" = 1 ]; then
  [ -d "$s" ] || {{ echo "{SAID}$s is not a directory" >&2; exit 65; }}
  cd "$s" && exec tar -c -f - .
fi
cd "$(dirname "$s")" && exec tar -c -f - "$(basename "$s")"
"""


def into_command(dest: str, kind: Literal["file", "dir", "contents"], base: str) -> list[str]:
    """What squarepeg execs in `main` with the upload's tar (`1/content[/...]`) on stdin."""
    return ["sh", "-c", _INTO, "squarepeg-cp", dest, kind, base]


def into_stream_command(dest: str) -> list[str]:
    """`cp - NAME:DIR`: the tar from squarepeg's stdin extracted into DIR, as it is."""
    return ["sh", "-c", _INTO_STREAM, "squarepeg-cp", dest.rstrip("/") or "/"]


def out_of_command(path: str, contents: bool) -> list[str]:
    """A tar of PATH on stdout: `BASENAME[/...]`, or `./...` for its content."""
    bare = path.rstrip("/") or "/"
    return ["sh", "-c", _OUT_OF, "squarepeg-cp", bare, "1" if contents else "0"]


def said_line(stderr: str) -> str | None:
    """The refusal a container's script said, without its prefix."""
    for line in stderr.splitlines():
        if line.startswith(SAID):
            return line[len(SAID):].strip()
    return None
