"""-v/--mount through the installed `kubectl-squarepeg` (docs/decisions/0180): a dry run shows
everything a bind mount adds without reading SRC (here SRC does not even exist), a claim
name mounts the claim, and a detached run with a local path (which squarepeg cannot copy
in and back) stops before the cluster with one line.
No cluster: the kubeconfig's server is unreachable, and nothing reaches it."""

from __future__ import annotations

from tests.e2e.test_cli_dry_run import Sandbox, sandbox  # noqa: F401  # the fixture


def test_a_dry_run_shows_what_a_bind_mount_adds_without_reading_src(
    sandbox: Sandbox,  # noqa: F811
) -> None:
    result = sandbox.dry("-v", "./not-there:/src", "-v", "cache:/cache:ro", "alpine", "ls")
    spec = result.doc["spec"]
    assert [c["name"] for c in spec["initContainers"]] == [
        "squarepeg-files",
        "squarepeg-files-back",
    ]
    assert spec["initContainers"][1]["restartPolicy"] == "Always"
    assert {v["name"] for v in spec["volumes"]} == {"files-1", "squarepeg-control", "claim-1"}
    assert result.container["volumeMounts"] == [
        {"name": "files-1", "mountPath": "/src", "subPath": "content"},
        {"name": "claim-1", "mountPath": "/cache", "readOnly": True},
    ]
    assert result.lines == [
        "squarepeg: ./not-there -> /src: a snapshot of ./not-there fills the emptyDir files-1 "
        "through the init container squarepeg-files before main starts; copied back into it "
        "after main ends (new and changed files; files the container deleted stay)"
    ]


def test_a_detached_run_with_a_local_path_stops_before_the_cluster(
    sandbox: Sandbox,  # noqa: F811
) -> None:
    (sandbox.cwd / "data").mkdir()
    (sandbox.cwd / "data" / "a.txt").write_text("a\n")
    result = sandbox("run", "-d", "-v", "./data:/data", "alpine", "true")
    assert result.one_error().startswith(
        "-d with -v ./data:/data: a local path is copied in and back by squarepeg itself"
    )


def test_a_missing_src_is_named_when_a_run_starts(sandbox: Sandbox) -> None:  # noqa: F811
    result = sandbox("run", "-v", "./gone:/data", "alpine", "true")
    assert "-v ./gone:/data: ./gone (" in result.one_error()
