"""The images of the kubelet node, made on the machine: OCI image layouts, no registry needed.

Owns the bytes only (no processes): `busybox_image` packs a static busybox (Debian's
`busybox-static`) with a symlink per applet, `/etc/passwd`, `/etc/group` and a 1777 `/tmp`
into a one-layer image whose default command is `sh` (it stands in for `alpine` and
`busybox`); `python_image` puts a second layer on it with a Python interpreter copied from
the machine (Debian's `/usr/bin/python3.11`, the shared libraries `ldd` names for it and its
extension modules, its standard library without the test suite and the static library), so
that a command's `python3` runs as in Docker's Debian-based `python` image, whose `sh` it
also has; `pause_image` packs the sandbox's pause program. `squarepeg_layer` is the third
layer of the in-cluster tests' image (tests/e2e/test_in_cluster.py puts it on the python
image in the node's registry with `crane append`): a kubectl binary at
/usr/local/bin/kubectl and squarepeg's release zipapp at /app/squarepeg.pyz, run as
`python3 /app/squarepeg.pyz run ...`. `write_layout` writes an image
as an OCI image layout directory (what `crane push DIR REF` reads) and `layout_tar` as a tar
of one (what `ctr images import` reads). Layers and archives carry no timestamps, so the same
inputs give the same digests.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path

DIRECTORIES = ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "root", "proc", "sys",
               "dev", "var", "home")
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
GROUP = "root:x:0:\nnobody:x:65534:\n"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"


@dataclass(frozen=True)
class Image:
    """One image: its blobs by digest, and the manifest's digest and size."""

    blobs: dict[str, bytes]
    manifest_digest: str
    manifest_size: int


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def _add_directory(tar: tarfile.TarFile, name: str, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, mode
    tar.addfile(info)


def busybox_layer(busybox: bytes, applets: list[str]) -> bytes:
    """An uncompressed layer: /bin/busybox and `applets` (paths like `usr/bin/wc`) linked to it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in DIRECTORIES:
            _add_directory(tar, directory, 0o755)
        _add_directory(tar, "tmp", 0o1777)
        _add_file(tar, "bin/busybox", busybox, 0o755)
        for applet in sorted(set(applets) - {"bin/busybox"}):
            info = tarfile.TarInfo(applet)
            info.type, info.linkname = tarfile.SYMTYPE, "/bin/busybox"
            tar.addfile(info)
        _add_file(tar, "etc/passwd", PASSWD.encode(), 0o644)
        _add_file(tar, "etc/group", GROUP.encode(), 0o644)
    return buffer.getvalue()


def single_file_layer(name: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add_file(tar, name, data, 0o755)
    return buffer.getvalue()


def squarepeg_layer(kubectl: bytes, zipapp: bytes) -> bytes:
    """An uncompressed layer: `kubectl` at usr/local/bin/kubectl, `zipapp` (squarepeg's
    release build, its dependencies inside) at app/squarepeg.pyz."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("app", "usr", "usr/local", "usr/local/bin"):
            _add_directory(tar, directory, 0o755)
        _add_file(tar, "usr/local/bin/kubectl", kubectl, 0o755)
        _add_file(tar, "app/squarepeg.pyz", zipapp, 0o755)
    return buffer.getvalue()


def tree_layer(files: dict[str, Path], links: dict[str, str]) -> bytes:
    """An uncompressed layer of the machine's `files` (name in the layer: path on the
    machine; modes kept, times and owners not) and symbolic `links` (name: target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        directories = sorted({str(Path(name).parent) for name in [*files, *links]} - {"."})
        for directory in sorted({str(parent) for d in directories
                                 for parent in [Path(d), *Path(d).parents]} - {"."}):
            _add_directory(tar, directory, 0o755)
        for name in sorted(files):
            source = files[name]
            _add_file(tar, name, source.read_bytes(), source.stat().st_mode & 0o7777)
        for name in sorted(links):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, links[name]
            tar.addfile(info)
    return buffer.getvalue()


def image(layer: bytes | list[bytes], config: dict[str, object]) -> Image:
    """A linux/amd64 image of the layers (bottom first) and the given runtime config (Cmd,
    Entrypoint, Env)."""
    layers = layer if isinstance(layer, list) else [layer]
    # Level 1: the python layer is 30 MB and made at every start; size matters little here.
    compressed = [gzip.compress(one, compresslevel=1, mtime=0) for one in layers]
    config_blob = json.dumps({
        "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [_digest(one) for one in layers]},
    }, sort_keys=True).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": _digest(config_blob), "size": len(config_blob)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": _digest(one), "size": len(one)} for one in compressed],
    }, sort_keys=True).encode()
    blobs = {_digest(blob): blob for blob in (config_blob, *compressed, manifest)}
    return Image(blobs, _digest(manifest), len(manifest))


def busybox_image(busybox: bytes, applets: list[str]) -> Image:
    return image(busybox_layer(busybox, applets),
                 {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
                  "Cmd": ["/bin/sh"]})


PYTHON_SKIPPED = ("test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
                  "config-")


def python_files(interpreter: Path, stdlib: Path, libraries: list[Path],
                 ) -> tuple[dict[str, Path], dict[str, str]]:
    """The files and links of the python layer: `interpreter` as usr/bin/python3.X with
    python3 and python linked to it, `stdlib` (its directory, e.g. /usr/lib/python3.11,
    without PYTHON_SKIPPED), and `libraries` (the dynamic loader and the shared libraries,
    as `ldd` names them) at the paths they are found at, with the content they link to."""
    name = interpreter.name
    files: dict[str, Path] = {f"usr/bin/{name}": interpreter}
    links = {"usr/bin/python3": name, "usr/bin/python": name}
    for path in sorted(stdlib.rglob("*")):
        relative = path.relative_to(stdlib)
        if relative.parts[0].startswith(PYTHON_SKIPPED) or not path.is_file():
            continue
        files[str(stdlib.relative_to("/") / relative)] = path
    for library in libraries:
        files[str(library.relative_to("/"))] = library.resolve()
    return files, links


def python_image(busybox: bytes, applets: list[str], files: dict[str, Path],
                 links: dict[str, str]) -> Image:
    return image([busybox_layer(busybox, applets), tree_layer(files, links)],
                 {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                          "LANG=C.UTF-8"],
                  "Cmd": ["python3"]})


def pause_image(pause: bytes) -> Image:
    return image(single_file_layer("pause", pause), {"Entrypoint": ["/pause"]})


def _index(img: Image, reference: str | None) -> bytes:
    descriptor: dict[str, object] = {"mediaType": MANIFEST_TYPE, "digest": img.manifest_digest,
                                     "size": img.manifest_size}
    if reference is not None:
        descriptor["annotations"] = {"io.containerd.image.name": reference,
                                     "org.opencontainers.image.ref.name":
                                         reference.rsplit(":", 1)[1]}
    return json.dumps({"schemaVersion": 2, "manifests": [descriptor],
                       "mediaType": "application/vnd.oci.image.index.v1+json"}).encode()


def layout_files(img: Image, reference: str | None = None) -> dict[str, bytes]:
    """The files of an OCI image layout holding `img` (named `reference`, if given)."""
    files = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}', "index.json": _index(img, reference)}
    for digest, blob in img.blobs.items():
        files["blobs/sha256/" + digest.removeprefix("sha256:")] = blob
    return files


def write_layout(img: Image, directory: Path) -> None:
    for name, data in layout_files(img).items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def layout_tar(img: Image, reference: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in layout_files(img, reference).items():
            _add_file(tar, name, data, 0o644)
    return buffer.getvalue()
