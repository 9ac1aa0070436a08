"""The release as a user gets it: the krew archive, the zipapp in it, and shell completion.

scripts/build-release runs once per session, from a snapshot of the files it reads, into a
temporary directory (a copy of plugin.yaml gets the sha256; the tree's dist/ and plugin.yaml
are not touched; downloaded wheels are kept in build/release-cache/). From that:

- plugin.yaml is checked against krew's rules (krew's validation and validate-krew-manifest:
  name, semver with a leading `v`, sha256, selectors, line lengths, files in the archive);
- the archive is installed the way `kubectl krew install` lays a plugin out
  ($KREW_ROOT/store/squarepeg/vX/ and a relative $KREW_ROOT/bin/kubectl-squarepeg link), and
  the real kubectl finds and runs it, with the project's venv off PATH;
- the zipapp runs on a bare `venv --without-pip` Python that has none of the dependencies;
- a second build, in another time zone and umask, gives the same bytes;
- completion works through kubectl's plugin completion (`kubectl __complete`, the hook its
  shell scripts call), through bash itself, and through the printed bash/fish/zsh scripts.

No cluster is needed: the kubeconfig points at https://127.0.0.1:1, where nothing listens,
so kubectl's own start-up check fails at once and a --dry-run needs nothing else.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
RELEASE_INPUTS = (  # what scripts/build-release reads from the tree
    "kubectl_squarepeg",
    "pyproject.toml",
    "LICENSE",
    "plugin.yaml",
    "scripts/build-release",
    "scripts/release-requirements.txt",
    "scripts/zipapp_main.py",
)
WHEEL_CACHE = ROOT / "build" / "release-cache"
VENV_BIN = Path(sys.executable).parent
PLUGIN = "squarepeg"
EXECUTABLE = "kubectl-squarepeg"
HELPER = "kubectl_complete-squarepeg"
DEPENDENCIES = ("click", "yaml", "jsonpatch", "jsonpointer", "sh")
KREW_PLATFORMS = {(os_, arch) for os_ in ("linux", "darwin") for arch in ("amd64", "arm64")}
# Every platform krew knows (validate-krew-manifest's list): the selectors must pick exactly
# KREW_PLATFORMS among them.
KREW_KNOWN = [
    (os_, arch)
    for os_, arches in (
        ("linux", ("386", "amd64", "arm", "arm64")),
        ("darwin", ("386", "amd64", "arm64")),
        ("windows", ("386", "amd64", "arm64")),
    )
    for arch in arches
]
SEMVER_WITH_V = re.compile(
    r"v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?"
)
SECONDS = 120.0  # any one process here; a build downloads from PyPI the first time

UNREACHABLE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: nobody
  user: {token: not-a-token}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody, namespace: packaging}
current-context: nowhere
"""


def package_version() -> str:
    text = (ROOT / "kubectl_squarepeg" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    assert found, "kubectl_squarepeg/__init__.py has no __version__"
    return found[1]


@dataclass(frozen=True)
class Release:
    """What one build-release run made."""

    out: Path
    archive: Path
    zipapp: Path
    manifest_file: Path
    manifest: dict[str, Any]
    version: str
    epoch: str
    source: Path  # the snapshot of the tree it was built from

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.archive.read_bytes()).hexdigest()


def build_epoch() -> str:
    """One SOURCE_DATE_EPOCH for every build of the session: the last commit's time when the
    session started, so a commit landing between two builds does not change the bytes."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return os.environ["SOURCE_DATE_EPOCH"]
    result = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%ct"],
        capture_output=True,
        text=True,
        timeout=SECONDS,
        check=True,
    )
    return result.stdout.strip()


def snapshot(destination: Path) -> Path:
    """A copy of what the build reads, so that every build of the session sees the same
    sources while others keep editing the tree (and so that the build is shown to need
    nothing else of it, not even .git, given SOURCE_DATE_EPOCH)."""
    for name in RELEASE_INPUTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, destination / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def build(
    source: Path,
    out: Path,
    manifest: Path,
    epoch: str,
    timezone: str | None = None,
    umask: int = -1,
    version: str | None = None,
) -> Path:
    """Run SOURCE's scripts/build-release into OUT (as `version`, with --version); the
    archive's path."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch}
    if timezone is not None:
        env["TZ"] = timezone
    script = source / "scripts" / "build-release"
    result = subprocess.run(
        [
            sys.executable,
            str(script),
            "--out",
            str(out),
            "--manifest",
            str(manifest),
            "--cache",
            str(WHEEL_CACHE),
            *(["--version", version] if version else []),
        ],
        capture_output=True,
        text=True,
        timeout=SECONDS,
        env=env,
        cwd=source,
        umask=umask,
    )
    assert result.returncode == 0, f"build-release failed:\n{result.stderr}"
    return out / f"{EXECUTABLE}-v{version or package_version()}.tar.gz"


@pytest.fixture(scope="session")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    base = tmp_path_factory.mktemp("release")
    source = snapshot(base / "source")
    manifest_file = base / "plugin.yaml"
    shutil.copyfile(source / "plugin.yaml", manifest_file)
    epoch = build_epoch()
    archive = build(source, base / "out", manifest_file, epoch)
    return Release(
        out=base / "out",
        archive=archive,
        zipapp=base / "out" / EXECUTABLE,
        manifest_file=manifest_file,
        manifest=yaml.safe_load(manifest_file.read_text(encoding="utf-8")),
        version=package_version(),
        epoch=epoch,
        source=source,
    )


def clean_env(home: Path, path: list[Path | str]) -> dict[str, str]:
    """A user's environment with nothing of this machine's or the developer's config: its
    own home, XDG directories, an unreachable kubeconfig, and exactly PATH."""
    home.mkdir(parents=True, exist_ok=True)
    kubeconfig = home / "kubeconfig"
    kubeconfig.write_text(UNREACHABLE_KUBECONFIG, encoding="utf-8")
    keep = ("LANG", "LC_ALL", "TZ", "PYENV_ROOT", "PYENV_VERSION", "SYSTEMROOT")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
        KUBECONFIG=str(kubeconfig),
        KUBECACHEDIR=str(home / "kube-cache"),
        USER="tester",
        PATH=os.pathsep.join(str(p) for p in path),
    )
    return env


def path_without_venv() -> list[str]:
    """This PATH minus the project's venv, so nothing of the editable install is found."""
    venv = VENV_BIN.resolve()
    return [
        entry
        for entry in os.environ.get("PATH", "").split(os.pathsep)
        if entry and Path(entry).resolve() != venv
    ]


def run(
    argv: list[str], env: Mapping[str, str], cwd: Path, input_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        input=input_text,
        timeout=SECONDS,
    )


def kubectl() -> str:
    found = shutil.which("kubectl")
    assert found, "these tests need kubectl on PATH"
    return found


def assert_dry_run_pod(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr
    pod = yaml.safe_load(result.stdout)
    assert pod["kind"] == "Pod"
    (container,) = pod["spec"]["containers"]
    assert container["image"] == "alpine"
    assert container["args"] == ["true"]


# --- plugin.yaml against krew's rules ------------------------------------------------------


def check_krew_manifest(manifest: dict[str, Any], version: str) -> list[dict[str, Any]]:
    """krew's structural rules (index/validation) and validate-krew-manifest's; the
    platforms, for the checks that need the archive."""
    assert manifest["apiVersion"] == "krew.googlecontainertools.github.com/v1alpha2"
    assert manifest["kind"] == "Plugin"
    assert manifest["metadata"]["name"] == PLUGIN
    assert re.fullmatch(r"[\w-]+", manifest["metadata"]["name"])
    spec = manifest["spec"]
    assert SEMVER_WITH_V.fullmatch(spec["version"]), spec["version"]
    assert spec["version"] == f"v{version}", "plugin.yaml's version is not pyproject's"
    assert spec["homepage"].startswith("https://")
    short = spec["shortDescription"]
    assert short and "\n" not in short and len(short) <= 70 and len(short.split()) <= 12
    for field in ("description", "caveats"):
        assert all(len(line) <= 80 for line in spec[field].splitlines()), field
    # krew's guide: the description says what the plugin does, it is not its --help.
    description = spec["description"]
    assert not re.search(r"^\s*-{1,2}[a-z]", description, re.MULTILINE), "a line per flag"
    assert len(set(re.findall(r"--[a-z][a-z-]*", description))) < 3, "description lists flags"
    assert "python3" in spec["caveats"] and "kubectl" in spec["caveats"]
    platforms: list[dict[str, Any]] = spec["platforms"]
    selected = []
    for platform in platforms:
        assert platform["uri"].startswith("https://")
        assert platform["uri"].endswith(f"/v{version}/{EXECUTABLE}-v{version}.tar.gz")
        assert re.fullmatch(r"[a-f0-9]{64}", platform["sha256"]), "sha256 must be lowercase hex"
        assert platform["bin"] == EXECUTABLE
        assert platform["files"], "`files` must be unspecified or non-empty"
        for operation in platform["files"]:
            assert operation["from"] and operation["to"]
            assert os.path.normpath(operation["to"]) == operation["to"], "`to` is not clean"
        selected += [(o, a) for o, a in KREW_KNOWN if selects(platform["selector"], o, a)]
    assert len(selected) == len(set(selected)), f"overlapping selectors: {selected}"
    assert set(selected) == KREW_PLATFORMS
    return platforms


def selects(selector: dict[str, Any], os_: str, arch: str) -> bool:
    """Whether a krew platform selector (a label selector on os and arch only: matchLabels,
    matchExpressions with In or NotIn) picks this os and arch."""
    labels = {"os": os_, "arch": arch}
    assert selector and set(selector) <= {"matchLabels", "matchExpressions"}
    for key, value in selector.get("matchLabels", {}).items():
        assert key in labels, "selectors use os and arch only"
        if labels[key] != value:
            return False
    for expression in selector.get("matchExpressions", []):
        assert expression["key"] in labels, "selectors use os and arch only"
        assert expression["operator"] in ("In", "NotIn")
        if (labels[expression["key"]] in expression["values"]) != (expression["operator"] == "In"):
            return False
    return True


def test_the_committed_manifest_follows_krews_rules() -> None:
    manifest = yaml.safe_load((ROOT / "plugin.yaml").read_text(encoding="utf-8"))
    check_krew_manifest(manifest, package_version())


def test_the_built_manifest_carries_the_archives_sha256_and_files(release: Release) -> None:
    platforms = check_krew_manifest(release.manifest, release.version)
    assert {p["sha256"] for p in platforms} == {release.digest}
    with tarfile.open(release.archive) as archive:
        members = archive.getnames()
    for platform in platforms:
        froms = [operation["from"] for operation in platform["files"]]
        assert "LICENSE" in froms
        for pattern in froms:
            assert fnmatch.filter(members, pattern), f"{pattern} is not in the archive"
        assert platform["bin"] in [Path(m).name for m in members]


def test_the_build_leaves_the_rest_of_the_manifest_text_alone(release: Release) -> None:
    original = (release.source / "plugin.yaml").read_text(encoding="utf-8").splitlines()
    built = release.manifest_file.read_text(encoding="utf-8").splitlines()
    changed = [new for old, new in zip(original, built, strict=True) if old != new]
    assert all(line.strip().startswith("sha256:") for line in changed)
    # and the same manifest beside the archive, to publish with it
    assert (release.out / "plugin.yaml").read_bytes() == release.manifest_file.read_bytes()


# --- installed as krew installs it, run through the real kubectl --------------------------


def install_like_krew(archive: Path, manifest: dict[str, Any], krew_root: Path) -> Path:
    """Unpack, apply the linux/amd64 platform's `files`, and link `bin` relatively into
    $KREW_ROOT/bin, as krew's installation package does. The installed executable."""
    platform = next(
        p for p in manifest["spec"]["platforms"] if selects(p["selector"], "linux", "amd64")
    )
    download = krew_root / "downloads"
    download.mkdir(parents=True)
    with tarfile.open(archive) as unpacking:
        if hasattr(tarfile, "data_filter"):
            unpacking.extractall(download, filter="data")
        else:  # a Python without extraction filters; the archive is ours
            unpacking.extractall(download)
    install = krew_root / "store" / PLUGIN / manifest["spec"]["version"]
    install.mkdir(parents=True)
    for operation in platform["files"]:
        for found in sorted(download.glob(operation["from"])):
            target = install / (found.name if operation["to"] == "." else operation["to"])
            found.rename(target)
    bin_dir = krew_root / "bin"
    bin_dir.mkdir()
    link = bin_dir / f"kubectl-{PLUGIN.replace('-', '_')}"
    link.symlink_to(os.path.relpath(install / platform["bin"], bin_dir))
    return link


@dataclass(frozen=True)
class KrewInstall:
    root: Path
    link: Path
    env: dict[str, str]
    cwd: Path


@pytest.fixture(scope="session")
def krew_install(release: Release, tmp_path_factory: pytest.TempPathFactory) -> KrewInstall:
    base = tmp_path_factory.mktemp("krew")
    link = install_like_krew(release.archive, release.manifest, base / "krew-root")
    env = clean_env(base / "home", [link.parent, *path_without_venv()])
    cwd = base / "home" / "work"
    cwd.mkdir()
    return KrewInstall(base / "krew-root", link, env, cwd)


def test_krew_layout_holds_the_license_and_an_executable(
    release: Release, krew_install: KrewInstall
) -> None:
    store = krew_install.root / "store" / PLUGIN / f"v{release.version}"
    assert (store / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()
    assert "Apache License" in (store / "LICENSE").read_text(encoding="utf-8")
    assert os.access(krew_install.link, os.X_OK)
    assert krew_install.link.resolve() == (store / EXECUTABLE).resolve()
    assert shutil.which(EXECUTABLE, path=krew_install.env["PATH"]) == str(krew_install.link)


def test_the_venv_is_not_what_runs(krew_install: KrewInstall) -> None:
    path = krew_install.env["PATH"]
    assert shutil.which(HELPER, path=path) is None
    assert str(VENV_BIN) not in path.split(os.pathsep)


def test_kubectl_runs_the_plugin_version(release: Release, krew_install: KrewInstall) -> None:
    result = run([kubectl(), PLUGIN, "--version"], krew_install.env, krew_install.cwd)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"kubectl squarepeg {release.version}"


def test_kubectl_plugin_list_shows_it(krew_install: KrewInstall) -> None:
    result = run([kubectl(), "plugin", "list"], krew_install.env, krew_install.cwd)
    assert str(krew_install.link) in result.stdout.splitlines()


def test_kubectl_runs_a_dry_run(krew_install: KrewInstall) -> None:
    result = run(
        [kubectl(), PLUGIN, "run", "--dry-run", "alpine", "true"],
        krew_install.env,
        krew_install.cwd,
    )
    assert_dry_run_pod(result)


def test_the_linked_helper_completes_through_kubectl(krew_install: KrewInstall) -> None:
    # What the README tells krew users to do: link the helper next to the plugin.
    helper = krew_install.link.parent / HELPER
    helper.symlink_to(krew_install.link.name)
    try:
        result = run(
            [kubectl(), "__complete", PLUGIN, "run", "--dry"],
            krew_install.env,
            krew_install.cwd,
        )
    finally:
        helper.unlink()
    lines = result.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines[:-1]] == ["--dry-run", "--dry-run-server"]
    assert lines[-1] == ":4"


# --- the zipapp on a bare Python -----------------------------------------------------------


def find_python(name: str) -> str | None:
    """A working `name` (python3.10, ...): on PATH, or among pyenv's installed versions,
    whose PATH shims run only the selected one."""
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    installed = sorted(str(p) for p in pyenv_root.glob(f"versions/*/bin/{name}"))
    for candidate in filter(None, [shutil.which(name), *installed]):
        probe = subprocess.run([candidate, "-c", ""], capture_output=True, timeout=SECONDS)
        if probe.returncode == 0:
            return candidate
    return None


def bare_pythons() -> Iterator[Any]:
    yield pytest.param(sys.executable, id="this-python")
    # The oldest Python the plugin supports, where this machine has one.
    oldest = find_python("python3.10")
    yield pytest.param(
        oldest,
        id="python3.10",
        marks=pytest.mark.skipif(oldest is None, reason="no python3.10 on this machine"),
    )


@pytest.mark.parametrize("base_python", list(bare_pythons()))
def test_the_zipapp_runs_on_a_python_without_the_dependencies(
    release: Release, tmp_path: Path, base_python: str
) -> None:
    venv = tmp_path / "bare"
    created = run([base_python, "-m", "venv", "--without-pip", str(venv)], os.environ, tmp_path)
    assert created.returncode == 0, created.stderr
    python = str(venv / "bin" / "python")
    env = clean_env(tmp_path / "home", [venv / "bin", *path_without_venv()])
    missing = run(
        [
            python,
            "-c",
            f"import importlib.util as u; print([m for m in {DEPENDENCIES!r} if u.find_spec(m)])",
        ],
        env,
        tmp_path,
    )
    assert missing.stdout.strip() == "[]", "the bare venv must not have the dependencies"

    version = run([python, str(release.zipapp), "--version"], env, tmp_path)
    assert version.stdout.strip() == f"kubectl squarepeg {release.version}", version.stderr
    assert_dry_run_pod(
        run([python, str(release.zipapp), "run", "--dry-run", "alpine", "true"], env, tmp_path)
    )

    # The bundled PyYAML is the pure one and imports cleanly: no libyaml, no CSafeLoader.
    probe = run(
        [
            python,
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); import yaml; "
            "print(yaml.__file__.startswith(sys.argv[1]), yaml.__with_libyaml__, "
            "hasattr(yaml, 'CSafeLoader'))",
            str(release.zipapp),
        ],
        env,
        tmp_path,
    )
    assert probe.stdout.split() == ["True", "False", "False"], probe.stderr


def test_the_zipapp_unpacks_once_and_runs_from_the_zip_when_it_cannot(
    release: Release, tmp_path: Path
) -> None:
    env = clean_env(tmp_path / "home", path_without_venv())
    first = run([sys.executable, str(release.zipapp), "--version"], env, tmp_path)
    assert first.returncode == 0, first.stderr
    (unpacked,) = (Path(env["XDG_CACHE_HOME"]) / "kubectl-squarepeg").iterdir()
    assert (unpacked / ".complete").is_file()
    assert (unpacked / f".compiled-{sys.implementation.cache_tag}").is_file()
    assert (unpacked / "kubectl_squarepeg" / "cli" / "app.py").is_file()

    blocked = tmp_path / "not-a-directory"
    blocked.write_text("", encoding="utf-8")
    env["XDG_CACHE_HOME"] = str(blocked)
    from_zip = run([sys.executable, str(release.zipapp), "--version"], env, tmp_path)
    assert from_zip.returncode == 0, from_zip.stderr
    assert from_zip.stdout.strip() == f"kubectl squarepeg {release.version}"


def test_the_zipapp_refuses_a_too_old_python_with_a_message(
    release: Release, tmp_path: Path
) -> None:
    old = next(filter(None, map(find_python, ("python3.9", "python3.8", "python3.7"))), None)
    if old is None:
        pytest.skip("no Python older than 3.10 on this machine")
    result = run([old, str(release.zipapp), "--version"], clean_env(tmp_path, []), tmp_path)
    assert result.returncode == 125
    assert result.stderr.startswith("squarepeg: error: kubectl-squarepeg needs Python 3.10")
    assert "Traceback" not in result.stderr


# --- reproducible ----------------------------------------------------------------------------


def test_two_builds_give_the_same_bytes(release: Release, tmp_path: Path) -> None:
    manifest = tmp_path / "plugin.yaml"
    shutil.copyfile(release.source / "plugin.yaml", manifest)
    # Another time zone and umask: neither may leak into the artifacts.
    again = build(
        release.source, tmp_path / "out", manifest, release.epoch, "Pacific/Chatham", 0o077
    )
    if again.read_bytes() != release.archive.read_bytes():
        pytest.fail(f"the builds differ in {zip_differences(release.zipapp, again.parent)}")
    assert (tmp_path / "out" / EXECUTABLE).read_bytes() == release.zipapp.read_bytes()
    assert manifest.read_bytes() == release.manifest_file.read_bytes()


def zip_differences(first: Path, second_out: Path) -> list[str]:
    """The zip entries whose name, time, mode or content differ between two zipapps."""

    def entries(path: Path) -> set[tuple[str, Any, int, int]]:
        with zipfile.ZipFile(path) as bundle:
            return {(i.filename, i.date_time, i.external_attr, i.CRC) for i in bundle.infolist()}

    one, two = entries(first), entries(second_out / EXECUTABLE)
    return sorted({entry[0] for entry in one ^ two}) or ["no entry: the zip framing"]


def test_the_archive_is_normalized(release: Release) -> None:
    header = release.archive.read_bytes()[:10]
    assert header[4:8] == b"\0\0\0\0", "gzip mtime must be 0"
    assert not header[3] & 0x08, "gzip header must carry no file name"
    with tarfile.open(release.archive) as archive:
        members = archive.getmembers()
    assert [m.name for m in members] == sorted(m.name for m in members)
    assert {(m.uid, m.gid, m.uname, m.gname) for m in members} == {(0, 0, "", "")}
    assert len({m.mtime for m in members}) == 1
    assert {m.name: m.mode for m in members} == {"LICENSE": 0o644, EXECUTABLE: 0o755}


def test_the_zipapp_is_sorted_stamped_and_pure_python(release: Release) -> None:
    assert release.zipapp.read_bytes().startswith(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(release.zipapp) as bundle:
        infos = bundle.infolist()
    names = [info.filename for info in infos]
    assert names == sorted(names)
    assert len({info.date_time for info in infos}) == 1
    assert "__main__.py" in names and "kubectl_squarepeg/cli/app.py" in names
    for dependency in (
        "click/__init__.py",
        "yaml/__init__.py",
        "jsonpatch.py",
        "jsonpointer.py",
        "sh/__init__.py",
    ):
        assert dependency in names
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".so"))]
    assert not [n for n in names if n.startswith(("bin/", "_yaml/"))]


# --- completion ----------------------------------------------------------------------------


@pytest.fixture
def venv_env(tmp_path: Path) -> dict[str, str]:
    """The pip-installed plugin and helper (the project's venv) and kubectl on PATH."""
    return clean_env(tmp_path / "home", [VENV_BIN, *path_without_venv()])


def helper_values(output: str) -> list[str]:
    lines = output.splitlines()
    assert lines and re.fullmatch(r":\d+", lines[-1]), f"no directive line in {output!r}"
    return [line.split("\t")[0] for line in lines[:-1]]


def test_the_helper_lists_run_flags(venv_env: dict[str, str], tmp_path: Path) -> None:
    result = run([str(VENV_BIN / HELPER), "run", "--"], venv_env, tmp_path)
    offered = helper_values(result.stdout)
    for flag in ("--env", "--dry-run", "--mode", "--pull", "--namespace", "--keep"):
        assert flag in offered


def test_kubectl_completes_the_plugin_through_the_helper(
    venv_env: dict[str, str], tmp_path: Path
) -> None:
    # `kubectl __complete` is what kubectl's bash/zsh/fish completion scripts call.
    def complete(*words: str) -> list[str]:
        result = run([kubectl(), "__complete", PLUGIN, *words], venv_env, tmp_path)
        return helper_values(result.stdout)

    assert {"run", "config", "completion"} <= set(complete(""))
    assert {"--dry-run", "--env", "--timeout"} <= set(complete("run", "--"))
    assert complete("run", "--mode", "") == ["pod", "job"]
    assert complete("run", "alpine", "--") == []


BASH_COMPLETION = Path("/usr/share/bash-completion/bash_completion")


@pytest.mark.skipif(not BASH_COMPLETION.is_file(), reason="bash-completion is not installed")
def test_bash_completes_kubectl_squarepeg_with_kubectls_own_script(
    venv_env: dict[str, str], tmp_path: Path
) -> None:
    # kubectl's bash script needs the bash-completion package, as `kubectl completion -h` says.
    script = f"""
        source {BASH_COMPLETION}
        source <(kubectl completion bash)
        complete_line() {{
            COMP_LINE=$1; COMP_POINT=${{#COMP_LINE}}
            read -r -a COMP_WORDS <<< "$COMP_LINE"
            [[ $COMP_LINE == *' ' ]] && COMP_WORDS+=('')
            COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
            COMPREPLY=()
            __start_kubectl kubectl 2>/dev/null
            echo "$1|${{COMPREPLY[*]}}"
        }}
        complete_line 'kubectl squarepeg '
        complete_line 'kubectl squarepeg run --dry'
    """
    result = run(["bash", "--norc", "--noprofile", "-c", script], venv_env, tmp_path)
    replies = dict(line.split("|", 1) for line in result.stdout.splitlines())
    assert {"run", "config", "completion"} <= set(replies["kubectl squarepeg "].split())
    assert replies["kubectl squarepeg run --dry"].split() == ["--dry-run", "--dry-run-server"]


def test_the_printed_bash_script_completes_subcommands_and_run_flags(
    venv_env: dict[str, str], tmp_path: Path
) -> None:
    printed = run([str(VENV_BIN / EXECUTABLE), "completion", "bash"], venv_env, tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert printed.stderr == "", "the helper is on PATH: no warning expected"
    (tmp_path / "completion.bash").write_text(printed.stdout, encoding="utf-8")
    script = """
        source ./completion.bash
        complete_line() {
            COMP_LINE=$1; COMP_POINT=${#COMP_LINE}
            read -r -a COMP_WORDS <<< "$COMP_LINE"
            [[ $COMP_LINE == *' ' ]] && COMP_WORDS+=('')
            COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            COMPREPLY=()
            _kubectl_squarepeg_complete kubectl-squarepeg
            echo "$1|${COMPREPLY[*]}"
        }
        complete -p kubectl-squarepeg
        complete_line 'kubectl-squarepeg '
        complete_line 'kubectl-squarepeg run --'
        complete_line 'kubectl-squarepeg run --mode=j'
        complete_line 'kubectl-squarepeg run alpine --'
    """
    result = run(["bash", "--norc", "--noprofile", "-c", script], venv_env, tmp_path)
    registration, *lines = result.stdout.splitlines()
    assert registration.endswith(" kubectl-squarepeg")
    replies = dict(line.split("|", 1) for line in lines)
    assert {"run", "config", "completion"} <= set(replies["kubectl-squarepeg "].split())
    flags = replies["kubectl-squarepeg run --"].split()
    assert {"--env", "--dry-run", "--mode", "--pull", "--keep", "--quiet"} <= set(flags)
    assert replies["kubectl-squarepeg run --mode=j"] == "job"
    assert replies["kubectl-squarepeg run alpine --"] == ""


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_the_printed_fish_script_completes(venv_env: dict[str, str], tmp_path: Path) -> None:
    printed = run([str(VENV_BIN / EXECUTABLE), "completion", "fish"], venv_env, tmp_path)
    (tmp_path / "completion.fish").write_text(printed.stdout, encoding="utf-8")
    script = (
        "source ./completion.fish; "
        "complete -C 'kubectl-squarepeg run --dry'; echo ==; complete -C 'kubectl-squarepeg '"
    )
    result = run(["fish", "--no-config", "-c", script], venv_env, tmp_path)
    flags, subcommands = result.stdout.split("==\n")
    assert [line.split("\t")[0] for line in flags.splitlines()] == [
        "--dry-run",
        "--dry-run-server",
    ]
    assert {"run", "config", "completion"} <= {
        line.split("\t")[0] for line in subcommands.splitlines()
    }


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_the_printed_zsh_script_is_valid_zsh(venv_env: dict[str, str], tmp_path: Path) -> None:
    printed = run([str(VENV_BIN / EXECUTABLE), "completion", "zsh"], venv_env, tmp_path)
    assert printed.stdout.startswith("#compdef kubectl-squarepeg\n")
    checked = run(["zsh", "--no-rcs", "-n"], venv_env, tmp_path, input_text=printed.stdout)
    assert checked.returncode == 0, checked.stderr


def test_the_completion_command_warns_when_the_helper_is_missing(
    krew_install: KrewInstall,
) -> None:
    result = run([str(krew_install.link), "completion", "bash"], krew_install.env, krew_install.cwd)
    assert result.returncode == 0
    assert "complete -F _kubectl_squarepeg_complete kubectl-squarepeg" in result.stdout
    assert result.stderr.startswith("squarepeg: warning: kubectl_complete-squarepeg is not on")
    assert f"ln -s {EXECUTABLE}" in result.stderr


def test_help_and_version_do_not_load_completion(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from kubectl_squarepeg.cli import app\n"
        "for argv in (['--version'], ['--help']):\n"
        "    try:\n"
        "        app.main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('kubectl_squarepeg.cli.completion' in sys.modules, file=sys.stderr)\n"
    )
    result = run([sys.executable, "-c", probe], os.environ, tmp_path)
    assert result.stderr.strip() == "False"
    assert "completion" in result.stdout  # --help lists the command all the same
