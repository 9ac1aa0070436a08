"""The configuration keys: each key's kind, accepted form and parser (the same parsers as
the flags), the built-in defaults, the names people try that are not keys, and the
did-you-mean for a key that is not known.

The key of a flag is declared in the flag's row (plan/dockerflags.py) and made into `KEYS`,
`DEFAULTS` and `PATH_KEYS` here; the keys without a flag are declared here (`OWN_KEYS`).
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
    quantities,
)


@dataclass(frozen=True)
class Key:
    kind: str  # "scalar", "bool", "map" or "list"
    form: str  # the accepted form, for errors
    parse: Callable[[str], Any] = str


PAIR_FORM = dockerflags.PAIR_FORM

# The keys of `run`'s flags come from the flag table (plan/dockerflags.py): kind, form,
# parser, default and whether the value is a file path are declared in a flag's row.
FLAG_KEYS: dict[str, Key] = {
    flag.key_name: Key(flag.key.kind, flag.key.form, flag.parse or str)
    for flag in dockerflags.FLAGS
    if flag.key is not None and flag.key_name is not None
}
# The keys without a flag.
OWN_KEYS: dict[str, Key] = {
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
    # Every -e/--env-file value through the run's Secret, as --secret-env (decision 0361).
    "secret_env_all": Key("bool", "true or false"),
    # Files in and out (-v/--mount with a local path; docs/decisions/0180).
    "files_helper_image": Key(
        "scalar",
        "an image with sh and tar, like busybox:1.36.1 (pin it by digest; the default is "
        f"{filehelpers.DEFAULT_HELPER_IMAGE})",
        images.parse_image_reference,
    ),
    "max_upload_bytes": Key("scalar", "a size like 1g or 512m", mounts.parse_upload_limit),
}
# `config view`'s order: where and how a run goes, what happens after it, then the other
# flags' keys in `run --help`'s order, then the files' keys.
_FIRST = (
    "mode", "timeout", "namespace", "context", "kubeconfig",
    "cleanup", "orphan_sweep", "orphan_sweep_min_age", "orphan_sweep_silence",
    "job_ttl_seconds_after_finished", "quiet",
)  # fmt: skip
_LAST = ("files_helper_image", "max_upload_bytes")
_ALL = {**FLAG_KEYS, **OWN_KEYS}
KEYS: dict[str, Key] = {
    key: _ALL[key] for key in (*_FIRST, *(k for k in _ALL if k not in (*_FIRST, *_LAST)), *_LAST)
}
KUBERNETES_KEYS = ("metadata", "spec", "patches")
PATH_KEYS = tuple(
    flag.key_name for flag in dockerflags.FLAGS if flag.key is not None and flag.key.path
)
ALL_KEYS = (*KEYS, "kubernetes")

DEFAULTS: dict[str, Any] = {
    **{
        flag.key_name: flag.key.default
        for flag in dockerflags.FLAGS
        if flag.key is not None and flag.key_name is not None and flag.key.default is not None
    },
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
    "secret_env": "a value in a config file is no secret; use --secret-env on the command "
    "line, or `secret_env_all: true` with `env`",
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
