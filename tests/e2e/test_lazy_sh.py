"""sh is imported only on paths that start a process: `run` imports it, while `--help`,
`--version`, `config view` and a `--dry-run` whose kubeconfig view is cached never do.

The start-up rule of the package's layers (CONTRIBUTING.md): such a dry run imports no sh, no
jsonpatch, not the door to the cluster (cluster/kubectl.py), nothing of a run's lifecycle
(run/) and not the terminal session. import-linter checks which module may import which;
only a process can tell what one invocation imports at start-up.

Python's own import log (PYTHONPROFILEIMPORTTIME, on stderr) of the installed command says
which modules one invocation imported."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Finished, Squarepeg

IMPORT_LOG = {"PYTHONPROFILEIMPORTTIME": "1"}
SH_IMPORTED = re.compile(r"^import time:.*\|\s*sh$", re.MULTILINE)
IMPORTED = re.compile(r"^import time:.*\|\s*(\S+)$", re.MULTILINE)
NOT_ON_THE_DRY_RUN_PATH = re.compile(
    r"sh|jsonpatch|kubectl_squarepeg\.cluster\.kubectl|kubectl_squarepeg\.run(\..*)?"
    r"|kubectl_squarepeg\.terminal\.session"
)


def imported_sh(result: Finished) -> bool:
    return SH_IMPORTED.search(result.stderr) is not None


def test_help_version_and_config_view_do_not_import_sh(squarepeg: Squarepeg) -> None:
    for args in (("--help",), ("--version",), ("run", "--help"), ("config", "view")):
        result = squarepeg(*args, env=IMPORT_LOG, namespaced=False)
        assert result.code == 0, result.stderr
        assert "import time:" in result.stderr  # the log is there to be read
        assert not imported_sh(result), args


def test_a_dry_run_with_a_cached_view_does_not_import_sh(
    squarepeg: Squarepeg, kubesim: Any, tmp_path: Path
) -> None:
    # A kubeconfig written long ago, as a user's is: its view may be cached (viewcache.py).
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copyfile(kubesim.kubeconfig, kubeconfig)
    os.utime(kubeconfig, (1_000_000_000, 1_000_000_000))
    env = {**IMPORT_LOG, "KUBECONFIG": str(kubeconfig)}
    first = squarepeg("run", "--dry-run", "alpine", env=env, namespaced=False)
    assert first.code == 0, first.stderr
    assert imported_sh(first)  # `kubectl config view` ran, and filled the cache
    cached = squarepeg("run", "--dry-run", "alpine", env=env, namespaced=False)
    assert cached.code == 0, cached.stderr
    assert b"image: alpine" in cached.stdout
    assert not imported_sh(cached)
    modules = set(IMPORTED.findall(cached.stderr))
    assert "kubectl_squarepeg.plan.manifest" in modules  # the log is the dry run's
    assert sorted(m for m in modules if NOT_ON_THE_DRY_RUN_PATH.fullmatch(m)) == []


def test_a_run_imports_sh(squarepeg: Squarepeg) -> None:
    result = squarepeg("run", "alpine", "true", env=IMPORT_LOG)
    assert result.code == 0, result.stderr
    assert imported_sh(result)
