"""Refused before anything is created: the installed command against kubesim, where a
refusal must leave the namespace empty, and an accepted config file is named in the banner.
"""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import Squarepeg, names


def test_an_untrusted_project_file_creates_nothing_until_trusted(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    project = squarepeg.cwd / ".squarepeg.yaml"
    project.write_text("env: {GREETING: from-project}\n")
    refused = squarepeg("run", "alpine", "sh", "-c", "echo $GREETING")
    assert refused.code == 125
    assert refused.lines == [
        f"squarepeg: error: the project config file {project} is not trusted; read it, then "
        f"run `kubectl squarepeg config trust {project}` to use it (a project file can change "
        "what runs with your credentials)"
    ]
    assert names(kubesim, namespace) == []

    assert squarepeg("config", "trust", namespaced=False).code == 0
    used = squarepeg("run", "alpine", "sh", "-c", "echo $GREETING")
    assert (used.code, used.stdout) == (0, b"from-project\n"), used.stderr
    assert used.has_line("using context", f"; config {project}"), used.lines

    project.write_text("env: {GREETING: changed}\n")
    changed = squarepeg("run", "alpine", "sh", "-c", "echo $GREETING")
    assert changed.code == 125 and changed.has_line("changed since you trusted it")
    assert names(kubesim, namespace) == []
