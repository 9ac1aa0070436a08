"""Kubernetes names (plan/names.py): names, subdomains, label and annotation keys, label values,
reserved labels, tolerations."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_squarepeg.plan import names
from kubectl_squarepeg.plan.values import ValueProblem
from tests.unit.parser_tables import Parser, table_tests

GOOD: list[tuple[Parser, str, Any]] = [
    (names.validate_name, "my-run-1", "my-run-1"),
    (names.validate_name, "a" * 63, "a" * 63),
    (names.validate_subdomain, "registry.example-1", "registry.example-1"),
    (names.validate_label_key, "team", "team"),
    (names.validate_label_key, "example.com/team_a.b", "example.com/team_a.b"),
    (names.validate_label_value, "", ""),
    (names.validate_label_value, "Alice_1.x-y", "Alice_1.x-y"),
    (
        names.parse_toleration,
        "gpu=true:NoSchedule",
        {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    ),
    (
        names.parse_toleration,
        "dedicated:NoExecute",
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
    ),
]
BAD: list[tuple[Parser, str, str]] = [
    (names.validate_name, "My_Run", "lowercase letters, digits and '-'"),
    (names.validate_name, "-run", "starting and ending with a letter or digit"),
    (names.validate_name, "a" * 64, "at most 63 characters (this one has 64)"),
    (names.validate_subdomain, "Secret", "lowercase letters, digits, '-' and '.'"),
    (names.validate_hostname, "foo.example.com", "a pod's host name is one label, without dots"),
    (names.validate_hostname, "Box", "use lowercase letters, digits and '-'"),
    (names.validate_label_key, "Example.com/x", "prefix 'Example.com' must be a lowercase"),
    (names.validate_label_key, "bad key", "a key is NAME or PREFIX/NAME"),
    (names.validate_label_value, "-x", "a label value has at most 63"),
    (names.parse_toleration, "gpu=true", "use KEY[=VALUE]:EFFECT"),
    (names.parse_toleration, "gpu:Sometimes", "EFFECT is one of NoSchedule, PreferNoSchedule"),
    (names.parse_toleration, "bad key:NoSchedule", "a key is NAME or PREFIX/NAME"),
]
test_accepted_forms, test_refused_forms_say_the_accepted_form = table_tests(GOOD, BAD)


def test_annotation_keys_follow_label_key_rules() -> None:
    assert names.validate_annotation_key("example.com/note") == "example.com/note"
    with pytest.raises(ValueProblem):
        names.validate_annotation_key("not ok")


@pytest.mark.parametrize(
    ("key", "reserved"),
    [
        ("app.kubernetes.io/managed-by", True),
        ("squarepeg.io/keep", True),
        ("squarepeg.io/anything", True),
        ("app.kubernetes.io/name", False),
        ("squarepeg", False),
    ],
)
def test_reserved_labels(key: str, reserved: bool) -> None:
    assert names.is_reserved_label(key) is reserved
