"""`-v/--volume`, `--mount` and `--tmpfs`: docker's mount forms, parsed into what a pod can have.

Owns the grammar of the three flags and what each form becomes (docs/decisions/0180):
- a local path (absolute, `~`, or relative with a `/` or a leading `.`) is a `BindMount`:
  an emptyDir at DST filled with a snapshot of SRC before `main` starts, copied back after
  it ends unless read-only;
- a name without a slash is a `VolumeMount` of the PersistentVolumeClaim of that name, as
  docker's named volume;
- `--tmpfs PATH[:OPTIONS]` and `--mount type=tmpfs` are a `Tmpfs`: an in-memory emptyDir.

Pure: SRC is kept as given. Whether it exists, `~` and the working directory are the run's
business (files/upload.py), so `--dry-run` never reads a file. Every problem raises
`ValueProblem` whose text says why and the accepted form.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubectl_squarepeg.plan.names import validate_subdomain
from kubectl_squarepeg.plan.quantities import parse_size, size_bytes
from kubectl_squarepeg.plan.values import ValueProblem, parse_bool


@dataclass(frozen=True)
class BindMount:
    """A local file or directory copied into the pod at `target`."""

    source: str  # as given: resolved against the working directory and `~` at run time
    target: str  # normalised absolute path in the container
    read_only: bool = False

    @property
    def copied_back(self) -> bool:
        """docker's bind mount is two-way; `rw` (the default) copies DST back into SRC."""
        return not self.read_only


@dataclass(frozen=True)
class VolumeMount:
    """A PersistentVolumeClaim mounted at `target` (docker's named volume)."""

    claim: str
    target: str
    read_only: bool = False
    sub_path: str | None = None


@dataclass(frozen=True)
class Tmpfs:
    """One `--tmpfs PATH[:OPTIONS]`: an in-memory emptyDir mounted at `path` (normalised).

    `ignored` holds the options given that Kubernetes cannot express (`noexec`, `mode=1777`,
    ...): the caller warns about them once."""

    path: str
    size_limit: str | None = None
    read_only: bool = False
    ignored: tuple[str, ...] = ()


# docker's tmpfs options (its mount flags) that an emptyDir cannot express: warned, ignored.
_TMPFS_IGNORED = frozenset(
    [
        "exec",
        "noexec",
        "suid",
        "nosuid",
        "dev",
        "nodev",
        "sync",
        "async",
        "dirsync",
        "atime",
        "noatime",
        "diratime",
        "nodiratime",
        "relatime",
        "norelatime",
        "strictatime",
        "nostrictatime",
        "mand",
        "nomand",
        "tmpcopyup",
    ]
)
_TMPFS_IGNORED_VALUED = ("mode", "nr_inodes", "uid", "gid")


def normal_path(path: str) -> str:
    """A mount path as the kernel sees it: `//run/` and `/dev/./shm` are `/run`, `/dev/shm`."""
    import posixpath

    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("/") else normal


def parse_tmpfs(text: str) -> Tmpfs:
    """docker's `PATH[:OPTIONS]`: `size=SIZE` -> sizeLimit, `ro`/`rw` -> the mount's
    readOnly; the mount flags and `mode=` an emptyDir cannot express are kept in `ignored`."""
    path, _, options = text.partition(":")
    if not path.startswith("/"):
        raise ValueProblem("the tmpfs mount point must be an absolute path, like /tmp or /run")
    size: str | None = None
    read_only = False
    ignored: list[str] = []
    for option in filter(None, options.split(",")):
        name, equals, value = option.partition("=")
        if name == "size" and value:
            size = parse_size(value)
        elif option in ("rw", "ro"):
            read_only = option == "ro"
        elif option in _TMPFS_IGNORED or (equals and name in _TMPFS_IGNORED_VALUED and value):
            ignored.append(option)
        else:
            raise ValueProblem(
                f"{option!r} is not a tmpfs option; docker's are rw, ro, size=SIZE, mode=MODE "
                "and the mount flags (noexec, nosuid, nodev, ...), like /run:rw,size=64m"
            )
    return Tmpfs(normal_path(path), size, read_only, tuple(ignored))


Mount = BindMount | VolumeMount | Tmpfs

_VOLUME_FORM = (
    "use SRC:DST[:ro|rw] with SRC a local path (/abs, ./rel, ~/dir) or a claim name, and DST "
    "an absolute path in the container, like -v ./data:/data:ro or -v my-claim:/cache"
)
_MOUNT_FORM = (
    "use type=bind,src=PATH,dst=/DIR[,readonly], type=volume,src=CLAIM,dst=/DIR[,readonly] or "
    "type=tmpfs,dst=/DIR[,tmpfs-size=SIZE]"
)
_SELINUX = (
    "SELinux relabelling ('{option}') has no meaning here: the files are copied into a fresh "
    "volume the node labels itself; leave it out"
)
_PROPAGATION = (
    "mount propagation ('{option}') has no meaning here: the pod gets a copy of the files, not "
    "a mount of your machine's; leave it out"
)
_PROPAGATIONS = ("shared", "slave", "private", "rshared", "rslave", "rprivate")
# docker Desktop's consistency hints: no-ops on Linux docker too.
_CONSISTENCY = ("consistent", "cached", "delegated")


def _target(text: str) -> str:
    if not text:
        raise ValueProblem(f"the destination is empty; {_VOLUME_FORM}")
    if not text.startswith("/"):
        raise ValueProblem(
            f"the destination {text!r} must be an absolute path in the container, like /data"
        )
    target = normal_path(text)
    if target == "/":
        raise ValueProblem(
            "the destination cannot be / (the container's root); mount at a directory like /data"
        )
    return target


def is_local_path(source: str) -> bool:
    """docker's rule: a source with a `/`, or `.`/`..`/`~` at its start, is a path; any
    other word names a volume (here: a claim)."""
    return "/" in source or source in (".", "..", "~") or source.startswith(("./", "../", "~"))


def _claim_name(source: str) -> str:
    try:
        return validate_subdomain(source)
    except ValueProblem:
        raise ValueProblem(
            f"{source!r} is neither a path nor a claim name: a local path needs a '/' (like "
            f"./{source}), and a PersistentVolumeClaim name is lowercase letters, digits, '-' "
            "and '.'"
        ) from None


def _refused_option(option: str) -> ValueProblem | None:
    if option in ("z", "Z"):
        return ValueProblem(_SELINUX.format(option=option))
    if option in _PROPAGATIONS:
        return ValueProblem(_PROPAGATION.format(option=option))
    return None


def parse_volume(text: str) -> BindMount | VolumeMount:
    """`-v SRC:DST[:OPTIONS]`, OPTIONS a comma list of ro, rw, nocopy and docker's no-ops."""
    parts = text.split(":")
    if len(parts) == 1:
        raise ValueProblem(
            "an anonymous volume (DST alone) would be an empty directory that docker fills "
            "from the image, which Kubernetes cannot do; use --mount type=tmpfs,dst=DST for "
            f"scratch space, or {_VOLUME_FORM}"
        )
    if len(parts) > 3:
        raise ValueProblem(f"too many ':' in {text!r}; {_VOLUME_FORM}")
    source, target = parts[0], _target(parts[1])
    if not source:
        raise ValueProblem(f"the source before ':' is empty; {_VOLUME_FORM}")
    read_only = False
    for option in filter(None, (parts[2] if len(parts) == 3 else "").split(",")):
        if (refused := _refused_option(option)) is not None:
            raise refused
        if option in ("ro", "rw"):
            read_only = option == "ro"
        elif option == "nocopy" and not is_local_path(source):
            pass  # a claim is never filled from the image: nocopy is what happens anyway
        elif option not in _CONSISTENCY:
            raise ValueProblem(f"{option!r} is not a volume option; use ro or rw")
    if is_local_path(source):
        return BindMount(source, target, read_only)
    return VolumeMount(_claim_name(source), target, read_only)


# --mount keys: docker's names, and which type each belongs to.
_SOURCE_KEYS = ("source", "src")
_TARGET_KEYS = ("destination", "dst", "target")
_READONLY_KEYS = ("readonly", "ro")
_COMMON_KEYS = ("type", *_SOURCE_KEYS, *_TARGET_KEYS, *_READONLY_KEYS, "consistency")
_TYPE_KEYS = {
    "bind": (),
    "volume": ("volume-nocopy", "volume-subpath"),
    "tmpfs": ("tmpfs-size", "tmpfs-mode"),
}
_REFUSED_KEYS = {
    "bind-propagation": "mount propagation has no meaning here: the pod gets a copy of the "
    "files, not a mount of your machine's; leave it out",
    "bind-recursive": "submounts of your machine cannot reach the pod: the files are copied; "
    "leave it out",
    "bind-create-src": "squarepeg never creates SRC on your machine; create it first",
    "bind-nonrecursive": "submounts of your machine cannot reach the pod: the files are "
    "copied; leave it out",
    "volume-driver": "a claim's storage class chooses the driver; give the claim's name",
    "volume-opt": "a claim's storage class holds the driver's options; give the claim's name",
    "volume-label": "a claim is labelled where it is created, not where it is mounted; "
    "leave it out",
}
_TYPES_REFUSED = {
    "npipe": "named pipes exist on Windows docker hosts only",
    "image": "Kubernetes mounts images as volumes only behind a feature gate; use the image "
    "as the run's IMAGE, or copy from it in a config file's init container",
    "cluster": "docker's cluster volumes are Swarm's",
}


def _split_fields(text: str) -> list[str]:
    import csv  # docker reads --mount as one CSV record, quotes allowed

    try:
        rows = list(csv.reader([text]))
    except csv.Error as exc:
        raise ValueProblem(f"cannot read it as KEY=VALUE fields ({exc}); {_MOUNT_FORM}") from None
    return [field.strip() for field in rows[0]] if rows else []


def _bool_field(key: str, value: str | None) -> bool:
    if value is None:
        return True
    try:
        return parse_bool(value)
    except ValueProblem:
        raise ValueProblem(f"{key}={value} is not true or false; write {key} alone") from None


def parse_mount(text: str) -> Mount:
    """docker's `--mount KEY=VALUE,...` (type bind, volume or tmpfs; volume is docker's
    default type)."""
    given: dict[str, str | None] = {}
    for field in filter(None, _split_fields(text)):
        key, equals, value = field.partition("=")
        key = key.strip().lower()
        if key in given:
            raise ValueProblem(f"{key} is given twice; {_MOUNT_FORM}")
        given[key] = value if equals else None
    kind = (given.pop("type", None) or "volume").lower()
    if kind in _TYPES_REFUSED:
        raise ValueProblem(f"type={kind} cannot be used: {_TYPES_REFUSED[kind]}")
    if kind not in _TYPE_KEYS:
        raise ValueProblem(f"type={kind} is not a mount type; {_MOUNT_FORM}")
    for key in given:
        if key in _REFUSED_KEYS:
            raise ValueProblem(f"{key} cannot be used: {_REFUSED_KEYS[key]}")
        if key not in _COMMON_KEYS and key not in _TYPE_KEYS[kind]:
            raise ValueProblem(f"{key!r} is not a key of a {kind} mount; {_MOUNT_FORM}")
    source = next((given[k] for k in _SOURCE_KEYS if k in given), None)
    target_text = next((given[k] for k in _TARGET_KEYS if k in given), None)
    if target_text is None:
        raise ValueProblem(f"dst= is missing; {_MOUNT_FORM}")
    target = _target(target_text)
    read_only = any(_bool_field(k, given[k]) for k in _READONLY_KEYS if k in given)
    if kind == "tmpfs":
        if source:
            raise ValueProblem("a tmpfs mount has no source; give dst= and tmpfs-size= only")
        size_text = given.get("tmpfs-size")
        size = parse_size(size_text) if size_text else None
        ignored = (f"mode={given['tmpfs-mode']}",) if given.get("tmpfs-mode") else ()
        return Tmpfs(target, size, read_only, ignored)
    if not source:
        raise ValueProblem(f"src= is missing; {_MOUNT_FORM}")
    if kind == "bind":
        return BindMount(source, target, read_only)
    if is_local_path(source):
        raise ValueProblem(
            f"type=volume takes a claim name, and {source!r} is a path; use type=bind for a "
            "local path"
        )
    sub_path = given.get("volume-subpath") or None
    if sub_path is not None and (sub_path.startswith("/") or ".." in sub_path.split("/")):
        raise ValueProblem("volume-subpath is a relative path inside the claim, without '..'")
    return VolumeMount(_claim_name(source), target, read_only, sub_path)


# --- the sizes --------------------------------------------------------------------------------

DEFAULT_MAX_UPLOAD_BYTES = 1 << 30


def parse_upload_limit(text: str) -> int:
    """`max_upload_bytes`: a size in docker's form (`1g`, `512m`, bytes)."""
    return size_bytes(parse_size(text))


def human_bytes(count: int) -> str:
    """A byte count as people read it: 1.3 GiB, 512 MiB, 900 bytes."""
    for unit, power in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if count >= 1 << power:
            return f"{count / (1 << power):.1f} {unit}".replace(".0 ", " ")
    return f"{count} bytes"

