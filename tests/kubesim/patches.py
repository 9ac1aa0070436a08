"""The three patch formats of PATCH requests, applied to a stored object.

JSON merge patch (RFC 7386), JSON patch (RFC 6902, through the `jsonpatch` package) and
strategic merge patch: a merge patch whose lists merge by the key the schema names
(`x-kubernetes-patch-merge-key`, e.g. containers by name), with the `$patch: delete|replace`
directives and `$deleteFromPrimitiveList`. Nothing here does I/O.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from tests.kubesim import apierrors
from tests.kubesim.validation import DEFINITIONS, definitions

Obj = dict[str, Any]

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _resolve(schema: Obj | None) -> Obj:
    if not schema:
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return definitions().get(ref.rsplit("/", 1)[-1], {})
    return schema


def _child(schema: Obj, key: str) -> Obj | None:
    props = schema.get("properties")
    if isinstance(props, dict) and key in props:
        return props[key]  # type: ignore[no-any-return]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


def strategic_patch(target: Any, patch: Any, schema: Obj | None) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    schema = _resolve(schema)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key == "$patch" or key == "$retainKeys":
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [v for v in out[field] if v not in value]
            continue
        if value is None:
            out.pop(key, None)
            continue
        child = _child(schema, key)
        if isinstance(value, list):
            out[key] = _merge_list(out.get(key), value, child)
        else:
            out[key] = strategic_patch(out.get(key), value, child)
    return out


def _merge_list(current: Any, patch: list[Any], schema: Obj | None) -> list[Any]:
    schema = schema or {}
    strategy = str(schema.get("x-kubernetes-patch-strategy", ""))
    merge_key = schema.get("x-kubernetes-patch-merge-key")
    if "merge" not in strategy or not isinstance(current, list):
        return [item for item in copy.deepcopy(patch)
                if not (isinstance(item, dict) and item.get("$patch") == "delete")]
    if not merge_key:
        return list(current) + [v for v in patch if v not in current]
    items = [copy.deepcopy(i) for i in current]
    item_schema = schema.get("items")
    for entry in patch:
        if not isinstance(entry, dict):
            continue
        key = entry.get(merge_key)
        index = next((i for i, item in enumerate(items)
                      if isinstance(item, dict) and item.get(merge_key) == key), None)
        if entry.get("$patch") == "delete":
            if index is not None:
                del items[index]
            continue
        if index is None:
            items.append({k: v for k, v in copy.deepcopy(entry).items() if k != "$patch"})
        else:
            items[index] = strategic_patch(items[index], entry, item_schema)
    return items


def apply(resource: str, content_type: str, current: Obj, patch: Any) -> Obj:
    """`current` with the patch applied (a new object); ApiError for a bad patch."""
    kind = content_type.split(";", 1)[0].strip()
    if kind == MERGE:
        if not isinstance(patch, dict):
            raise apierrors.bad_request("json: cannot unmarshal into Go value of type map")
        return merge_patch(current, patch)  # type: ignore[no-any-return]
    if kind in (STRATEGIC, APPLY):
        if not isinstance(patch, dict):
            raise apierrors.bad_request("json: cannot unmarshal into Go value of type map")
        definition = DEFINITIONS.get(resource)
        schema = {"$ref": f"#/$defs/{definition}"} if definition else None
        return strategic_patch(current, patch, schema)  # type: ignore[no-any-return]
    if kind == JSON_PATCH:
        try:
            result = jsonpatch.apply_patch(current, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException,
                TypeError, KeyError) as exc:
            raise apierrors.ApiError(422, "Invalid", f"the server rejected our request due to "
                                     f"an error in our request: {exc}") from exc
        return result  # type: ignore[no-any-return]
    raise apierrors.unsupported_media_type(content_type)
