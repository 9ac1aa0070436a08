"""OpenAPI v3 (the root `/openapi/v3` and one document per group version) and v2 (`/openapi/v2`,
one document, in JSON or in gnostic's protobuf).

kubectl's `--validate=strict` (the default of create/apply) reads the root, follows each
`serverRelativeURL` verbatim (`?hash=` included) and looks, per kind, for a `patch` operation
whose `x-kubernetes-group-version-kind` names the kind and which lists a `fieldValidation`
query parameter; finding one, it leaves validation to the server (`fieldValidation=Strict`).
The documents carry exactly that, plus a minimal schema per kind. Nothing here does I/O.

kubectl before 1.29 asks the same question of the OpenAPI v2 document instead, and only in
protobuf (`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, gnostic's
openapi_v2.Document): without it `create --dry-run=server` fails with NotFound. The v2
document carries the same patch operations (and the create ones), with the kind in the
operation's `x-kubernetes-group-version-kind` vendor extension as YAML text, and no
definitions; the protobuf is written by hand below, by gnostic's OpenAPIv2.proto field
numbers (Document, Paths, NamedPathItem, PathItem, Operation, ParametersItem, Parameter,
NonBodyParameter, QueryParameterSubSchema, NamedAny, Any).
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Any

from tests.kubesim.resources import Resource, group_versions

Obj = dict[str, Any]

_QUERY_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _gvk(r: Resource) -> Obj:
    return {"group": r.group, "version": r.version, "kind": r.kind}


def _schema_name(r: Resource) -> str:
    package = "core" if not r.group else r.group
    return f"io.k8s.api.{package}.{r.version}.{r.kind}"


def _operation(r: Resource, verb: str, action: str) -> Obj:
    params = [
        {"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
        for p in _QUERY_PARAMS if verb == "patch" or p != "force"
    ]
    ref = {"$ref": f"#/components/schemas/{_schema_name(r)}"}
    return {
        "tags": [f"{r.group or 'core'}_{r.version}"],
        "operationId": f"{verb}{'Namespaced' if r.namespaced else ''}{r.kind}",
        "parameters": params,
        "responses": {"200": {"description": "OK",
                              "content": {"application/json": {"schema": ref}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(r),
    }


def _document(members: list[Resource]) -> Obj:
    paths: Obj = {}
    schemas: Obj = {}
    for r in members:
        item = r.base_path("{namespace}") + "/{name}"
        collection = r.base_path("{namespace}")
        paths[collection] = {"post": _operation(r, "create", "post")}
        paths[item] = {
            "get": _operation(r, "read", "get"),
            "put": _operation(r, "replace", "put"),
            "patch": _operation(r, "patch", "patch"),
            "delete": _operation(r, "delete", "delete"),
        }
        schemas[_schema_name(r)] = {
            "type": "object",
            "description": f"{r.kind} (kubesim serves a minimal schema; the server validates)",
            "x-kubernetes-group-version-kind": [_gvk(r)],
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.4"},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def _key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


@cache
def documents() -> dict[str, bytes]:
    """Each group version's document, serialized once, by its root key (`api/v1`)."""
    out: dict[str, bytes] = {}
    for group, members in group_versions().items():
        out[_key(group, members[0].version)] = json.dumps(_document(members)).encode()
    return out


def _hash(body: bytes) -> str:
    return hashlib.sha512(body).hexdigest()[:128].upper()


@cache
def root() -> bytes:
    paths = {
        key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={_hash(body)}"}
        for key, body in documents().items()
    }
    return json.dumps({"paths": paths}).encode()


def document(key: str) -> bytes | None:
    """The document for `api/v1` or `apis/batch/v1`; None for any other key."""
    return documents().get(key)


# -- OpenAPI v2 ------------------------------------------------------------------------------

# Accept names it with an "@", which is no media type; the answer's Content-Type is this.
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _v2_operation(r: Resource, verb: str) -> Obj:
    params = [{"name": p, "in": "query", "type": "string", "uniqueItems": True}
              for p in _QUERY_PARAMS if verb == "patch" or p != "force"]
    return {"operationId": f"{verb}{'Namespaced' if r.namespaced else ''}{r.kind}",
            "parameters": params, "x-kubernetes-group-version-kind": _gvk(r)}


@cache
def v2_json_document() -> Obj:
    """The v2 document as a dict: per resource, its collection's post and its item's patch."""
    paths: Obj = {}
    for members in group_versions().values():
        for r in members:
            paths[r.base_path("{namespace}")] = {"post": _v2_operation(r, "create")}
            paths[r.base_path("{namespace}") + "/{name}"] = {"patch": _v2_operation(r, "patch")}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.4"},
            "paths": paths}


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field (wire type 2): a string or an embedded message."""
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _true(number: int) -> bytes:
    return _varint(number << 3) + b"\x01"


def _v2_operation_proto(operation: Obj) -> bytes:
    out = _field(5, operation["operationId"])
    for param in operation["parameters"]:
        query = (_field(2, param["in"]) + _field(4, param["name"]) + _field(6, param["type"])
                 + _true(20))
        # ParametersItem.parameter > Parameter.non_body_parameter > query_parameter_sub_schema
        out += _field(8, _field(1, _field(2, _field(3, query))))
    gvk_yaml = json.dumps(operation["x-kubernetes-group-version-kind"])  # JSON is YAML
    out += _field(13, _field(1, "x-kubernetes-group-version-kind") + _field(2, _field(2, gvk_yaml)))
    return out


_VERB_FIELDS = {"get": 2, "put": 3, "post": 4, "delete": 5, "patch": 8}


@cache
def v2_protobuf_document() -> bytes:
    """The v2 document in gnostic's protobuf, as kubectl's discovery client reads it."""
    doc = v2_json_document()
    paths = b""
    for path, item in doc["paths"].items():
        body = b"".join(_field(_VERB_FIELDS[verb], _v2_operation_proto(op))
                        for verb, op in item.items())
        paths += _field(2, _field(1, path) + _field(2, body))
    info = _field(1, doc["info"]["title"]) + _field(2, doc["info"]["version"])
    return _field(1, doc["swagger"]) + _field(2, info) + _field(8, paths)


def v2_document(accept: str) -> tuple[bytes, str]:
    """(body, content type) of `/openapi/v2`: protobuf when Accept names it, else JSON."""
    if "protobuf" in accept:
        return v2_protobuf_document(), V2_PROTOBUF
    return json.dumps(v2_json_document()).encode(), "application/json"
