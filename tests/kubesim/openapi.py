"""OpenAPI v3: the root `/openapi/v3` and one document per group version.

kubectl's `--validate=strict` (the default of create/apply) reads the root, follows each
`serverRelativeURL` verbatim (`?hash=` included) and looks, per kind, for a `patch` operation
whose `x-kubernetes-group-version-kind` names the kind and which lists a `fieldValidation`
query parameter; finding one, it leaves validation to the server (`fieldValidation=Strict`).
The documents carry exactly that, plus a minimal schema per kind. Nothing here does I/O.
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
