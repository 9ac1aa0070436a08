"""Users, groups, capabilities and sysctls (plan/security.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kubectl_squarepeg.plan import security
from kubectl_squarepeg.plan.values import ValueProblem
from tests.unit.parser_tables import Parser, table_tests

GOOD: list[tuple[Parser, str, Any]] = [
    (security.parse_user, "2147483647:0", (2147483647, 0)),
    (security.parse_user, "1000", (1000, None)),
    (security.parse_user, "1000:50", (1000, 50)),
    (security.parse_user, "0:0", (0, 0)),
    (security.parse_capability, "net_admin", "NET_ADMIN"),
    (security.parse_capability, "CAP_SYS_TIME", "SYS_TIME"),
    (security.parse_capability, "ALL", "ALL"),
]
BAD: list[tuple[Parser, str, str]] = [
    (security.parse_user, "2147483648", "Kubernetes stores user and group IDs up to 2147483647"),
    (security.parse_user, "0:4294967296", "up to 2147483647 (2^31-1)"),
    (security.parse_user, "nobody", "Kubernetes needs numeric IDs: use UID or UID:GID"),
    (security.parse_user, "app:1000", "Kubernetes needs numeric IDs"),
    (security.parse_capability, "net admin", "give a capability name like NET_ADMIN"),
]
test_accepted_forms, test_refused_forms_say_the_accepted_form = table_tests(GOOD, BAD)


@pytest.mark.parametrize(("text", "parsed"), [
    ("no-new-privileges", ("no-new-privileges", "true")),
    ("no-new-privileges:true", ("no-new-privileges", "true")),
    ("no-new-privileges=false", ("no-new-privileges", "false")),
    ("seccomp=unconfined", ("seccomp", "unconfined")),
    ("seccomp:unconfined", ("seccomp", "unconfined")),
    ("apparmor=unconfined", ("apparmor", "unconfined")),
    ("apparmor=k8s-guard", ("apparmor", "k8s-guard")),
    ("label=type:spc_t", ("label-type", "spc_t")),
    ("label=level:s0:c100,c200", ("label-level", "s0:c100,c200")),
])
def test_security_opt_takes_what_kubernetes_has_a_field_for(
        text: str, parsed: tuple[str, str]) -> None:
    assert security.parse_security_opt(text) == parsed


@pytest.mark.parametrize(("text", "fragment"), [
    ("seccomp=/etc/docker/seccomp.json", "must be on the node"),
    ("label=disable", "label=disable has no Kubernetes field"),
    ("no-new-privileges:yes", "no-new-privileges:false"),
    ("systempaths=unconfined", "kubernetes.spec"),
    ("apparmor=", "apparmor=PROFILE"),
])
def test_security_opt_without_a_field_says_where_to_set_it(text: str, fragment: str) -> None:
    with pytest.raises(ValueProblem, match=re.escape(fragment)):
        security.parse_security_opt(text)
