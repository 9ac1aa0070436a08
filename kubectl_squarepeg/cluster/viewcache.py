"""Remembers which context and namespace `kubectl config view --minify` named, per state of
the kubeconfig files, so that a run need not start that kubectl again while they are
unchanged.

Owns the cache key (the --context and --kubeconfig given, $KUBECONFIG, and the path, size,
modification time and inode of every file kubectl would read), the one small JSON file the
answers live in ($XDG_CACHE_HOME/squarepeg/kubeconfig-views.json), and when not to trust it:
a kubeconfig changed in the last few seconds is never cached, because a second change
within the same timestamp tick would go unseen (git's "racy" rule). Only the context name
and namespace are kept, never credentials. Every failure to read or write the cache is
ignored: it can only make a run slower, never wrong or failed.

The same file remembers the version of a kubectl binary (capability.py), keyed on its path,
size, modification time and inode, so that replacing or upgrading kubectl is a new key; the
racy rule applies to the binary as to a kubeconfig.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping

# Paths are strings (os.path), not pathlib: a dry run whose view is cached need not
# import pathlib for it.
PathLike = str | os.PathLike[str]

FILE_NAME = "kubeconfig-views.json"
MAX_ENTRIES = 16
RACY_SECONDS = 3.0


def kubeconfig_files(kubeconfig: str | None, environ: Mapping[str, str]) -> list[str]:
    """The files kubectl reads: --kubeconfig, else $KUBECONFIG's list, else ~/.kube/config."""
    if kubeconfig:
        return [os.path.abspath(kubeconfig)]
    listed = [p for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return [os.path.abspath(p) for p in listed]
    home = environ.get("HOME") or os.path.expanduser("~")
    return [os.path.join(home, ".kube", "config")]


def key_for(
    context: str | None,
    kubeconfig: str | None,
    environ: Mapping[str, str],
    *,
    now: float,
) -> str | None:
    """The cache key for this state of the kubeconfig; None when it must not be cached."""
    files: list[object] = []
    for path in kubeconfig_files(kubeconfig, environ):
        try:
            found = os.stat(path)
        except OSError:
            files.append([path, None])  # kubectl skips missing files; one appearing is a change
            continue
        if now - found.st_mtime < RACY_SECONDS:
            return None
        files.append([path, found.st_size, found.st_mtime_ns, found.st_ino, found.st_dev])
    return json.dumps([context, kubeconfig, environ.get("KUBECONFIG"), files])


def cache_file(environ: Mapping[str, str]) -> str:
    base = environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "squarepeg", FILE_NAME)


def _entries(path: PathLike) -> dict[str, list[str | None]]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def lookup(key: str, path: PathLike) -> tuple[str, str | None] | None:
    """(context name, namespace) remembered for `key`, if any."""
    entry = _entries(path).get(key)
    if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
        return None
    namespace = entry[1] if isinstance(entry[1], str) else None
    return entry[0], namespace


def store(key: str, context: str, namespace: str | None, path: PathLike) -> None:
    """Remember an answer (the newest MAX_ENTRIES keys are kept); errors are ignored."""
    entries = _entries(path)
    entries.pop(key, None)
    entries[key] = [context, namespace]
    kept = dict(list(entries.items())[-MAX_ENTRIES:])
    path = os.fspath(path)
    folder, name = os.path.split(path)
    partial = os.path.join(folder, f".{name}.{os.getpid()}")
    try:
        os.makedirs(folder, exist_ok=True)
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(kept, handle)
        os.replace(partial, path)  # readers see the old file or the new one, never half
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)


def binary_key(path: str, *, now: float) -> str | None:
    """The cache key for what a binary (kubectl) says of itself; None when it must not be
    cached (missing, or changed within RACY_SECONDS)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    if now - found.st_mtime < RACY_SECONDS:
        return None
    return json.dumps(["binary", path, found.st_size, found.st_mtime_ns, found.st_ino,
                       found.st_dev])


def lookup_text(key: str, path: PathLike) -> str | None:
    """A text remembered under `key` by `store_text`, if any."""
    found = lookup(key, path)
    return found[0] if found is not None else None


def store_text(key: str, text: str, path: PathLike) -> None:
    """Remember one text under `key` beside the views (same file, same limit)."""
    store(key, text, None, path)
