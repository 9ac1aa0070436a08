"""Who the container runs as and what the kernel lets it do: `-u`, `--group-add`,
`--cap-add`/`--cap-drop`, `--sysctl` and `--security-opt`.

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


# docker's `--security-opt` values squarepeg maps onto the main container's securityContext;
# the forms docker accepts: `no-new-privileges`, `no-new-privileges:true|false` (or `=`),
# `seccomp=unconfined`, `apparmor=unconfined|PROFILE`, `label=user|role|type|level:VALUE`.
_SELINUX_FIELDS = {"user": "user", "role": "role", "type": "type", "level": "level"}


def _split_option(text: str) -> tuple[str, str]:
    """`NAME=VALUE` or `NAME:VALUE` (docker takes both) at the first of the two; a bare NAME
    has an empty value."""
    match = re.match(r"([^=:]*)[=:](.*)", text, re.DOTALL)
    return (match[1].strip().lower(), match[2]) if match else (text.lower(), "")


def parse_security_opt(text: str) -> tuple[str, str]:
    """`--security-opt OPT`: (what it sets, its value), one of `no-new-privileges` (`true` or
    `false`), `seccomp` (`unconfined`), `apparmor` (`unconfined` or a profile name on the
    node) and `label-user`/`-role`/`-type`/`-level` (SELinux)."""
    name, value = _split_option(text.strip())
    if name == "no-new-privileges":
        flag = value.strip().lower() or "true"
        if flag not in ("true", "false"):
            raise ValueProblem("give no-new-privileges, no-new-privileges:true or "
                               "no-new-privileges:false")
        return name, flag
    if name == "seccomp":
        if value.strip().lower() == "unconfined":
            return name, "unconfined"
        raise ValueProblem(
            "squarepeg takes seccomp=unconfined (docker's default profile is the runtime's "
            "RuntimeDefault, set on every run); a profile file must be on the node: set "
            "`securityContext.seccompProfile` (type Localhost, localhostProfile) under "
            "`kubernetes.spec` in a config file")
    if name == "apparmor":
        profile = value.strip()
        if not profile or any(c.isspace() for c in profile):
            raise ValueProblem("give apparmor=unconfined or apparmor=PROFILE, a profile "
                               "loaded on the node")
        return name, profile
    if name == "label":
        field, _, setting = value.partition(":")
        if field in _SELINUX_FIELDS and setting.strip():
            return f"label-{field}", setting.strip()
        raise ValueProblem(
            "squarepeg takes label=user:USER, label=role:ROLE, label=type:TYPE and "
            "label=level:LEVEL (the SELinux options of Kubernetes); label=disable has no "
            "Kubernetes field: leave it out")
    raise ValueProblem(
        "squarepeg takes no-new-privileges, seccomp=unconfined, apparmor=PROFILE and "
        "label=user|role|type|level:VALUE; set other security options under "
        "`kubernetes.spec` in a config file")
