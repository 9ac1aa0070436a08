"""The package as PyPI users get it: the wheel `pip wheel .` builds, installed by pip into a
clean venv and by pipx, each offline, and found by kubectl.

Built once per session from a snapshot of the tree (as tests/e2e/test_packaging.py's
release; the tree gets no build/ or egg-info), with pip's build isolation (setuptools from
PyPI or pip's cache). The runtime dependencies, and pip itself for pipx's shared libraries,
are downloaded once into a folder beside it (PyPI or pip's cache); from there on nothing is
fetched: the installs run with PIP_NO_INDEX and `--find-links` holding the wheel and its
dependencies, inside a network namespace of their own (`unshare --net`, root only; without
it PIP_NO_INDEX alone keeps pip off the network). Each user has its own HOME, PIPX_HOME and
an unreachable kubeconfig, and a PATH without the project's venv, so what runs is what was
installed.

- pip: a fresh venv gets a `kubectl-squarepeg` and `kubectl_complete-squarepeg` whose
  `--version` and `run --dry-run alpine true` work;
- pipx (the test extra): `pipx install` of the wheel puts both on PIPX_BIN_DIR, and they work;
- `kubectl plugin list` finds the plugin on either PATH, without a warning (kubectl warns
  about a plugin shadowed by another of the same name, or one that is not executable).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.test_packaging import (
    EXECUTABLE,
    HELPER,
    ROOT,
    VENV_BIN,
    assert_dry_run_pod,
    clean_env,
    kubectl,
    package_version,
    path_without_venv,
    snapshot,
)

SECONDS = 300.0  # a build with isolation installs setuptools; a loaded machine is slow
OFFLINE = ["unshare", "--net"] if os.geteuid() == 0 and shutil.which("unshare") else []

pytestmark = pytest.mark.timeout(900)


@dataclass(frozen=True)
class Wheelhouse:
    wheel: Path
    links: Path  # the wheel and every runtime dependency's


def run(
    argv: Sequence[str | Path], env: dict[str, str], cwd: Path, offline: bool = False
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(OFFLINE if offline else []), *map(str, argv)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=SECONDS,
    )


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Wheelhouse:
    base = tmp_path_factory.mktemp("wheel")
    source = snapshot(base / "source")
    shutil.copy2(ROOT / "README.md", source / "README.md")  # pyproject's readme
    links = base / "links"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    built = run([*pip, "wheel", "--no-deps", "-w", links, source], dict(os.environ), base)
    assert built.returncode == 0, built.stderr
    (wheel,) = links.glob("*.whl")
    assert wheel.name == f"kubectl_squarepeg-{package_version()}-py3-none-any.whl"
    # The dependencies, and pip for pipx's shared libraries (pipx upgrades them to its
    # minimum pip before its first install).
    fetched = run([*pip, "download", "-d", links, wheel, "pip"], dict(os.environ), base)
    assert fetched.returncode == 0, fetched.stderr
    return Wheelhouse(wheel, links)


def offline_env(home: Path, path: list[Path | str], links: Path) -> dict[str, str]:
    env = clean_env(home, path)
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links), PIP_CONFIG_FILE=os.devnull)
    return env


def assert_it_works(bin_dir: Path, env: dict[str, str], cwd: Path) -> None:
    """Both executables in `bin_dir`, the plugin runs, and kubectl lists it unwarned."""
    assert os.access(bin_dir / EXECUTABLE, os.X_OK) and os.access(bin_dir / HELPER, os.X_OK)
    assert shutil.which(EXECUTABLE, path=env["PATH"]) == str(bin_dir / EXECUTABLE)
    version = run([kubectl(), "squarepeg", "--version"], env, cwd)
    assert version.stdout.strip() == f"kubectl squarepeg {package_version()}", version.stderr
    assert_dry_run_pod(run([bin_dir / EXECUTABLE, "run", "--dry-run", "alpine", "true"], env, cwd))
    listed = run([kubectl(), "plugin", "list"], env, cwd)
    assert listed.returncode == 0, listed.stderr
    assert str(bin_dir / EXECUTABLE) in listed.stdout.splitlines()
    assert "warning" not in listed.stderr.lower(), listed.stderr


def test_the_wheel_installs_into_a_clean_venv_offline(
    wheelhouse: Wheelhouse, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    created = run([sys.executable, "-m", "venv", venv], dict(os.environ), tmp_path)
    assert created.returncode == 0, created.stderr
    env = offline_env(tmp_path / "home", [venv / "bin", *path_without_venv()], wheelhouse.links)
    installed = run(
        [venv / "bin" / "python", "-m", "pip", "install", wheelhouse.wheel], env, tmp_path, True
    )
    assert installed.returncode == 0, installed.stderr
    assert_it_works(venv / "bin", env, tmp_path)


def test_pipx_installs_the_wheel_offline(wheelhouse: Wheelhouse, tmp_path: Path) -> None:
    pipx = VENV_BIN / "pipx"
    assert pipx.is_file(), "pipx comes with the test extra: pip install -e '.[test]'"
    bin_dir = tmp_path / "pipx-bin"
    env = offline_env(tmp_path / "home", [bin_dir, *path_without_venv()], wheelhouse.links)
    env.update(
        PIPX_HOME=str(tmp_path / "pipx-home"),
        PIPX_BIN_DIR=str(bin_dir),
        PIPX_MAN_DIR=str(tmp_path / "pipx-man"),
    )
    installed = run(
        [pipx, "install", "--python", sys.executable, wheelhouse.wheel], env, tmp_path, True
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert_it_works(bin_dir, env, tmp_path)
