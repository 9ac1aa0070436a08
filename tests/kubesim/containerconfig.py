"""What a container runs with: its argv and its environment, resolved as the kubelet does.

Owns, as pure functions:
- argv: `command` replaces the image ENTRYPOINT and `args` replace its CMD; `command` without
  `args` drops CMD; `args` alone run after ENTRYPOINT. `$(VAR)` in command and args expands
  to the container's env (`$$` escapes, unknown references stay as written).
- env: the host's PATH and HOME stand in for the image's ENV, then HOSTNAME and the
  `kubernetes` service variables, then `envFrom`, then `env` in order (`$(VAR)` expanding to
  what is defined before). `valueFrom`: secretKeyRef and configMapKeyRef (a missing Secret or
  ConfigMap that is not `optional` is the kubelet's CreateContainerConfigError, with its
  message), fieldRef (metadata.name/namespace/uid/labels/annotations, spec.nodeName,
  spec.serviceAccountName, status.podIP/hostIP) and resourceFieldRef.

Secrets and ConfigMaps come from the scenario (`secrets`, `configmaps`): per namespace either
a list of names (every key exists, with the value "") or a mapping name -> {key: value}.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from typing import Any

from tests.kubesim.quantities import QuantityError, parse_cpu, parse_memory

Obj = dict[str, Any]

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class ConfigError(Exception):
    """The container cannot be configured: str() is the kubelet's message."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes `$(VAR)` expansion."""
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)
    return _REFERENCE.sub(replace, text)


def resolve_argv(container: Obj, entrypoint: list[str], cmd: list[str],
                 env: Mapping[str, str]) -> list[str]:
    """The process argv for `container` on an image with `entrypoint` and `cmd`."""
    command = container.get("command")
    args = container.get("args")
    if command:
        argv = [*command, *(args or [])]
    elif args:
        argv = [*entrypoint, *args]
    else:
        argv = [*entrypoint, *cmd]
    return [expand(str(a), env) for a in argv]


def _source(kind: str, store: Mapping[str, Any], namespace: str,
            name: str) -> dict[str, str] | None:
    """The data of a Secret or ConfigMap in the scenario; None when it does not exist."""
    entries = store.get(namespace)
    if entries is None:
        return None
    if isinstance(entries, Mapping):
        if name not in entries:
            return None
        return {str(k): str(v) for k, v in (entries[name] or {}).items()}
    return {} if name in entries else None


def _key_value(kind: str, data: dict[str, str], namespace: str, name: str, key: str,
               known_keys: bool) -> str:
    if key in data or not known_keys:
        return data.get(key, "")
    label = "Secret" if kind == "secret" else "ConfigMap"
    raise ConfigError(f"couldn't find key {key} in {label} {namespace}/{name}")


def _has_data(store: Mapping[str, Any], namespace: str) -> bool:
    return isinstance(store.get(namespace), Mapping)


def _field(pod: Obj, path: str) -> str:
    meta = pod.get("metadata", {})
    spec = pod.get("spec", {})
    status = pod.get("status", {})
    match = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if match:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    values = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
        "status.podIPs": status.get("podIP"),
        "status.hostIPs": status.get("hostIP"),
    }
    return str(values.get(path) or "")


def _resource_field(pod: Obj, container: Obj, ref: Obj, node_allocatable: Mapping[str, str]) -> str:
    name = ref.get("containerName") or container.get("name")
    target = next((c for c in pod.get("spec", {}).get("containers") or []
                   if c.get("name") == name), container)
    kind, _, resource = str(ref.get("resource", "")).partition(".")
    values = ((target.get("resources") or {}).get(kind) or {})
    raw = values.get(resource)
    if raw is None and kind == "requests":
        raw = ((target.get("resources") or {}).get("limits") or {}).get(resource)
    if raw is None:
        raw = node_allocatable.get(resource, "0") if kind == "limits" else "0"
    divisor = str(ref.get("divisor") or "1")
    try:
        if resource == "cpu":
            return str(math.ceil(parse_cpu(str(raw)) / (parse_cpu(divisor) or 1.0)))
        return str(math.ceil(parse_memory(str(raw)) / (parse_memory(divisor) or 1)))
    except QuantityError:
        return "0"


def build_env(pod: Obj, container: Obj, *, secrets: Mapping[str, Any],
              configmaps: Mapping[str, Any], node_allocatable: Mapping[str, str]) -> dict[str, str]:
    """The container's environment (see the module docstring); raises ConfigError."""
    namespace = pod.get("metadata", {}).get("namespace") or "default"
    env: dict[str, str] = {}
    for name in ("PATH", "HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    env["HOSTNAME"] = str(pod.get("metadata", {}).get("name", ""))
    # The kubernetes service's variables are there even with enableServiceLinks: false.
    env.update({
        "KUBERNETES_SERVICE_HOST": "10.96.0.1",
        "KUBERNETES_SERVICE_PORT": "443",
        "KUBERNETES_SERVICE_PORT_HTTPS": "443",
        "KUBERNETES_PORT": "tcp://10.96.0.1:443",
        "KUBERNETES_PORT_443_TCP": "tcp://10.96.0.1:443",
        "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_443_TCP_PORT": "443",
        "KUBERNETES_PORT_443_TCP_ADDR": "10.96.0.1",
    })
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        for kind, field, store in (("configmap", "configMapRef", configmaps),
                                   ("secret", "secretRef", secrets)):
            ref = source.get(field)
            if not ref:
                continue
            data = _source(kind, store, namespace, str(ref.get("name", "")))
            if data is None:
                if ref.get("optional"):
                    continue
                raise ConfigError(f'{kind} "{ref.get("name", "")}" not found')
            for key, value in data.items():
                env[prefix + key] = value
    for var in container.get("env") or []:
        name = str(var.get("name", ""))
        if "valueFrom" not in var:
            env[name] = expand(str(var.get("value") or ""), env)
            continue
        source = var["valueFrom"] or {}
        for kind, field, store in (("secret", "secretKeyRef", secrets),
                                   ("configmap", "configMapKeyRef", configmaps)):
            ref = source.get(field)
            if not ref:
                continue
            ref_name = str(ref.get("name", ""))
            data = _source(kind, store, namespace, ref_name)
            if data is None:
                if ref.get("optional"):
                    break
                raise ConfigError(f'{kind} "{ref_name}" not found')
            try:
                env[name] = _key_value(kind, data, namespace, ref_name, str(ref.get("key", "")),
                                       _has_data(store, namespace))
            except ConfigError:
                if ref.get("optional"):
                    break
                raise
            break
        else:
            if source.get("fieldRef"):
                env[name] = _field(pod, str(source["fieldRef"].get("fieldPath", "")))
            elif source.get("resourceFieldRef"):
                env[name] = _resource_field(pod, container, source["resourceFieldRef"],
                                            node_allocatable)
    return env


def working_dir(container: Obj, scratch: str) -> str:
    """The container's workingDir when that directory exists on this host, else `scratch`."""
    wanted = container.get("workingDir")
    if wanted and os.path.isdir(wanted):
        return str(wanted)
    return scratch
