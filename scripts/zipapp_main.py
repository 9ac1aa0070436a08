"""Entry point of the kubectl-squarepeg zipapp: scripts/build-release ships it as __main__.py.

Owns what happens before any of squarepeg is imported, with the standard library only and
in syntax that Pythons from 3.6 on can parse, so that a too-old python3 gets a message,
not a traceback:

1. The Python version check (3.10 or newer), exit 125 with what to do otherwise.
2. Speed. Python keeps no compiled bytecode for modules imported from a zip, so every run
   would compile click, PyYAML and squarepeg from source again: a dry run took 0.34 s that
   way against 0.14 s with bytecode. So the first run unpacks the archive into a cache
   directory named after the archive's sha256 ($XDG_CACHE_HOME/kubectl-squarepeg/, else
   ~/.cache/...) and compiles it there once per Python version; later runs import from
   there. A changed archive gets a new directory. When the cache cannot be written,
   everything runs from the zip itself, only slower.
3. Dispatch on the name it was started as: `kubectl_complete-squarepeg` (a link to the
   zipapp, which kubectl's plugin completion looks for on PATH) answers completion, any
   other name runs the plugin.
"""

import contextlib
import hashlib
import os
import shutil
import sys
import tempfile
import zipfile

MINIMUM_PYTHON = (3, 10)
COMPLETION_PREFIX = "kubectl_complete-"
READY_MARKER = ".complete"


def check_python_version():
    if sys.version_info[:2] >= MINIMUM_PYTHON:
        return
    needed = ".".join(map(str, MINIMUM_PYTHON))
    found = ".".join(map(str, sys.version_info[:2]))
    python = sys.executable or "python3"
    sys.stderr.write(
        f"squarepeg: error: kubectl-squarepeg needs Python {needed} or newer ({python} is "
        f"{found}); install a newer python3 and put it first on PATH\n"
    )
    sys.exit(125)


def cache_root():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kubectl-squarepeg")


def unpacked_copy(archive):
    """The directory holding the archive's files, unpacked once; None if it cannot be."""
    try:
        with open(archive, "rb") as stream:
            digest = hashlib.sha256(stream.read()).hexdigest()[:24]
        root = cache_root()
        target = os.path.join(root, digest)
        if os.path.isfile(os.path.join(target, READY_MARKER)):
            return target
        os.makedirs(root, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=digest + ".partial-", dir=root)
        try:
            with zipfile.ZipFile(archive) as contents:
                contents.extractall(staging)
            open(os.path.join(staging, READY_MARKER), "w").close()
            # A run started at the same time may have unpacked it first: then use that copy.
            with contextlib.suppress(OSError):
                os.rename(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if not os.path.isfile(os.path.join(target, READY_MARKER)):
            return None
        compile_once(target)
        return target
    except (OSError, zipfile.BadZipFile, RuntimeError):
        return None  # read-only or full disk, no home directory: run from the zip


def compile_once(directory):
    """Compile the unpacked sources once for this Python, so that it finds their bytecode
    even when it may not write any itself (PYTHONDONTWRITEBYTECODE)."""
    marker = os.path.join(directory, ".compiled-" + str(sys.implementation.cache_tag))
    if os.path.isfile(marker):
        return
    import compileall
    import py_compile

    compileall.compile_dir(
        directory,
        quiet=2,
        # Timestamps, not hashes, even under SOURCE_DATE_EPOCH: no source read per import.
        invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP,
    )
    open(marker, "w").close()


def main():
    check_python_version()
    archive = sys.path[0]
    unpacked = unpacked_copy(archive)
    if unpacked is not None:
        sys.path[0] = unpacked
    if os.path.basename(sys.argv[0]).startswith(COMPLETION_PREFIX):
        from kubectl_squarepeg.cli.app import complete_main as entry_point
    else:
        from kubectl_squarepeg.cli.app import main as entry_point
    entry_point()


main()
