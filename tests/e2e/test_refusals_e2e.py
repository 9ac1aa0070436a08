"""Refused before anything is created: the installed command against kubesim, where a
refusal must leave the namespace empty, and an accepted config file is named in the banner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.e2e.conftest import Squarepeg, names, wait_until


def test_an_untrusted_project_file_creates_nothing_until_trusted(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    def refusal(project: Path, what: str) -> list[str]:
        return [
            f"squarepeg: error: the project config file {project} {what}; read it, then run "
            f"`kubectl squarepeg config trust {project}` to use it (a project file can change "
            "what runs with your credentials)"
        ]

    # The user's own file needs no trust; the banner names it with the project file.
    user = squarepeg.home / "xdg" / "squarepeg" / "config.yaml"
    user.parent.mkdir(parents=True)
    user.write_text("env: {FROM_USER: user}\n")
    project = squarepeg.cwd / ".squarepeg.yaml"
    project.write_text("env: {GREETING: from-project}\n")
    command = ("run", "alpine", "sh", "-c", "echo $FROM_USER $GREETING")
    refused = squarepeg(*command)
    assert (refused.code, refused.stdout) == (125, b"")
    assert refused.lines == refusal(project, "is not trusted")
    assert names(kubesim, namespace) == []

    assert squarepeg("config", "trust", namespaced=False).code == 0
    used = squarepeg(*command)
    assert (used.code, used.stdout) == (0, b"user from-project\n"), used.stderr
    assert used.has_line("using context", f"; config {user}, {project}"), used.lines
    # Its pod goes once the node confirms the delete (0.17 s on the real kubelet node), which
    # the run does not wait for (docs/decisions/0140): then the next check means something.
    wait_until(lambda: names(kubesim, namespace) == [], 10, "the trusted run's pod to go")

    project.write_text("env: {GREETING: changed}\n")
    changed = squarepeg(*command)
    assert (changed.code, changed.stdout) == (125, b"")
    assert changed.lines == refusal(project, "changed since you trusted it")
    assert names(kubesim, namespace) == []


def test_a_passthrough_restart_policy_is_refused_with_file_and_line_creating_nothing(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    config = squarepeg.home / "contract.yaml"
    config.write_text("kubernetes:\n  spec:\n    restartPolicy: Always\n")
    refused = squarepeg("run", "--config", str(config), "alpine", "true")
    assert refused.code == 125
    assert refused.lines == [
        f"squarepeg: error: config kubernetes.spec.restartPolicy ({config}:3) would change "
        "/spec/restartPolicy, which squarepeg's run depends on; remove it; squarepeg sets "
        "restartPolicy Never, a Job's backoffLimit 0, the name and squarepeg labels, and the "
        "container `main` itself"
    ]
    assert names(kubesim, namespace) == []


def test_a_refused_docker_flag_or_image_creates_nothing(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    for args in (["--cpu-shares", "2", "alpine"], ["Alpine"], ["--tmpfs", "/run:bogus", "alpine"]):
        done = squarepeg("run", *args, "true")
        assert done.code == 125 and len(done.lines) == 1, done.lines
    assert names(kubesim, namespace) == []


def test_an_unknown_passthrough_field_is_refused_by_the_api_server_creating_nothing(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    """The create asks the API server for strict field validation itself
    (docs/decisions/0023): a field the server does not know is an error, not dropped."""
    config = squarepeg.home / "typo.yaml"
    config.write_text("kubernetes:\n  spec:\n    activeDeadlineSecond: 30\n")
    for mode in ("pod", "job"):
        refused = squarepeg("run", "--config", str(config), "--mode", mode, "alpine", "true")
        assert (refused.code, refused.stdout) == (125, b""), refused.stderr
        assert refused.has_line("error: cannot create", "unknown field",
                                "activeDeadlineSecond"), refused.lines
        assert refused.has_line("fix the field named above"), refused.lines
        assert names(kubesim, namespace) == []
