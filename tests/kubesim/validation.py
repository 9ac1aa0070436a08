"""Validation as the apiserver does it, in its two stages.

Decoding (`decode`): the object against the real OpenAPI-derived JSON schemas that the
`kubernetes-validate` package ships (v1.32): JSON types (a mismatch is the 400 `cannot be
handled as a Pod: json: cannot unmarshal ...`), quantities, and unknown fields, which per
`fieldValidation` are a 400 `strict decoding error: unknown field "spec.foo"` (Strict), a
warning (Warn, the default) or silently dropped (Ignore). Duplicate JSON keys count as
unknown-field problems too (`duplicate field "x"`).

Validation (`validate`): the 422 causes, worded as `field.Error` words them: required
fields from the schema, names (RFC 1123), label keys and values, container names and
images, restart policies, resource requests against limits, volume mounts, Job rules, and
what an update may not change. Nothing here does I/O beyond reading the schema files once.
"""

from __future__ import annotations

import importlib.resources
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

from tests.kubesim import apierrors
from tests.kubesim.apierrors import Cause
from tests.kubesim.quantities import QuantityError, parse_quantity

Obj = dict[str, Any]

SCHEMA_VERSION = "v1.32.0-local-strict"

DEFINITIONS = {
    "pods": "io.k8s.api.core.v1.Pod",
    "events": "io.k8s.api.core.v1.Event",
    "namespaces": "io.k8s.api.core.v1.Namespace",
    "nodes": "io.k8s.api.core.v1.Node",
    "resourcequotas": "io.k8s.api.core.v1.ResourceQuota",
    "jobs": "io.k8s.api.batch.v1.Job",
    "eviction": "io.k8s.api.policy.v1.Eviction",
    "deleteoptions": "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
}

QUANTITY_REF = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING_REF = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY_MESSAGE = (
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)

_lock = threading.Lock()
_defs: dict[str, Obj] | None = None


def definitions() -> dict[str, Obj]:
    """The `$defs` of the v1.32 strict schemas, loaded once (about 1.3 MB of JSON)."""
    global _defs
    with _lock:
        if _defs is None:
            root = importlib.resources.files("kubernetes_validate").joinpath(
                "kubernetes-json-schema", SCHEMA_VERSION, "_definitions.json")
            _defs = json.loads(root.read_text(encoding="utf-8"))["$defs"]
        return _defs


def _ref_name(node: Obj) -> str | None:
    ref = node.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def _types(node: Obj) -> list[str]:
    kind = node.get("type")
    if kind is None:
        return []
    return [kind] if isinstance(kind, str) else list(kind)


def _go_type(node: Obj) -> str:
    name = _ref_name(node)
    if name is not None:
        if name == QUANTITY_REF:
            return "resource.Quantity"
        if name == INT_OR_STRING_REF:
            return "intstr.IntOrString"
        parts = name.split(".")
        return f"{parts[-2]}.{parts[-1]}"
    types = [t for t in _types(node) if t != "null"]
    kind = types[0] if types else "object"
    if kind == "array":
        return "[]" + _go_type(node.get("items") or {})
    if kind == "object":
        extra = node.get("additionalProperties")
        return "map[string]" + (_go_type(extra) if isinstance(extra, dict) else "interface {}")
    if kind == "integer":
        return {"int32": "int32", "int64": "int64"}.get(node.get("format", ""), "int")
    return {"string": "string", "boolean": "bool", "number": "float64"}[kind]


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(value: Any, types: list[str]) -> bool:
    if value is None or not types:
        return True
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        return "integer" in types or "number" in types
    if isinstance(value, float):
        return "number" in types or ("integer" in types and value.is_integer())
    if isinstance(value, str):
        return "string" in types
    if isinstance(value, list):
        return "array" in types
    return "object" in types


class DecodeError(Exception):
    """The object cannot be decoded into its Go type (a 400 BadRequest)."""


class Duplicates(dict[str, Any]):
    """A JSON object that remembers keys it saw twice (strict decoding rejects them)."""

    duplicates: list[str]


def object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json.loads(object_pairs_hook=...)`: keeps the last value, notes duplicate keys."""
    out: dict[str, Any] = {}
    dups: list[str] = []
    for key, value in pairs:
        if key in out:
            dups.append(key)
        out[key] = value
    if dups:
        marked = Duplicates(out)
        marked.duplicates = dups
        return marked
    return out


class _Walk:
    """One pass over an object against its schema: unknown fields, types, quantities."""

    def __init__(self, drop_unknown: bool):
        self.defs = definitions()
        self.unknown: list[str] = []
        self.drop_unknown = drop_unknown

    def node(self, value: Any, schema: Obj, path: str, bare: str, struct: str) -> None:
        name = _ref_name(schema)
        if name is not None:
            if name == QUANTITY_REF:
                self._quantity(value, path, bare, struct)
                return
            if name == INT_OR_STRING_REF:
                if (value is not None and not isinstance(value, (str, int))) or \
                        isinstance(value, bool):
                    self._mismatch(value, schema, bare, struct)
                return
            target = self.defs.get(name, {})
            self.node(value, target, path, bare, name.rsplit(".", 1)[-1])
            return
        types = _types(schema)
        if not _type_ok(value, types):
            self._mismatch(value, schema, bare, struct)
        if isinstance(value, dict):
            self._object(value, schema, path, bare, struct)
        elif isinstance(value, list):
            items = schema.get("items")
            if isinstance(items, dict):
                for i, item in enumerate(value):
                    self.node(item, items, f"{path}[{i}]", bare, struct)

    def _object(self, value: Obj, schema: Obj, path: str, bare: str, struct: str) -> None:
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        if isinstance(value, Duplicates):
            for key in value.duplicates:
                self.unknown.append(f'duplicate field "{_join(path, key)}"')
        for key in list(value):
            sub_path, sub_bare = _join(path, key), _join(bare, key)
            if isinstance(props, dict) and key in props:
                self.node(value[key], props[key], sub_path, sub_bare, struct)
            elif isinstance(extra, dict):
                self.node(value[key], extra, sub_path, sub_bare, struct)
            elif props is not None or extra is False:
                self.unknown.append(f'unknown field "{sub_path}"')
                if self.drop_unknown:
                    del value[key]

    def _quantity(self, value: Any, path: str, bare: str, struct: str) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise DecodeError(QUANTITY_MESSAGE)
        try:
            parse_quantity(str(value))
        except QuantityError as exc:
            raise DecodeError(QUANTITY_MESSAGE) from exc

    def _mismatch(self, value: Any, schema: Obj, bare: str, struct: str) -> None:
        raise DecodeError(
            f"json: cannot unmarshal {_json_type(value)} into Go struct field "
            f"{struct}.{bare} of type {_go_type(schema)}"
        )


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def decode(resource: str, obj: Obj, kind: str, api_version: str, field_validation: str) -> \
        list[str]:
    """Check `obj` as the decoder would. Returns the warnings for fieldValidation=Warn;
    raises ApiError 400 for a type error, or for unknown fields under Strict. Unknown fields
    are removed from `obj` unless Strict failed."""
    definition = DEFINITIONS.get(resource)
    if definition is None:
        return []
    walk = _Walk(drop_unknown=field_validation != "Strict")
    prefix = f'{kind} in version "{api_version.rsplit("/", 1)[-1]}" cannot be handled as a ' \
             f"{kind}: "
    try:
        walk.node(obj, {"$ref": f"#/$defs/{definition}"}, "", "", kind)
    except DecodeError as exc:
        raise apierrors.bad_request(prefix + str(exc)) from exc
    if not walk.unknown:
        return []
    if field_validation == "Strict":
        raise apierrors.bad_request(prefix + "strict decoding error: " + ", ".join(walk.unknown))
    if field_validation == "Ignore":
        return []
    return walk.unknown


# --- the 422 validation ---------------------------------------------------------------------

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")

LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
             "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
QUALIFIED_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                 "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
                 "or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, "
             "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
             "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
             "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
ENV_MSG = ("a valid environment variable name must consist of alphabetic characters, digits, "
           "'_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or "
           "'MY_ENV.NAME',  or 'MyEnvName1', regex used for validation is "
           "'[-._a-zA-Z][-._a-zA-Z0-9]*')")


def dns_label(path: str, value: str) -> list[Cause]:
    causes = []
    if len(value) > 63:
        causes.append(apierrors.invalid(path, value, "must be no more than 63 characters"))
    if not _DNS1123_LABEL.match(value):
        causes.append(apierrors.invalid(path, value, LABEL_MSG))
    return causes


def dns_subdomain(path: str, value: str) -> list[Cause]:
    causes = []
    if len(value) > 253:
        causes.append(apierrors.invalid(path, value, "must be no more than 253 characters"))
    if not _DNS1123_SUBDOMAIN.match(value):
        causes.append(apierrors.invalid(path, value, SUBDOMAIN_MSG))
    return causes


def qualified_name(path: str, key: str) -> list[Cause]:
    """A label or annotation key: an optional DNS subdomain prefix and a name part."""
    prefix, _, name = key.rpartition("/")
    causes = []
    if "/" in key and (not prefix or not _DNS1123_SUBDOMAIN.match(prefix)):
        causes.append(apierrors.invalid(path, key, "prefix part " + SUBDOMAIN_MSG))
    if not name:
        causes.append(apierrors.invalid(path, key, "name part must be non-empty"))
    else:
        if len(name) > 63:
            causes.append(apierrors.invalid(path, key,
                                            "name part must be no more than 63 characters"))
        if not _QUALIFIED_NAME.match(name):
            causes.append(apierrors.invalid(path, key, QUALIFIED_MSG))
    return causes


def label_value(path: str, value: str) -> list[Cause]:
    causes = []
    if len(value) > 63:
        causes.append(apierrors.invalid(path, value, "must be no more than 63 characters"))
    if not _LABEL_VALUE.match(value):
        causes.append(apierrors.invalid(path, value, VALUE_MSG))
    return causes


def _metadata(resource: str, meta: Obj, namespaced: bool) -> Iterator[Cause]:
    name = meta.get("name")
    if not name:
        if not meta.get("generateName"):
            yield apierrors.required("metadata.name", "name or generateName is required")
    elif resource == "namespaces":
        yield from dns_label("metadata.name", name)
    elif resource != "events":
        yield from dns_subdomain("metadata.name", name)
    if namespaced and not meta.get("namespace"):
        yield apierrors.required("metadata.namespace")
    for key, value in (meta.get("labels") or {}).items():
        yield from qualified_name("metadata.labels", key)
        yield from label_value("metadata.labels", value if isinstance(value, str) else "")
    annotations = meta.get("annotations") or {}
    for key in annotations:
        yield from qualified_name("metadata.annotations", key.lower())
    size = sum(len(k) + len(str(v)) for k, v in annotations.items())
    if size > 256 * 1024:
        yield apierrors.too_long("metadata.annotations", 256 * 1024)


def _required(value: Any, schema: Obj, path: str, defs: dict[str, Obj]) -> Iterator[Cause]:
    """Fields the schema marks required, at every level (`spec.containers: Required value`)."""
    name = _ref_name(schema)
    if name is not None:
        if name in (QUANTITY_REF, INT_OR_STRING_REF):
            return
        schema = defs.get(name, {})
    if isinstance(value, dict):
        for key in schema.get("required") or []:
            if value.get(key) in (None, "", [], {}) and key not in ("metadata",):
                yield apierrors.required(_join(path, key))
        props = schema.get("properties") or {}
        for key, sub in value.items():
            if key in props and key != "status":
                yield from _required(sub, props[key], _join(path, key), defs)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from _required(item, schema["items"], f"{path}[{i}]", defs)


def _resources(path: str, resources: Obj) -> Iterator[Cause]:
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    for name, value in requests.items():
        if name in limits:
            try:
                over = parse_quantity(str(value)) > parse_quantity(str(limits[name]))
            except QuantityError:
                continue
            if over:
                yield apierrors.invalid(f"{path}.requests", str(value),
                                        f"must be less than or equal to {name} limit of "
                                        f"{limits[name]}")
    for kind, values in (("limits", limits), ("requests", requests)):
        for name, value in values.items():
            try:
                negative = parse_quantity(str(value)) < 0
            except QuantityError:
                continue
            if negative:
                yield apierrors.invalid(f"{path}.{kind}[{name}]", str(value),
                                        "must be greater than or equal to 0")


def _containers(path: str, containers: list[Any], volumes: set[str],
                seen: set[str]) -> Iterator[Cause]:
    for i, c in enumerate(containers):
        if not isinstance(c, dict):
            continue
        here = f"{path}[{i}]"
        name = c.get("name")
        if isinstance(name, str) and name:
            yield from dns_label(f"{here}.name", name)
            if name in seen:
                yield apierrors.duplicate(f"{here}.name", name)
            seen.add(name)
        if not c.get("image"):
            yield apierrors.required(f"{here}.image")
        policy = c.get("imagePullPolicy")
        if policy is not None and policy not in ("Always", "IfNotPresent", "Never"):
            yield apierrors.unsupported(f"{here}.imagePullPolicy", policy,
                                        ["Always", "IfNotPresent", "Never"])
        message_policy = c.get("terminationMessagePolicy")
        if message_policy is not None and message_policy not in ("File",
                                                                 "FallbackToLogsOnError"):
            yield apierrors.unsupported(f"{here}.terminationMessagePolicy", message_policy,
                                        ["File", "FallbackToLogsOnError"])
        for j, env in enumerate(c.get("env") or []):
            env_name = env.get("name") if isinstance(env, dict) else None
            if isinstance(env_name, str) and env_name and not _ENV_NAME.match(env_name):
                yield apierrors.invalid(f"{here}.env[{j}].name", env_name, ENV_MSG)
        for j, mount in enumerate(c.get("volumeMounts") or []):
            mount_name = mount.get("name") if isinstance(mount, dict) else None
            if isinstance(mount_name, str) and mount_name and mount_name not in volumes:
                yield Cause("FieldValueNotFound", f"{here}.volumeMounts[{j}].name",
                            f'Not found: "{mount_name}"')
        for j, port in enumerate(c.get("ports") or []):
            number = port.get("containerPort") if isinstance(port, dict) else None
            if isinstance(number, int) and not 0 < number < 65536:
                yield apierrors.invalid(f"{here}.ports[{j}].containerPort", number,
                                        "must be between 1 and 65535, inclusive")
        if isinstance(c.get("resources"), dict):
            yield from _resources(f"{here}.resources", c["resources"])


def pod_spec(path: str, spec: Obj, *, restart_policies: tuple[str, ...]) -> Iterator[Cause]:
    volumes: set[str] = set()
    for i, volume in enumerate(spec.get("volumes") or []):
        name = volume.get("name") if isinstance(volume, dict) else None
        if isinstance(name, str) and name:
            yield from dns_label(f"{path}.volumes[{i}].name", name)
            if name in volumes:
                yield apierrors.duplicate(f"{path}.volumes[{i}].name", name)
            volumes.add(name)
    seen: set[str] = set()
    if not spec.get("containers"):
        pass  # the schema's required check reports it
    else:
        yield from _containers(f"{path}.containers", spec["containers"], volumes, seen)
    yield from _containers(f"{path}.initContainers", spec.get("initContainers") or [], volumes,
                           seen)
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in restart_policies:
        yield apierrors.unsupported(f"{path}.restartPolicy", policy, list(restart_policies))
    dns = spec.get("dnsPolicy")
    supported_dns = ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]
    if dns is not None and dns not in supported_dns:
        yield apierrors.unsupported(f"{path}.dnsPolicy", dns, supported_dns)
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0:
        yield apierrors.invalid(f"{path}.terminationGracePeriodSeconds", grace,
                                "must be greater than or equal to 0")
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and deadline <= 0:
        yield apierrors.invalid(f"{path}.activeDeadlineSeconds", deadline,
                                "must be between 1 and 2147483647, inclusive")
    for key, value in (spec.get("nodeSelector") or {}).items():
        yield from qualified_name(f"{path}.nodeSelector", key)
        yield from label_value(f"{path}.nodeSelector", value if isinstance(value, str) else "")


def _job(spec: Obj, meta: Obj) -> Iterator[Cause]:
    for key in ("parallelism", "completions", "backoffLimit", "ttlSecondsAfterFinished"):
        value = spec.get(key)
        if isinstance(value, int) and value < 0:
            yield apierrors.invalid(f"spec.{key}", value, "must be greater than or equal to 0")
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and deadline <= 0:
        yield apierrors.invalid("spec.activeDeadlineSeconds", deadline,
                                "must be greater than 0")
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        yield apierrors.unsupported("spec.completionMode", mode, ["NonIndexed", "Indexed"])
    name = meta.get("name")
    if isinstance(name, str) and len(name) > 63:
        yield apierrors.invalid("metadata.name", name, "must be no more than 63 characters")
    template = spec.get("template") or {}
    tspec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(tspec, dict):
        if tspec.get("restartPolicy") in (None, "Always"):
            policy = tspec.get("restartPolicy")
            if policy is None:
                yield apierrors.required("spec.template.spec.restartPolicy",
                                         'valid values: "OnFailure", "Never"')
            else:
                yield apierrors.unsupported("spec.template.spec.restartPolicy", policy,
                                            ["OnFailure", "Never"])
        yield from pod_spec("spec.template.spec", tspec,
                            restart_policies=("Always", "OnFailure", "Never"))
    labels = (template.get("metadata") or {}).get("labels") or {} \
        if isinstance(template, dict) else {}
    for key, value in labels.items():
        yield from qualified_name("spec.template.metadata.labels", key)
        yield from label_value("spec.template.metadata.labels",
                               value if isinstance(value, str) else "")
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        yield apierrors.invalid("spec.template.metadata.labels", labels,
                                "`selector` does not match template `labels`")


def validate(resource: str, obj: Obj, namespaced: bool) -> list[Cause]:
    """The 422 causes of a new object (empty when it is valid)."""
    causes: list[Cause] = []
    meta = obj.get("metadata") or {}
    causes += _metadata(resource, meta, namespaced)
    definition = DEFINITIONS.get(resource)
    if definition is not None:
        causes += _required(obj, {"$ref": f"#/$defs/{definition}"}, "", definitions())
    spec = obj.get("spec")
    if resource == "pods" and isinstance(spec, dict):
        causes += pod_spec("spec", spec, restart_policies=("Always", "OnFailure", "Never"))
    elif resource == "jobs" and isinstance(spec, dict):
        causes += _job(spec, meta)
    return causes


# Fields of a running pod's spec that an update may change (ValidatePodUpdate).
POD_UPDATE_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)
JOB_MUTABLE = ("parallelism", "activeDeadlineSeconds", "suspend", "backoffLimit",
               "ttlSecondsAfterFinished", "completions", "backoffLimitPerIndex",
               "maxFailedIndexes", "podFailurePolicy", "managedBy", "successPolicy")


def _pod_spec_without_mutable(spec: Obj) -> Obj:
    out = {k: v for k, v in spec.items()
           if k not in ("activeDeadlineSeconds", "tolerations")}
    for key in ("containers", "initContainers"):
        if isinstance(out.get(key), list):
            out[key] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict)
                        else c for c in out[key]]
    return out


def validate_update(resource: str, old: Obj, new: Obj) -> list[Cause]:
    """The 422 causes of changing `old` into `new` (spec immutability)."""
    causes: list[Cause] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if resource == "pods" and old_spec != new_spec:
        if _pod_spec_without_mutable(old_spec) != _pod_spec_without_mutable(new_spec):
            causes.append(apierrors.forbidden("spec", POD_UPDATE_MESSAGE))
    elif resource == "jobs":
        for key in sorted(set(old_spec) | set(new_spec)):
            if key in JOB_MUTABLE or old_spec.get(key) == new_spec.get(key):
                continue
            path = f"spec.{key}"
            causes.append(apierrors.invalid(path, new_spec.get(key), "field is immutable"))
    old_ns = (old.get("metadata") or {}).get("namespace")
    if old_ns != (new.get("metadata") or {}).get("namespace"):
        causes.append(apierrors.invalid("metadata.namespace",
                                        (new.get("metadata") or {}).get("namespace"),
                                        "field is immutable"))
    return causes
