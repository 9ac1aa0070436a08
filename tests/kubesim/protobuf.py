"""Request bodies in Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) as dicts.

kubectl's typed clients (`kubectl create namespace`, `create job`, `create quota`) send
protobuf and accept JSON back, and client-go does not fall back to JSON on a 415. This
decodes the envelope (`k8s\\x00` + runtime.Unknown) and the messages those commands send,
by the field numbers of k8s.io/api's generated.proto: ObjectMeta, Namespace, Pod (spec and
containers), Job, ResourceQuota. Fields outside these tables are dropped; go-to-protobuf
writes every non-pointer field, so zero values of non-pointer fields are dropped too, as
JSON's `omitempty` would. Nothing here does I/O.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from tests.kubesim import apierrors

Obj = dict[str, Any]
MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# Field tables: number -> (json name, kind). Kinds: "str", "int", "ptrint", "bool",
# "ptrbool", "strs" (repeated string), "map" (string->string), "qmap" (string->Quantity),
# "time", or a message table name, with a trailing "*" for a repeated message.
TABLES: dict[str, dict[int, tuple[str, str]]] = {
    "TypeMeta": {1: ("apiVersion", "str"), 2: ("kind", "str")},
    "ObjectMeta": {1: ("name", "str"), 2: ("generateName", "str"), 3: ("namespace", "str"),
                   5: ("uid", "str"), 6: ("resourceVersion", "str"),
                   10: ("deletionGracePeriodSeconds", "ptrint"), 11: ("labels", "map"),
                   12: ("annotations", "map"), 13: ("ownerReferences", "OwnerReference*"),
                   14: ("finalizers", "strs")},
    "OwnerReference": {1: ("kind", "str"), 3: ("name", "str"), 4: ("uid", "str"),
                       5: ("apiVersion", "str"), 6: ("controller", "ptrbool"),
                       7: ("blockOwnerDeletion", "ptrbool")},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "strs")},
    "ResourceQuota": {1: ("metadata", "ObjectMeta"), 2: ("spec", "ResourceQuotaSpec")},
    "ResourceQuotaSpec": {1: ("hard", "qmap"), 2: ("scopes", "strs")},
    "Pod": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodSpec")},
    "PodTemplateSpec": {1: ("metadata", "ObjectMeta"), 2: ("spec", "PodSpec")},
    "PodSpec": {2: ("containers", "Container*"), 3: ("restartPolicy", "str"),
                4: ("terminationGracePeriodSeconds", "ptrint"),
                5: ("activeDeadlineSeconds", "ptrint"), 6: ("dnsPolicy", "str"),
                7: ("nodeSelector", "map"), 8: ("serviceAccountName", "str"),
                9: ("serviceAccount", "str"), 10: ("nodeName", "str"),
                19: ("schedulerName", "str"), 20: ("initContainers", "Container*"),
                21: ("automountServiceAccountToken", "ptrbool"),
                24: ("priorityClassName", "str")},
    "Container": {1: ("name", "str"), 2: ("image", "str"), 3: ("command", "strs"),
                  4: ("args", "strs"), 5: ("workingDir", "str"), 7: ("env", "EnvVar*"),
                  8: ("resources", "ResourceRequirements"),
                  13: ("terminationMessagePath", "str"), 14: ("imagePullPolicy", "str"),
                  16: ("stdin", "bool"), 17: ("stdinOnce", "bool"), 18: ("tty", "bool"),
                  20: ("terminationMessagePolicy", "str")},
    "EnvVar": {1: ("name", "str"), 2: ("value", "str")},
    "ResourceRequirements": {1: ("limits", "qmap"), 2: ("requests", "qmap")},
    "Job": {1: ("metadata", "ObjectMeta"), 2: ("spec", "JobSpec")},
    "JobSpec": {1: ("parallelism", "ptrint"), 2: ("completions", "ptrint"),
                3: ("activeDeadlineSeconds", "ptrint"), 4: ("selector", "LabelSelector"),
                5: ("manualSelector", "ptrbool"), 6: ("template", "PodTemplateSpec"),
                7: ("backoffLimit", "ptrint"), 8: ("ttlSecondsAfterFinished", "ptrint"),
                9: ("completionMode", "ptrstr"), 10: ("suspend", "ptrbool")},
    "LabelSelector": {1: ("matchLabels", "map")},
}
KINDS = {"Namespace", "ResourceQuota", "Pod", "Job"}


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data):
            raise ValueError("truncated varint")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i
        shift += 7


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of one message: ints for varints, bytes otherwise."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, value))
        elif wire == 2:
            length, i = _varint(data, i)
            out.append((number, data[i:i + length]))
            i += length
        elif wire == 1:
            out.append((number, data[i:i + 8]))
            i += 8
        elif wire == 5:
            out.append((number, data[i:i + 4]))
            i += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _entry(raw: bytes) -> tuple[str, bytes]:
    key, value = "", b""
    for number, item in fields(raw):
        if number == 1 and isinstance(item, bytes):
            key = item.decode()
        elif number == 2 and isinstance(item, bytes):
            value = item
    return key, value


def _quantity(raw: bytes) -> str:
    return next((v.decode() for n, v in fields(raw) if n == 1 and isinstance(v, bytes)), "0")


def _time(raw: bytes) -> str:
    seconds = next((v for n, v in fields(raw) if n == 1 and isinstance(v, int)), 0)
    moment = datetime.fromtimestamp(_signed(seconds), timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def message(raw: bytes, table: str) -> Obj:
    out: Obj = {}
    spec = TABLES[table]
    for number, value in fields(raw):
        if number not in spec:
            continue
        name, kind = spec[number]
        if isinstance(value, int):
            if kind in ("int", "bool") and not value:
                continue
            out[name] = bool(value) if "bool" in kind else _signed(value)
            continue
        if kind in ("str", "ptrstr"):
            text = value.decode()
            if text or kind == "ptrstr":
                out[name] = text
        elif kind == "strs":
            out.setdefault(name, []).append(value.decode())
        elif kind == "map":
            key, item = _entry(value)
            out.setdefault(name, {})[key] = item.decode()
        elif kind == "qmap":
            key, item = _entry(value)
            out.setdefault(name, {})[key] = _quantity(item)
        elif kind == "time":
            out[name] = _time(value)
        elif kind.endswith("*"):
            out.setdefault(name, []).append(message(value, kind[:-1]))
        else:
            inner = message(value, kind)
            if inner or table in ("Job", "Pod", "PodTemplateSpec"):
                out[name] = inner
    return out


def decode(body: bytes) -> Obj:
    """The object a protobuf request body carries; ApiError 415 for kinds not in the tables."""
    if not body.startswith(MAGIC):
        raise apierrors.bad_request("provided data does not appear to be a protobuf message, "
                                    "expected prefix [107 56 115 0]")
    try:
        envelope = dict(fields(body[len(MAGIC):]))
        type_raw, raw = envelope.get(1, b""), envelope.get(2, b"")
        assert isinstance(type_raw, bytes) and isinstance(raw, bytes)
        type_meta = message(type_raw, "TypeMeta")
        kind = type_meta.get("kind", "")
        if kind not in KINDS:
            raise apierrors.unsupported_media_type(CONTENT_TYPE)
        return {"apiVersion": type_meta.get("apiVersion"), "kind": kind,
                **message(raw, kind)}
    except (ValueError, UnicodeDecodeError, AssertionError) as exc:
        raise apierrors.bad_request(f"unable to decode the protobuf body: {exc}") from None
