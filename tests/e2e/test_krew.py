"""The release through the real krew: what a user's `kubectl krew install` and `kubectl krew
upgrade` do with what scripts/build-release makes, and the manifest krew-release-bot would
publish.

krew, its `validate-krew-manifest` (sigs.k8s.io/krew, pinned) and `render-krew-template`
(Go's text/template with the bot's two functions) are built from the Go module proxy once
per machine (tests/krew/build.py; `scripts/krew`). Without Go the module is skipped, and
fails under SQUAREPEG_LOCALKUBE=required (CI), which must not pass without it.

Two releases are built from one snapshot of the tree: the tree's version (v0.1.0) and the
next patch (v0.1.1, `build-release --version`). Everything runs offline and leaves nothing
behind: every KREW_ROOT, HOME and cache is in the test's temporary directory, and
KREW_DEFAULT_INDEX_URI points at a local git repository (krew never reaches GitHub).

- validate-krew-manifest passes on the committed and the built manifest (its structural
  checks; its install step downloads each platform's URI, so the test installs each
  platform from the local archive instead, with KREW_OS/KREW_ARCH, and finds the LICENSE);
- `krew install --manifest --archive` links the plugin into $KREW_ROOT/bin, and `kubectl
  squarepeg` (krew's link; the venv's console scripts are not on PATH) prints the version,
  runs a container on the session's cluster (output, exit code) and a dry run, `kubectl
  plugin list` shows it without a warning, and `krew uninstall` leaves nothing;
- `krew upgrade` from v0.1.0 to v0.1.1, the way users get it (a plugin index, here a local
  git repository whose manifests point at the archives on a loopback HTTP server; krew
  0.4.3 upgrades only plugins from an index), keeps the user's config file and trusted
  projects, and the old release's unpacked copy in the cache does not shadow the new one;
- `.krew.yaml` rendered for a tag as the bot renders it is the manifest build-release wrote
  for that tag; pyproject's version, `--version`, the manifest and the archive's name agree;
  the release workflow passes actionlint (built with krew).
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_packaging import (
    EXECUTABLE,
    KREW_KNOWN,
    KREW_PLATFORMS,
    PLUGIN,
    ROOT,
    VENV_BIN,
    build,
    build_epoch,
    clean_env,
    package_version,
    path_without_venv,
    snapshot,
)
from tests.e2e.test_wheel import run
from tests.krew import build as krew_build

GITHUB_RELEASES = "https://github.com/squarepeg-dev/kubectl-squarepeg/releases/download/"

pytestmark = pytest.mark.timeout(900)  # a first run builds krew (6 min with empty Go caches)


@pytest.fixture(scope="session")
def krew_bin() -> Path:
    """The folder of krew, validate-krew-manifest and render-krew-template, built if needed."""
    if krew_build.is_built():
        return krew_build.bin_dir()
    if shutil.which("go") is None:
        message = "the krew tests need Go (1.22 or newer) on PATH to build krew"
        if os.environ.get("SQUAREPEG_LOCALKUBE") == "required":
            pytest.fail(f"{message} (SQUAREPEG_LOCALKUBE=required)")
        pytest.skip(message)
    try:
        krew_build.ensure_built(lambda line: print(f"krew: {line}", file=sys.stderr))
    except krew_build.BuildError as exc:
        pytest.fail(f"building krew failed: {exc}")
    return krew_build.bin_dir()


@dataclass(frozen=True)
class Built:
    """One build-release run: the version it says, and its files."""

    version: str
    out: Path

    @property
    def tag(self) -> str:
        return f"v{self.version}"

    @property
    def archive(self) -> Path:
        return self.out / f"{EXECUTABLE}-{self.tag}.tar.gz"

    @property
    def manifest(self) -> Path:
        return self.out / "plugin.yaml"


def next_patch(version: str) -> str:
    major, minor, patch = version.split(".")
    return f"{major}.{minor}.{int(patch) + 1}"


def build_release(source: Path, out: Path, epoch: str, version: str | None = None) -> Built:
    manifest = out.parent / f"{out.name}-source-plugin.yaml"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "plugin.yaml", manifest)
    built = Built(version or package_version(), out)
    assert build(source, out, manifest, epoch, version=version) == built.archive
    assert built.archive.is_file() and built.manifest.is_file()
    return built


@pytest.fixture(scope="session")
def releases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, Built]:
    """This tree's release and the next patch version of the same tree."""
    base = tmp_path_factory.mktemp("krew-releases")
    source = snapshot(base / "source")
    epoch = build_epoch()
    current = build_release(source, base / "current", epoch)
    upcoming = build_release(source, base / "next", epoch, next_patch(current.version))
    return current, upcoming


@dataclass
class KrewUser:
    """A user with krew: their HOME, KREW_ROOT, the cluster's kubeconfig, and a PATH of
    krew's bin folder and this PATH without the project's venv."""

    root: Path
    env: dict[str, str]
    cwd: Path
    krew: Path

    def krew_do(self, *args: str | Path, **extra: str) -> subprocess.CompletedProcess[str]:
        result = run([self.krew, *args], {**self.env, **extra}, self.cwd)
        assert result.returncode == 0, f"krew {args[0]} failed:\n{result.stderr}"
        return result

    def kubectl(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run(["kubectl", *args], self.env, self.cwd)

    def install(self, built: Built) -> None:
        self.krew_do("install", f"--manifest={built.manifest}", f"--archive={built.archive}")

    @property
    def link(self) -> Path:
        return self.root / "bin" / EXECUTABLE

    def files(self) -> list[str]:
        return sorted(
            str(p.relative_to(self.root))
            for p in self.root.rglob("*")
            if not p.is_dir() or p.is_symlink()
        )


def krew_user(
    base: Path, krew_bin: Path, cluster: Any | None = None, index: Path | None = None
) -> KrewUser:
    """A user whose krew has its default plugin index (krew uninstall and upgrade need
    one): `index`, a git repository, else an empty one of its own (never krew-index on
    GitHub)."""
    root = base / "krew-root"
    root.mkdir(parents=True)
    if index is None:
        index = plugin_index(base / "index")
    env = clean_env(base / "home", [root / "bin", *path_without_venv()])
    env.update(
        KREW_ROOT=str(root),
        KREW_NO_UPGRADE_CHECK="1",
        KREW_DEFAULT_INDEX_URI=str(index),  # what krew clones as "default"
    )
    if cluster is not None:
        env["KUBECONFIG"] = cluster.env["KUBECONFIG"]
        env["KUBECACHEDIR"] = cluster.env["KUBECACHEDIR"]
    cwd = base / "home" / "work"
    cwd.mkdir()
    user = KrewUser(root, env, cwd, krew_bin / krew_build.KREW)
    user.krew_do("update")
    return user


def plugin_index(index: Path) -> Path:
    """A krew plugin index: a git repository with a plugins/ folder, empty for now."""
    (index / "plugins").mkdir(parents=True)
    (index / "plugins" / ".keep").write_text("", "utf-8")
    git("init", "-q", "-b", "main", cwd=index)
    git("add", "-A", cwd=index)
    git("commit", "-q", "-m", "an empty index", cwd=index)
    return index


# --- the manifest: krew's validation, every platform installed, the bot's rendering --------


def validate(krew_bin: Path, manifest: Path, tmp_path: Path) -> None:
    named = tmp_path / "validate" / f"{PLUGIN}.yaml"  # the file's name must be the plugin's
    named.parent.mkdir(exist_ok=True)
    shutil.copyfile(manifest, named)
    result = run(
        [krew_bin / krew_build.VALIDATE, "-manifest", named, "-skip-install"],
        {"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        tmp_path,
    )
    assert result.returncode == 0, f"validate-krew-manifest {manifest}:\n{result.stderr}"
    assert "structural validation OK" in result.stderr
    assert "no overlapping spec.platform[].selector" in result.stderr


def test_validate_krew_manifest_passes(
    krew_bin: Path, releases: tuple[Built, Built], tmp_path: Path
) -> None:
    validate(krew_bin, ROOT / "plugin.yaml", tmp_path)
    for built in releases:
        validate(krew_bin, built.manifest, tmp_path)


@pytest.mark.parametrize(("os_", "arch"), KREW_KNOWN, ids=[f"{o}-{a}" for o, a in KREW_KNOWN])
def test_krew_installs_the_served_platforms_and_refuses_the_others(
    krew_bin: Path, releases: tuple[Built, Built], tmp_path: Path, os_: str, arch: str
) -> None:
    # validate-krew-manifest's install step, offline: each platform from the local archive.
    user = krew_user(tmp_path, krew_bin)
    built = releases[0]
    result = run(
        [user.krew, "install", f"--manifest={built.manifest}", f"--archive={built.archive}"],
        {**user.env, "KREW_OS": os_, "KREW_ARCH": arch},
        user.cwd,
    )
    if (os_, arch) not in KREW_PLATFORMS:
        assert result.returncode != 0
        assert "does not offer installation for this platform" in result.stderr
        return
    assert result.returncode == 0, result.stderr
    store = user.root / "store" / PLUGIN / built.tag
    assert sorted(p.name for p in store.iterdir()) == ["LICENSE", EXECUTABLE]
    assert user.link.resolve() == (store / EXECUTABLE).resolve()


def render_krew_template(krew_bin: Path, tag: str, assets: Path) -> str:
    result = run(
        [
            krew_bin / krew_build.RENDER,
            "-template",
            ROOT / ".krew.yaml",
            "-tag",
            tag,
            "-assets",
            assets,
        ],
        {"PATH": os.environ["PATH"]},
        ROOT,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_bots_template_renders_to_the_built_manifest(
    krew_bin: Path, releases: tuple[Built, Built], tmp_path: Path
) -> None:
    for built in releases:
        rendered = render_krew_template(krew_bin, built.tag, built.out)
        assert yaml.safe_load(rendered) == yaml.safe_load(built.manifest.read_text("utf-8"))
        # and the rendered text is one krew accepts as it stands (the bot's sha256 unquoted)
        (tmp_path / "rendered.yaml").write_text(rendered, "utf-8")
        validate(krew_bin, tmp_path / "rendered.yaml", tmp_path)


def test_the_release_workflow_passes_actionlint(krew_bin: Path, tmp_path: Path) -> None:
    # Its syntax, expressions, job graph and the inputs of the actions it uses; the shell
    # scripts too where shellcheck is installed.
    workflow = ROOT / ".github" / "workflows" / "release.yml"
    result = run([krew_bin / krew_build.ACTIONLINT, "-no-color", workflow], dict(os.environ), ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_version_is_said_alike_everywhere(releases: tuple[Built, Built]) -> None:
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    declared = re.search(r'^version = "([^"]+)"', pyproject, re.MULTILINE)
    assert declared and declared[1] == package_version()
    for built in releases:
        manifest = yaml.safe_load(built.manifest.read_text("utf-8"))
        assert manifest["spec"]["version"] == built.tag
        uris = {p["uri"] for p in manifest["spec"]["platforms"]}
        assert uris == {f"{GITHUB_RELEASES}{built.tag}/{built.archive.name}"}
        assert built.archive.name == f"{EXECUTABLE}-{built.tag}.tar.gz"
        zipapp = built.out / EXECUTABLE
        said = run([sys.executable, zipapp, "--version"], dict(os.environ), built.out)
        assert said.stdout.strip() == f"kubectl squarepeg {built.version}", said.stderr
    assert releases[0].version == declared[1]


def test_a_version_bump_is_made_in_pyproject_and_the_package_only(tmp_path: Path) -> None:
    source = snapshot(tmp_path / "source")
    bumped = next_patch(package_version())
    for name, pattern in (
        ("pyproject.toml", r'^version = "[^"]+"'),
        ("kubectl_squarepeg/__init__.py", r'^__version__ = "[^"]+"'),
    ):
        path = source / name
        text = path.read_text("utf-8")
        line = re.search(pattern, text, re.MULTILINE)
        assert line
        path.write_text(text.replace(line[0], re.sub(r'"[^"]+"', f'"{bumped}"', line[0])))
    manifest = source / "plugin.yaml"  # the tree's own, as a release build rewrites it
    build(source, tmp_path / "out", manifest, build_epoch())  # no --version
    archive = tmp_path / "out" / f"{EXECUTABLE}-v{bumped}.tar.gz"
    assert archive.is_file()
    written = yaml.safe_load(manifest.read_text("utf-8"))
    assert written["spec"]["version"] == f"v{bumped}"
    assert {p["uri"] for p in written["spec"]["platforms"]} == {
        f"{GITHUB_RELEASES}v{bumped}/{archive.name}"
    }


# --- installed, run, listed and uninstalled through krew -----------------------------------


@pytest.fixture
def installed(
    krew_bin: Path, releases: tuple[Built, Built], kubesim: Any, tmp_path: Path
) -> KrewUser:
    user = krew_user(tmp_path, krew_bin, kubesim)
    user.install(releases[0])
    return user


def test_kubectl_runs_the_plugin_krew_linked(
    installed: KrewUser, releases: tuple[Built, Built], namespace: str
) -> None:
    path = installed.env["PATH"]
    assert shutil.which(EXECUTABLE, path=path) == str(installed.link)
    assert str(VENV_BIN) not in path.split(os.pathsep)
    assert shutil.which("kubectl_complete-squarepeg", path=path) is None  # no venv script

    version = installed.kubectl(PLUGIN, "--version")
    assert version.stdout.strip() == f"kubectl squarepeg {releases[0].version}", version.stderr

    said = installed.kubectl(PLUGIN, "run", "-q", "-n", namespace, "alpine", "echo", "hi")
    assert (said.returncode, said.stdout, said.stderr) == (0, "hi\n", "")
    failed = installed.kubectl(PLUGIN, "run", "-q", "-n", namespace, "alpine", "sh", "-c",
                               "echo bye; exit 3")
    assert (failed.returncode, failed.stdout) == (3, "bye\n"), failed.stderr

    dry = installed.kubectl(PLUGIN, "run", "--dry-run", "-n", namespace, "alpine", "true")
    assert dry.returncode == 0, dry.stderr
    pod = yaml.safe_load(dry.stdout)
    assert (pod["kind"], pod["spec"]["containers"][0]["args"]) == ("Pod", ["true"])


def test_kubectl_plugin_list_finds_it_without_a_warning(installed: KrewUser) -> None:
    listed = installed.kubectl("plugin", "list")
    assert listed.returncode == 0, listed.stderr
    assert str(installed.link) in listed.stdout.splitlines()
    assert "warning" not in listed.stderr.lower(), listed.stderr


def test_krew_uninstall_leaves_nothing_behind(
    krew_bin: Path, releases: tuple[Built, Built], tmp_path: Path
) -> None:
    user = krew_user(tmp_path, krew_bin)
    before = user.files()  # krew's own: its index
    assert before and all(name.startswith("index/") for name in before)
    user.install(releases[0])
    assert len(user.files()) > len(before)  # the receipt, the store's files and the link
    user.krew_do("uninstall", PLUGIN)
    assert user.files() == before


# --- krew upgrade, from an index as users get it -------------------------------------------


@pytest.fixture
def served(releases: tuple[Built, Built]) -> Iterator[str]:
    """Both releases' archives over HTTP on the loopback address: `{url}/vX/archive`."""
    root = releases[0].out.parent / "served"
    if not root.exists():
        for built in releases:
            (root / built.tag).mkdir(parents=True)
            shutil.copyfile(built.archive, root / built.tag / built.archive.name)
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def git(*args: str | Path, cwd: Path) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(cwd),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    result = run(["git", *args], env, cwd)
    assert result.returncode == 0, result.stderr


def publish(index: Path, built: Built, url: str) -> None:
    """Put `built`'s manifest into the index repository, its URIs on the local server."""
    text = built.manifest.read_text("utf-8").replace(GITHUB_RELEASES, url)
    (index / "plugins" / f"{PLUGIN}.yaml").write_text(text, "utf-8")
    git("add", "-A", cwd=index)
    git("commit", "-q", "-m", built.tag, cwd=index)


def test_krew_upgrade_keeps_the_users_records_and_runs_the_new_release(
    krew_bin: Path, releases: tuple[Built, Built], served: str, tmp_path: Path
) -> None:
    old, new = releases
    index = plugin_index(tmp_path / "index")
    publish(index, old, served)
    user = krew_user(tmp_path / "user", krew_bin, index=index)
    user.krew_do("install", PLUGIN)
    assert (user.root / "receipts" / f"{PLUGIN}.yaml").is_file()

    # The user's records: a config file, and a project file they trusted.
    config_dir = Path(user.env["XDG_CONFIG_HOME"]) / "squarepeg"
    config_dir.mkdir(parents=True)
    (config_dir / "config.yaml").write_text("namespace: from-user-config\n", "utf-8")
    project = user.cwd / ".squarepeg.yaml"
    project.write_text("env:\n  FROM_PROJECT: '1'\n", "utf-8")
    trusted = user.kubectl(PLUGIN, "config", "trust", str(project))
    assert trusted.returncode == 0, trusted.stderr
    records = {p: p.read_bytes() for p in sorted(config_dir.iterdir())}
    assert [p.name for p in records] == ["config.yaml", "trusted.json"]

    before = user.kubectl(PLUGIN, "--version")  # unpacks the old release into the cache
    assert before.stdout.strip() == f"kubectl squarepeg {old.version}", before.stderr
    cache = Path(user.env["XDG_CACHE_HOME"]) / "kubectl-squarepeg"
    (old_unpacked,) = cache.iterdir()

    publish(index, new, served)
    upgraded = user.krew_do("upgrade", PLUGIN)
    assert f"Upgraded plugin: {PLUGIN}" in upgraded.stderr
    assert [p.name for p in (user.root / "store" / PLUGIN).iterdir()] == [new.tag]

    after = user.kubectl(PLUGIN, "--version")
    assert after.stdout.strip() == f"kubectl squarepeg {new.version}", after.stderr
    assert {p: p.read_bytes() for p in sorted(config_dir.iterdir())} == records
    dry = user.kubectl(PLUGIN, "run", "--dry-run", "alpine", "true")
    assert dry.returncode == 0, dry.stderr
    pod = yaml.safe_load(dry.stdout)
    assert pod["metadata"]["namespace"] == "from-user-config"
    assert {"name": "FROM_PROJECT", "value": "1"} in pod["spec"]["containers"][0]["env"]
    # The old release's unpacked copy is still there, beside the new one, and unused.
    unpacked = sorted(cache.iterdir())
    assert len(unpacked) == 2 and old_unpacked in unpacked
    (new_unpacked,) = set(unpacked) - {old_unpacked}
    init = new_unpacked / "kubectl_squarepeg" / "__init__.py"
    assert f'__version__ = "{new.version}"' in init.read_text("utf-8")
