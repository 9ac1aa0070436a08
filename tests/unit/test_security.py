"""Users, groups, capabilities and sysctls (plan/security.py)."""

from __future__ import annotations

from typing import Any

from kubectl_squarepeg.plan import security
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
