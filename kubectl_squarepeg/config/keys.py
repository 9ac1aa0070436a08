"""The configuration keys: each key's kind, accepted form and parser (the same parsers as
the flags), the built-in defaults, the names people try that are not keys, and the
did-you-mean for a key that is not known.

Key names: a repeatable flag whose Kubernetes field is plural has a plural key (`labels`,
`tolerations`, ...); the others keep the flag's long name in snake_case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kubectl_squarepeg.plan import (
    dockerflags,
    filehelpers,
    images,
    mounts,
    names,
    network,
    quantities,
    security,
    values,
)


@dataclass(frozen=True)
class Key:
    kind: str  # "scalar", "bool", "map" or "list"
    form: str  # the accepted form, for errors
    parse: Callable[[str], Any] = str


PAIR_FORM = "a mapping like `KEY: value`, or a list of KEY=VALUE strings"

# Every `run` flag that makes sense as a default, by its long name in snake_case; the
# repeatable flags whose Kubernetes field is plural take that plural (`--label` -> `labels`).
KEYS: dict[str, Key] = {
    "mode": Key("scalar", "pod or job", values.parse_mode),
    "timeout": Key(
        "scalar", "seconds, or a duration like 90s or 5m", quantities.parse_duration_seconds
    ),
    "namespace": Key("scalar", "a namespace name like team-a", names.validate_name),
    "context": Key("scalar", "a kubeconfig context name", values.parse_nonempty),
    "kubeconfig": Key("scalar", "a file path", values.parse_nonempty),
    "cleanup": Key("bool", "true or false"),
    "orphan_sweep": Key("bool", "true or false"),
    "orphan_sweep_min_age": Key(
        "scalar", "a whole number of seconds", quantities.parse_nonnegative_int
    ),
    "orphan_sweep_silence": Key(
        "scalar", "seconds, or a duration like 90s or 5m", quantities.parse_duration_seconds
    ),
    "job_ttl_seconds_after_finished": Key(
        "scalar", "a whole number of seconds", quantities.parse_int32
    ),
    "quiet": Key("bool", "true or false"),
    "env": Key("map", PAIR_FORM),
    "env_file": Key("list", "a file path, or a list of them", values.parse_nonempty),
    "labels": Key("map", PAIR_FORM),
    "annotations": Key("map", PAIR_FORM),
    "workdir": Key("scalar", "an absolute path like /app", values.parse_workdir),
    "user": Key("scalar", "UID or UID:GID, like 1000:1000", security.parse_user),
    "entrypoint": Key("scalar", "a program, like /bin/sh", values.parse_entrypoint),
    "cpus": Key("scalar", "a number of CPUs like 0.5", quantities.parse_cpus),
    "memory": Key("scalar", "a size like 512m or 1g", quantities.parse_memory),
    "memory_reservation": Key("scalar", "a size like 256m", quantities.parse_memory),
    "gpus": Key("scalar", "a GPU count like 1", quantities.parse_gpus),
    "pull": Key("scalar", "always, missing or never", images.parse_pull),
    "platform": Key("scalar", "OS[/ARCH[/VARIANT]] like linux/amd64", images.parse_platform),
    "privileged": Key("bool", "true or false"),
    "cap_add": Key("list", "a list of capabilities like [NET_ADMIN]", security.parse_capability),
    "cap_drop": Key("list", "a list of capabilities like [ALL]", security.parse_capability),
    "read_only": Key("bool", "true or false"),
    "tmpfs": Key("list", "a list of PATH[:OPTIONS] like /run:size=64m", mounts.parse_tmpfs),
    "shm_size": Key("scalar", "a size like 64m", quantities.parse_size),
    "hostname": Key("scalar", "a host name like worker-1", names.validate_hostname),
    "add_host": Key("list", "a list of HOST:IP strings", network.parse_add_host),
    "dns": Key("list", "a list of IP addresses", network.parse_dns_ip),
    "dns_search": Key("list", "a list of domains", network.parse_dns_search),
    "dns_options": Key(
        "list", "a list of resolv.conf options like [ndots:2]", network.parse_dns_option
    ),
    "group_add": Key("list", "a list of numeric group IDs like [1000]", security.parse_group_id),
    "sysctls": Key(
        "list", "a list of KEY=VALUE strings like [net.ipv4.ip_forward=1]", security.parse_sysctl
    ),
    "stop_timeout": Key("scalar", "a whole number of seconds", quantities.parse_nonnegative_int),
    "runtime": Key("scalar", "a RuntimeClass name", names.validate_subdomain),
    "service_account": Key("scalar", "a service account name", names.validate_subdomain),
    "node_selector": Key("map", PAIR_FORM),
    "tolerations": Key("list", "a list of KEY[=VALUE]:EFFECT strings", names.parse_toleration),
    "image_pull_secrets": Key("list", "a list of secret names", names.validate_subdomain),
    "priority_class": Key("scalar", "a PriorityClass name", names.validate_subdomain),
    # Files in and out (-v/--mount with a local path; docs/decisions/0180).
    "files_helper_image": Key(
        "scalar",
        "an image with sh and tar, like busybox:1.36.1 (pin it by digest; the default is "
        f"{filehelpers.DEFAULT_HELPER_IMAGE})",
        images.parse_image_reference,
    ),
    "max_upload_bytes": Key("scalar", "a size like 1g or 512m", mounts.parse_upload_limit),
}
KUBERNETES_KEYS = ("metadata", "spec", "patches")
PATH_KEYS = ("env_file", "kubeconfig")
ALL_KEYS = (*KEYS, "kubernetes")

DEFAULTS: dict[str, Any] = {
    "mode": "pod",
    "timeout": 300.0,
    "cleanup": True,
    "orphan_sweep": True,
    "orphan_sweep_min_age": 300,
    "orphan_sweep_silence": 120.0,
    "job_ttl_seconds_after_finished": 600,
}
DEFAULT_DISPLAY = {**DEFAULTS, "timeout": 300, "orphan_sweep_silence": 120}

# Keys people try that are not keys, and what to do instead.
NOT_KEYS = {
    "keep": "use `cleanup: false` to keep resources",
    "name": "a fixed name would make two runs collide; pass --name on the command line",
    "rm": "deleting is already the default; `cleanup: false` keeps resources",
    "image": "the image is the first argument of `run`",
    "command": "the command follows IMAGE on the command line; `entrypoint` is a key",
    "dry_run": "pass --dry-run on the command line",
    "config": "list more files in $SQUAREPEG_CONFIG or with --config",
    "volume": "mounts are given on the command line (-v, --mount); a config file adds a volume "
    "and its volumeMount under `kubernetes.spec`",
    "mount": "mounts are given on the command line (-v, --mount); a config file adds a volume "
    "and its volumeMount under `kubernetes.spec`",
}

PATCH_OPS = ("add", "remove", "replace", "move", "copy", "test")
PATCH_MEMBERS = ("op", "path", "value", "from")

def suggest(key: str, known: Iterable[str] = ALL_KEYS, fallback: str | None = None) -> str:
    if key in NOT_KEYS:
        return NOT_KEYS[key]
    refused = dockerflags.BY_NAME.get("--" + key.replace("_", "-"))
    if known is ALL_KEYS and refused is not None and refused.status == "refused":
        # A docker flag squarepeg refuses gets the same answer as on the command line.
        return f"docker's {'/'.join(refused.names)} is refused: {refused.meaning}; {refused.note}"
    candidates = list(known)
    import difflib  # only for the error path

    match = difflib.get_close_matches(key.replace("-", "_").lower(), candidates, n=1, cutoff=0.6)
    if match:
        return f"did you mean {match[0]!r}?"
    return fallback or (
        "remove it; the keys are the long names of `run` flags in snake_case "
        "(`kubectl squarepeg config view` shows the merged ones)"
    )
