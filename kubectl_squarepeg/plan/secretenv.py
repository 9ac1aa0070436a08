"""Pure: the run's Secret of environment values, and the main container's references to it.

Owns which values are secret (`--secret-env`, and with the config key `secret_env_all` every
`-e` and `--env-file` value too), the Secret's name, labels and data, and the rewrite of the
main container's `env` so that it holds only `valueFrom.secretKeyRef`, never a value. What
creates the Secret, makes the Pod or Job its owner and sweeps one left unowned is
run/create.py's and run/sweep.py's (decision 0361). Nothing here prints a value: a
problem names the key only (decision 0026).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from kubectl_squarepeg.plan.values import ValueProblem, parse_env_item

# What the API server takes as a Secret's data key (IsConfigMapKey).
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")
MAX_SECRET_KEY = 253


def parse_secret_env(text: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """`KEY=VALUE`, or a bare `KEY` that takes squarepeg's own environment's value. Unlike a
    bare `-e KEY`, an unset KEY is an error: a secret silently left out fails later, inside
    the container, far from its cause."""
    key = text.partition("=")[0]
    check_key(key)
    item = parse_env_item(text, environ)
    if item is None:
        raise ValueProblem(f"{key} is not set in your environment; export it, or give {key}=VALUE")
    return item


def check_key(key: str) -> None:
    if not _SECRET_KEY.fullmatch(key) or len(key) > MAX_SECRET_KEY:
        raise ValueProblem(
            f"{key!r} cannot be a Secret's key: letters, digits, '-', '_' and '.' only"
        )


def secret_values(env: Mapping[str, str], secret_env: Mapping[str, str],
                  secret_env_all: bool) -> dict[str, str]:
    """The values the run's Secret holds, by variable name: `--secret-env`'s, and every
    env value when `secret_env_all` is on (a `--secret-env` wins over `-e` of the same key)."""
    chosen = dict(env) if secret_env_all else {}
    chosen.update(secret_env)
    return chosen


def secret_name(pod_name: str, run_id: str) -> str:
    """The run's own: a rerun of the same `--name` must not meet the Secret of a run whose
    garbage collection is still under way."""
    return f"{pod_name}-env-{run_id.replace('-', '')[:8]}"


def secret_manifest(
    values: Mapping[str, str], *, name: str, namespace: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    data = {
        key: base64.b64encode(value.encode("utf-8", "surrogateescape")).decode("ascii")
        for key, value in values.items()
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "type": "Opaque",
        "data": data,
    }


def refer(container: dict[str, Any], keys: Mapping[str, str], secret: str) -> None:
    """The container's `env` with every secret key read from `secret`: a plain entry of the
    same name is replaced where it stands, the others are added after, in the order given."""
    def reference(key: str) -> dict[str, Any]:
        return {"name": key, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}

    env = [
        reference(entry["name"]) if entry.get("name") in keys else entry
        for entry in container.get("env", [])
    ]
    present = {entry.get("name") for entry in env}
    env += [reference(key) for key in keys if key not in present]
    container["env"] = env


def owner_patch(kind: str, name: str, uid: str) -> dict[str, Any]:
    """The merge patch that makes the run's Pod or Job the Secret's owner, so that the
    cluster's garbage collector deletes the Secret with it (and keeps it while it is kept)."""
    api_version = "batch/v1" if kind == "Job" else "v1"
    owner = {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}
    return {"metadata": {"ownerReferences": [owner]}}
