"""A container's emptyDir volumes, seen at their mountPath: what squarepeg's `-v SRC:DST` needs
(an upload helper and `main` sharing a volume at different paths).

Owns the directories of a pod's emptyDir volumes (`<pod scratch>/volumes/NAME`, shared by all
its containers and their execs) and the wrapper that shows them to one process: the process
starts in a mount namespace of its own (`unshare --mount`, root only), whose root is a tmpfs
holding a bind of every top-level entry of the host's `/` plus each volume mount (`subPath`
and `readOnly` as on a node: a read-only mount gives EROFS), then `chroot`s into it and goes
to its working directory. The host never sees the mounts: they end with the process.

Differences from a node (tests/kubesim/README.md): only emptyDir volumes are mounted (other
volume types stay unmounted, as before); a mountPath whose first component exists on the
host (`/usr/src`, `/tmp/x`) is refused with a StartError, since making its mount point would
write to the host; the container's files are the host's (there is no image filesystem).
A container without emptyDir mounts runs exactly as before, with no namespace.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

Obj = dict[str, Any]


class MountRefused(OSError):
    """A mount kubesim cannot show without writing to the host."""


def volume_dir(pod_dir: str, volume: str) -> str:
    path = os.path.join(pod_dir, "volumes", volume)
    os.makedirs(path, exist_ok=True)
    return path


def _mounts(pod: Obj, container: Obj, pod_dir: str) -> list[tuple[str, str, bool]]:
    """(host path, mountPath, read-only) of the container's emptyDir mounts."""
    empty_dirs = {v.get("name") for v in (pod.get("spec") or {}).get("volumes") or []
                  if isinstance(v, dict) and "emptyDir" in v}
    found = []
    for mount in container.get("volumeMounts") or []:
        if mount.get("name") not in empty_dirs:
            continue
        path = str(mount.get("mountPath") or "")
        top = path.strip("/").split("/")[0]
        if not path.startswith("/") or not top or os.path.lexists("/" + top):
            raise MountRefused(f"kubesim mounts a volume only under a new top-level directory, "
                               f"not at {path!r}")
        source = volume_dir(pod_dir, str(mount["name"]))
        if mount.get("subPath"):
            source = os.path.join(source, str(mount["subPath"]))
            if not os.path.lexists(source):
                os.makedirs(source, exist_ok=True)  # the kubelet makes a missing subPath
        found.append((source, path, bool(mount.get("readOnly"))))
    return found


_ENTER = r"""
set -e
r=$1; cwd=$2; shift 2
mount -t tmpfs kubesim-root "$r"
for d in /*; do
  n=${d#/}
  if [ -L "$d" ]; then ln -s "$(readlink "$d")" "$r/$n"
  elif [ -d "$d" ]; then mkdir "$r/$n"; mount --rbind "$d" "$r/$n"
  fi
done
"""


def wrap(pod: Obj, container: Obj, pod_dir: str, argv: list[str], cwd: str) -> list[str]:
    """`argv` run with the container's emptyDir mounts in place (unchanged without any)."""
    mounts = _mounts(pod, container, pod_dir)
    if not mounts:
        return argv
    root = os.path.join(pod_dir, f"root-{os.getpid()}-{id(argv)}")
    os.makedirs(root, exist_ok=True)
    lines = [_ENTER]
    for source, path, read_only in mounts:
        target = '"$r"' + shlex.quote(path)
        make = "touch" if os.path.isfile(source) else "mkdir -p"
        if make == "touch":
            lines.append(f"mkdir -p \"$(dirname {target})\"")
        lines.append(f"{make} {target}; mount --bind {shlex.quote(source)} {target}")
        if read_only:
            lines.append(f"mount -o remount,bind,ro {target}")
    working = container.get("workingDir") or cwd
    lines.append('exec chroot "$r" /bin/sh -c \'cd "$0" 2>/dev/null || cd /; exec "$@"\' '
                 '"$cwd" "$@"')
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
            "\n".join(lines), "kubesim-mounts", root, str(working), *argv]
