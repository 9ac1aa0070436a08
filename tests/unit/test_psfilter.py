"""`ps --filter`'s parsing and docker's way of combining filters (plan/psfilter.py), the
rows it keeps (run/listing.py), and the detach keys' scan of `attach -t`
(terminal/session.py): pure, no processes."""

from __future__ import annotations

import pytest

from kubectl_squarepeg.errors import UsageError
from kubectl_squarepeg.plan.psfilter import parse_filters
from kubectl_squarepeg.terminal.session import detach_scan

WEB = {"app": "web", "tier": "front"}


def test_no_filter_matches_everything() -> None:
    assert parse_filters([]).matches("anything", "exited", {})


def test_name_is_an_unanchored_regular_expression_and_several_are_ored() -> None:
    filters = parse_filters(["name=web", "name=^db$"])
    assert filters.matches("my-web-1", "running", {})
    assert filters.matches("db", "running", {})
    assert not filters.matches("db-2", "running", {})
    assert parse_filters(["name=^web$"]).matches("web", "running", {})
    assert not parse_filters(["name=^web$"]).matches("my-web", "running", {})


def test_status_is_dockers_word_for_the_runs_state_and_several_are_ored() -> None:
    filters = parse_filters(["status=exited", "status=created"])
    assert filters.matches("a", "exited", {}) and filters.matches("a", "pending", {})
    assert not filters.matches("a", "running", {})
    assert parse_filters(["status=removing"]).matches("a", "terminating", {})
    assert not parse_filters(["status=paused"]).matches("a", "running", {})
    assert filters.by_status and not parse_filters(["name=a"]).by_status


def test_labels_are_anded_as_dockers_and_take_a_key_or_a_key_and_value() -> None:
    assert parse_filters(["label=app"]).matches("a", "running", WEB)
    assert parse_filters(["label=app=web", "label=tier"]).matches("a", "running", WEB)
    assert not parse_filters(["label=app=web", "label=gone"]).matches("a", "running", WEB)
    assert not parse_filters(["label=app=db"]).matches("a", "running", WEB)
    assert parse_filters(["label=note=a=b"]).matches("a", "running", {"note": "a=b"})


def test_different_keys_are_anded() -> None:
    filters = parse_filters(["name=web", "status=running", "label=app=web"])
    assert filters.matches("web-1", "running", WEB)
    assert not filters.matches("web-1", "exited", WEB)
    assert not filters.matches("db-1", "running", WEB)
    assert not filters.matches("web-1", "running", {})


@pytest.mark.parametrize(("given", "said"), [
    ("name", "not KEY=VALUE"),
    ("id=abc", "not KEY=VALUE"),
    ("status=sleeping", "'sleeping' is not a state"),
    ("name=(", "not a regular expression"),
    ("label=", "no label key"),
])
def test_bad_filters_are_one_usage_error_naming_the_value(given: str, said: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_filters(["name=ok", given])
    assert caught.value.exit_code == 125
    line = caught.value.one_line()
    assert f"invalid value {given!r} for --filter" in line and said in line
    assert "\n" not in line


def test_detach_keys_end_the_input_and_a_lone_ctrl_p_is_held_then_passed() -> None:
    assert detach_scan(b"", b"ls\r") == (b"ls\r", b"", False)
    assert detach_scan(b"", b"ab\x10\x11cd") == (b"ab", b"", True)
    assert detach_scan(b"", b"ab\x10") == (b"ab", b"\x10", False)  # the next read decides
    assert detach_scan(b"\x10", b"\x11") == (b"", b"", True)
    assert detach_scan(b"\x10", b"x") == (b"\x10x", b"", False)  # not the keys: both go on
