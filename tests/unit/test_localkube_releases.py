"""localkube's Kubernetes releases (tests/localkube/build.py): how one is named and selected,
that each release's Go module pins its own k8s.io modules, and that adding a release left
the first release's build stamp where it was (its cached binaries stay current)."""

from __future__ import annotations

import hashlib
import re

import pytest

from tests.localkube import build, node_build


def test_a_release_is_named_by_minor_or_tag() -> None:
    second = build.RELEASES[1]
    assert second.version == "v1.37.2"
    for name in ("1.37", "1.37.2", "v1.37.2"):
        assert build.selected(name) is second
    assert build.selected("1.34") is build.DEFAULT_RELEASE


def test_the_selection_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(build.RELEASE_VARIABLE, raising=False)
    assert build.selected() is build.DEFAULT_RELEASE
    monkeypatch.setenv(build.RELEASE_VARIABLE, "1.37")
    assert build.selected() is build.RELEASES[1]
    assert build.bin_dir().parent.name == "v1.37.2"
    assert node_build.bin_dir().parent.name == "v1.37.2"


def test_an_unknown_release_names_the_known_ones() -> None:
    with pytest.raises(build.UnknownRelease, match=r"'1\.36'.*1\.34 \(v1\.34\.4\), 1\.37"):
        build.selected("1.36")


def test_the_first_release_keeps_its_stamp() -> None:
    # The hash as it was computed before there was a second release: every file of gobuild/.
    digest = hashlib.sha256()
    for path in sorted(p for p in build.GOBUILD.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(build.GOBUILD)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    assert build.source_hash(build.DEFAULT_RELEASE) == digest.hexdigest()[:16]
    assert not build.RELEASES[1].modules.is_relative_to(build.GOBUILD)


@pytest.mark.parametrize("release", build.RELEASES, ids=lambda r: r.minor)
def test_each_module_pins_its_own_release(release: build.Release) -> None:
    go_mod = (release.modules / "kube" / "go.mod").read_text()
    assert f"require k8s.io/kubernetes {release.version}\n" in go_mod
    staging = "v0." + release.version.lstrip("v").split(".", 1)[1]
    replaced = re.findall(r"^\s+(k8s\.io/\S+) => (\S+) (\S+)$", go_mod, re.M)
    assert len(replaced) >= 30
    assert all(module == target and version == staging
               for module, target, version in replaced), replaced
