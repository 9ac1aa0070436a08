"""The trust store of project config files: verdicts, persistence, and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubectl_squarepeg.config import trust
from kubectl_squarepeg.config.trust import Verdict
from kubectl_squarepeg.errors import ConfigError


def test_verdicts_follow_the_contents(tmp_path: Path) -> None:
    store = trust.Store.load(tmp_path / "cfg")
    assert store.verdict(tmp_path / "a.yaml", b"x") is Verdict.UNTRUSTED
    store.trust(tmp_path / "a.yaml", b"x")
    assert store.verdict(tmp_path / "a.yaml", b"x") is Verdict.TRUSTED
    assert store.verdict(tmp_path / "a.yaml", b"y") is Verdict.CHANGED
    assert store.verdict(tmp_path / "b.yaml", b"x") is Verdict.UNTRUSTED


def test_the_store_survives_a_save_and_untrust_forgets(tmp_path: Path) -> None:
    store = trust.Store.load(tmp_path / "cfg")
    store.trust(tmp_path / "a.yaml", b"x")
    store.save()
    again = trust.Store.load(tmp_path / "cfg")
    assert again.verdict(tmp_path / "a.yaml", b"x") is Verdict.TRUSTED
    assert again.untrust(tmp_path / "a.yaml") and not again.untrust(tmp_path / "a.yaml")
    again.save()
    doc = json.loads((tmp_path / "cfg" / trust.STORE_NAME).read_text())
    assert doc == {"version": 1, "files": {}}


def test_a_symlink_is_trusted_as_its_target(tmp_path: Path) -> None:
    (tmp_path / "real.yaml").write_text("x")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "real.yaml")
    store = trust.Store.load(tmp_path / "cfg")
    store.trust(tmp_path / "link.yaml", b"x")
    assert store.verdict(tmp_path / "real.yaml", b"x") is Verdict.TRUSTED


@pytest.mark.parametrize("text", ["not json", '{"files": [1]}', '{"files": {"a": 1}}'])
def test_a_damaged_store_is_one_error_saying_what_to_do(tmp_path: Path, text: str) -> None:
    (tmp_path / trust.STORE_NAME).write_text(text)
    with pytest.raises(ConfigError) as caught:
        trust.Store.load(tmp_path)
    assert str(tmp_path / trust.STORE_NAME) in caught.value.one_line()
    assert "delete it and trust your project files again" in caught.value.one_line()


@pytest.mark.parametrize(
    ("xdg", "expected"),
    [("/x", "/x/squarepeg"), ("", "H/.config/squarepeg"), ("rel", "H/.config/squarepeg")],
)
def test_the_store_lives_in_the_user_config_dir(xdg: str, expected: str) -> None:
    assert str(trust.user_config_dir({"XDG_CONFIG_HOME": xdg}, Path("H"))) == expected
