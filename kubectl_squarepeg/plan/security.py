"""Who the container runs as and what the kernel lets it do: `-u`, `--group-add`,
`--cap-add`/`--cap-drop` and `--sysctl`.

Owns the numeric user and group IDs Kubernetes takes (it cannot look a name up in the
image), capability names as Kubernetes spells them, and sysctl names.
"""

from __future__ import annotations

import re

from kubectl_squarepeg.plan.names import MAX_SUBDOMAIN
from kubectl_squarepeg.plan.quantities import MAX_INT32, bounded, parse_nonnegative_int
from kubectl_squarepeg.plan.values import ValueProblem, parse_key_value

_USER = r"(\d+)(?::(\d+))?"


def parse_user(text: str) -> tuple[int, int | None]:
    """Numeric `UID[:GID]`; Kubernetes cannot look a user name up in the image."""
    match = re.fullmatch(_USER, bounded(text.strip()), re.ASCII)
    if not match:
        raise ValueProblem(
            "Kubernetes needs numeric IDs: use UID or UID:GID like 1000 or 1000:1000 "
            "(`docker run --rm --entrypoint id IMAGE NAME` prints the IDs of a user name)"
        )
    ids = int(match[1]), None if match[2] is None else int(match[2])
    if any(i is not None and i > MAX_INT32 for i in ids):
        raise ValueProblem(
            f"Kubernetes stores user and group IDs up to {MAX_INT32} (2^31-1); give a smaller ID"
        )
    return ids


def parse_group_id(text: str) -> int:
    """A supplementary group for `--group-add`: a numeric GID. The field is an int64, but
    the API server accepts a group ID up to 2^31-1 only, as for runAsGroup."""
    stripped = text.strip()
    if stripped and not re.fullmatch(r"-?\d+", stripped):
        raise ValueProblem(
            "Kubernetes takes numeric group IDs only and cannot look a group name up in the "
            "image; give the GID, like 1000 (`getent group NAME` in the image shows it)"
        )
    gid = parse_nonnegative_int(stripped)
    if gid > MAX_INT32:
        raise ValueProblem(
            f"Kubernetes stores user and group IDs up to {MAX_INT32} (2^31-1); give a smaller ID"
        )
    return gid


_CAPABILITY = r"[A-Z][A-Z0-9_]*"


def parse_capability(text: str) -> str:
    """A Linux capability as Kubernetes names it: `net_admin` / `CAP_NET_ADMIN` -> `NET_ADMIN`."""
    name = text.strip().upper().removeprefix("CAP_")
    if not re.fullmatch(_CAPABILITY, name):
        raise ValueProblem("give a capability name like NET_ADMIN or SYS_TIME (or ALL)")
    return name


# Kubernetes' sysctl name: segments of [a-z0-9_-] (alphanumeric at both ends) joined by
# '.' or '/'; at most 253 characters.
_SYSCTL_SEGMENT = r"[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_NAME = rf"({_SYSCTL_SEGMENT}[./])*{_SYSCTL_SEGMENT}"


def parse_sysctl(text: str) -> tuple[str, str]:
    """`--sysctl KEY=VALUE`: a namespaced kernel parameter, like net.ipv4.ip_forward=1."""
    name, value = parse_key_value(text)
    if len(name) > MAX_SUBDOMAIN or not re.fullmatch(_SYSCTL_NAME, name):
        raise ValueProblem(
            "a sysctl name is lowercase letters, digits, '_' and '-' in parts joined by '.' "
            "or '/' (at most 253 characters), like net.ipv4.ip_unprivileged_port_start=0"
        )
    return name, value
