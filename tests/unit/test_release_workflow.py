"""The release workflow (.github/workflows/release.yml) read as data: what it publishes,
where, and with which rights. That the bot's template renders to the built manifest is
tests/e2e/test_krew.py's; the steps themselves run on GitHub only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def workflow() -> dict[Any, Any]:
    loaded: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return loaded


def steps(job: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = workflow()["jobs"][job]["steps"]
    return found


def runs(job: str) -> str:
    return "\n".join(step.get("run", "") for step in steps(job))


def uses(job: str) -> list[str]:
    return [step["uses"] for step in steps(job) if "uses" in step]


def test_it_runs_on_version_tags_with_read_only_rights_by_default() -> None:
    flow = workflow()
    assert flow[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads the key `on` as true
    assert flow["permissions"] == {"contents": "read"}


def test_the_build_checks_the_tag_tests_and_builds() -> None:
    script = runs("build")
    assert '"$GITHUB_REF_NAME" != "v$version"' in script  # the tag is pyproject's version
    assert "./scripts/test tests/unit" in script
    assert "scripts/build-release --out dist" in script
    assert "sha256sum" in script and "-m build" in script


def test_the_github_release_carries_the_archive_the_zipapp_and_the_checksums() -> None:
    script = runs("github-release")
    for asset in (
        'dist/kubectl-squarepeg-$GITHUB_REF_NAME.tar.gz"',
        "dist/kubectl-squarepeg ",
        "dist/plugin.yaml",
        "dist/SHA256SUMS",
    ):
        assert asset in script
    assert workflow()["jobs"]["github-release"]["permissions"] == {"contents": "write"}


def test_pypi_is_reached_by_trusted_publishing_without_a_secret() -> None:
    job = workflow()["jobs"]["pypi"]
    assert job["permissions"] == {"id-token": "write"}
    (publish,) = [s for s in job["steps"] if s.get("uses", "").startswith("pypa/")]
    assert publish["uses"] == "pypa/gh-action-pypi-publish@release/v1"
    assert set(publish.get("with", {})) <= {"packages-dir"}  # no password, no token
    assert "secrets." not in WORKFLOW.read_text(encoding="utf-8")


def test_krew_index_is_updated_by_the_bot_after_the_release_exists() -> None:
    job = workflow()["jobs"]["krew-index"]
    assert job["needs"] == "github-release"  # the bot downloads the archive from it
    assert uses("krew-index") == ["actions/checkout@v4", "rajatjindal/krew-release-bot@v0.0.46"]
    assert (ROOT / ".krew.yaml").is_file()  # the template it reads from the checkout
