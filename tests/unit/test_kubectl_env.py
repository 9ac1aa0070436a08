"""The environment kubectl children get: the user's, with a higher Go GC target unless the
user chose one (kubectl.py, _KUBECTL_GOGC)."""

from __future__ import annotations

import pytest

from kubectl_squarepeg import kubectl


def test_children_get_the_users_environment_and_a_gc_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GOGC", raising=False)
    monkeypatch.setenv("KUBECONFIG", "/somewhere/config")
    environ = kubectl._child_environment()
    assert environ["GOGC"] == "200"
    assert environ["KUBECONFIG"] == "/somewhere/config"


def test_a_gc_target_the_user_set_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOGC", "50")
    assert kubectl._child_environment()["GOGC"] == "50"
