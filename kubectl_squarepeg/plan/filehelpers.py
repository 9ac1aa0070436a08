"""The pod's side of files in and out: volumes, the helper containers, and the commands
squarepeg execs into them (docs/decisions/0180).

Owns the names, paths, deadlines, resources and securityContext of the two helpers:
- `squarepeg-files`, an init container, exists when any `-v`/`--mount type=bind` is given.
  It waits for squarepeg to stream one tar of every bind mount through `kubectl exec -i ...
  -c squarepeg-files -- sh -c UPLOAD`, then ends, and `main` starts on the filled volumes. It
  waits at most START_SECONDS for the upload to begin and UPLOAD_SECONDS for it to end, then
  fails: a pod whose squarepeg went away ends Failed, and the sweep takes it.
- `squarepeg-files-back`, a native sidecar (an init container with restartPolicy Always),
  exists when a bind mount is `rw`. The kubelet stops it with SIGTERM once `main` has ended;
  it then stays up while squarepeg copies the mounts back through exec, at most
  COPY_START_SECONDS for the copy to begin and the pod's grace period for it to end.

Each bind mount N (from 1) is the emptyDir `files-N`; its content is the entry `content`
inside it, mounted in `main` with `subPath: content`, so a file and a directory SRC are the
same manifest and `--dry-run` need not look at SRC. Pure: data only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kubectl_squarepeg.plan.mounts import BindMount

UPLOAD_HELPER = "squarepeg-files"
COPY_BACK_HELPER = "squarepeg-files-back"
# busybox 1.36.1 (sh, tar, touch, sleep), by the digest of its multi-platform index.
DEFAULT_HELPER_IMAGE = (
    "docker.io/library/busybox:1.36.1"
    "@sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662"
)
FILES_VOLUME = "files-{}"  # the emptyDir of the Nth bind mount
CONTROL_VOLUME = "squarepeg-control"  # the flag files the helpers and squarepeg share
CONTROL_DIR = "/squarepeg/control"
MOUNTS_DIR = "/squarepeg/mounts"  # files-N is mounted at MOUNTS_DIR/N in the helpers
CONTENT = "content"  # the entry inside files-N that `main` mounts at DST (subPath)
START_SECONDS = 120  # from the upload helper's start to squarepeg's first byte
UPLOAD_SECONDS = 3600  # from the helper's start to the end of the upload
COPY_START_SECONDS = 30  # from main's end to squarepeg's copy-back starting
# The pod's terminationGracePeriodSeconds with a rw bind mount and no --stop-timeout: the
# kubelet kills the copy-back helper this long after main ended, copy or not.
COPY_BACK_GRACE_SECONDS = 300
# The grace a pod would have had without the copy-back's (Kubernetes' default): once the
# copy-back is done, the delete at the run's end asks for it, so that an injected sidecar
# that ignores SIGTERM holds the pod no longer than it would without -v (issue 33).
DEFAULT_GRACE_SECONDS = 30
_TICK = 0.2  # the helpers look for a flag file this often (busybox sleep takes fractions)

# PID 1 ignores SIGTERM without a handler: the trap lets a pod deleted during the upload
# (a Ctrl-C) go at once rather than after its grace period.
# The flags: squarepeg touches `started`, then `uploaded` or `failed` (UPLOAD_COMMAND), and
# `copying`, then `copied` (COPY_BACK_COMMAND, COPIED_COMMAND).
_WAIT_FOR_UPLOAD = f"""\
trap 'exit 143' TERM
c={CONTROL_DIR}; n=0
until [ -e $c/started ]; do
  n=$((n+1)); if [ $n -gt {int(START_SECONDS / _TICK)} ]; then
    echo "squarepeg-files: no upload began within {START_SECONDS}s; was squarepeg stopped?" >&2
    exit 1; fi
  sleep {_TICK}
done
until [ -e $c/uploaded ] || [ -e $c/failed ]; do
  n=$((n+1)); if [ $n -gt {int(UPLOAD_SECONDS / _TICK)} ]; then
    echo "squarepeg-files: the upload did not end within {UPLOAD_SECONDS}s" >&2; exit 1; fi
  sleep {_TICK}
done
[ -e $c/uploaded ]
"""

_WAIT_FOR_COPY_BACK = f"""\
c={CONTROL_DIR}; ended=
trap 'ended=1' TERM
until [ -n "$ended" ]; do sleep 1 & wait $!; done
n=0
until [ -e $c/copying ]; do
  n=$((n+1)); [ $n -gt {int(COPY_START_SECONDS / _TICK)} ] && exit 0
  sleep {_TICK}
done
until [ -e $c/copied ]; do sleep {_TICK}; done
"""


def upload_command(*, owner_kept: bool) -> list[str]:
    """What squarepeg execs in `squarepeg-files` with the tar on stdin. The archive holds
    `N/content...` for the Nth mount; `-o` (no same owner) when the helper is not root."""
    extract = f"tar -x{'' if owner_kept else 'o'} -f - -C {MOUNTS_DIR}"
    script = (
        f"touch {CONTROL_DIR}/started && {extract} && touch {CONTROL_DIR}/uploaded "
        f"|| {{ touch {CONTROL_DIR}/failed; exit 1; }}"
    )
    return ["sh", "-c", script]


def copy_back_command(numbers: list[int]) -> list[str]:
    """What squarepeg execs in `squarepeg-files-back` after main ended: a tar of the rw mounts
    on stdout."""
    entries = " ".join(f"{n}/{CONTENT}" for n in numbers)
    return ["sh", "-c", f"touch {CONTROL_DIR}/copying && tar -c -f - -C {MOUNTS_DIR} {entries}"]


COPIED_COMMAND = ["touch", f"{CONTROL_DIR}/copied"]


def volumes(binds: tuple[BindMount, ...]) -> list[dict[str, Any]]:
    """One emptyDir per bind mount, and the small in-memory control volume."""
    found = [{"name": FILES_VOLUME.format(n), "emptyDir": {}} for n in range(1, len(binds) + 1)]
    control = {"name": CONTROL_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}
    return [*found, control]


def main_mounts(binds: tuple[BindMount, ...]) -> list[dict[str, Any]]:
    """`main`'s mount of each bind mount's content at DST (read-only for `ro`)."""
    mounts = []
    for number, bind in enumerate(binds, start=1):
        mount: dict[str, Any] = {
            "name": FILES_VOLUME.format(number),
            "mountPath": bind.target,
            "subPath": CONTENT,
        }
        if bind.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    return mounts


def _helper_mounts(count: int) -> list[dict[str, Any]]:
    mounts = [
        {"name": FILES_VOLUME.format(n), "mountPath": f"{MOUNTS_DIR}/{n}"}
        for n in range(1, count + 1)
    ]
    return [*mounts, {"name": CONTROL_VOLUME, "mountPath": CONTROL_DIR}]


def security_context(user: tuple[int, int | None] | None) -> dict[str, Any]:
    """The helpers never escalate and write only their volumes. Without -u they run as root
    with just the capabilities `tar x` needs to restore your files' owners and modes (CHOWN,
    FOWNER, DAC_OVERRIDE); with -u as that user, with none, and the files are its own."""
    context: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    if user is None:
        context["capabilities"]["add"] = ["CHOWN", "DAC_OVERRIDE", "FOWNER"]
        return context
    context["runAsUser"] = user[0]
    if user[1] is not None:
        context["runAsGroup"] = user[1]
    if user[0] != 0:
        context["runAsNonRoot"] = True
    return context


def upload_resources(main: dict[str, Any]) -> dict[str, Any]:
    """The upload helper's resources: main's CPU and memory, as they are. An init container
    runs before main, so the pod's request (the larger of the two) does not grow, and the
    pod's QoS class stays main's: none (BestEffort), equal (Guaranteed) or other (Burstable)."""
    return {
        part: {k: v for k, v in amounts.items() if k in ("cpu", "memory")}
        for part, amounts in main.items()
        if any(k in ("cpu", "memory") for k in amounts)
    }


def copy_back_resources(main: dict[str, Any]) -> dict[str, Any]:
    """The copy-back helper runs beside main, so its request adds to the pod's: the least
    that keeps main's QoS class. BestEffort stays without any; Guaranteed (requests equal to
    limits for CPU and memory) gets 50m and 32Mi as both; Burstable gets small requests."""
    requests, limits = main.get("requests", {}), main.get("limits", {})
    if not requests and not limits:
        return {}
    guaranteed = all(
        resource in limits and requests.get(resource, limits[resource]) == limits[resource]
        for resource in ("cpu", "memory")
    )
    if guaranteed:
        amounts = {"cpu": "50m", "memory": "32Mi"}
        return {"requests": dict(amounts), "limits": dict(amounts)}
    return {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}}


def init_containers(
    binds: tuple[BindMount, ...],
    *,
    image: str,
    user: tuple[int, int | None] | None,
    main_resources: dict[str, Any],
) -> list[dict[str, Any]]:
    """The upload helper, and the copy-back sidecar when a mount is rw."""
    if not binds:
        return []

    def common() -> dict[str, Any]:  # fresh objects each: a dry run's YAML has no aliases
        return {
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "securityContext": security_context(user),
            "volumeMounts": _helper_mounts(len(binds)),
        }

    upload: dict[str, Any] = {
        "name": UPLOAD_HELPER,
        **common(),
        "command": ["sh", "-c", _WAIT_FOR_UPLOAD],
    }
    if resources := upload_resources(main_resources):
        upload["resources"] = resources
    helpers = [upload]
    if any(bind.copied_back for bind in binds):
        back: dict[str, Any] = {
            "name": COPY_BACK_HELPER,
            **common(),
            "restartPolicy": "Always",
            "command": ["sh", "-c", _WAIT_FOR_COPY_BACK],
        }
        if resources := copy_back_resources(main_resources):
            back["resources"] = resources
        helpers.append(back)
    return helpers


def grace_after_copy_back(binds: Sequence[BindMount], stop_timeout: int | None) -> int | None:
    """The grace period of the delete at a run's end, when the pod's own was raised for the
    copy-back (a rw bind mount and no --stop-timeout: COPY_BACK_GRACE_SECONDS) and is no
    longer needed; None to keep the pod's own."""
    if stop_timeout is None and any(b.copied_back for b in binds):
        return DEFAULT_GRACE_SECONDS
    return None
