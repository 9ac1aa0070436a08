"""capability.py: the kubectl version read once and cached per binary, and the one-line
errors that name the kubectl needed (no process: the version question is replaced)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubectl_squarepeg.cluster import capability


@pytest.fixture
def kubectl_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = tmp_path / "bin" / "kubectl"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    os.utime(binary, (1e9, 1e9))
    monkeypatch.setenv("PATH", str(binary.parent))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return binary


def asking(monkeypatch: pytest.MonkeyPatch, answer: str) -> list[int]:
    asked: list[int] = []

    def ask() -> str:
        asked.append(1)
        return answer

    monkeypatch.setattr(capability, "_ask_version", ask)
    return asked


def test_the_version_is_asked_once_per_binary(kubectl_on_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    asked = asking(monkeypatch, "v1.27.16")
    assert [capability.client_minor() for _ in range(3)] == [27, 27, 27]
    assert len(asked) == 1
    os.utime(kubectl_on_path, (2e9 - 1e8, 2e9 - 1e8))  # upgraded: another key
    capability.client_minor()
    assert len(asked) == 2


def test_a_dispatcher_has_no_one_version(kubectl_on_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    asking(monkeypatch, "v1.32.4-dispatcher")
    assert capability.client_minor() is None
    assert capability.attach_refusal("upgrade request required", "p", tty=False) is None


def test_an_spdy_only_kubectl_is_told_which_kubectl_attaches(
        kubectl_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asking(monkeypatch, "v1.28.3")
    said = "error: unable to upgrade connection: kubesim speaks WebSocket ... not SPDY/3.1"
    error = capability.attach_refusal(said, "pod-1", tty=True)
    assert error is not None
    assert error.message == ("cannot attach to pod pod-1: kubectl 1.28 attaches over "
                             "SPDY/3.1 only, and the API server or a proxy on the way "
                             "refused that upgrade")
    assert error.hint is not None and error.hint.startswith("use kubectl 1.30 or newer")
    assert "without -it" in error.hint
    assert capability.attach_refusal("pods/attach is forbidden: upgrade", "p", tty=True) is None


def test_a_websocket_kubectl_keeps_the_general_message(
        kubectl_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asking(monkeypatch, "v1.30.0")
    assert capability.attach_refusal("upgrade request required", "p", tty=False) is None


def test_a_bare_not_found_of_an_old_dry_run_names_the_kubectl(
        kubectl_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = asking(monkeypatch, "v1.27.16")
    assert capability.dry_run_refusal('pods "x" is forbidden') is None
    assert asked == []  # only a bare NotFound costs the question
    error = capability.dry_run_refusal(
        "Error from server (NotFound): the server could not find the requested resource")
    assert error is not None and "kubectl 1.27 reads the API server's OpenAPI v2" in error.message
    assert error.hint is not None and "kubectl 1.29 or newer" in error.hint
