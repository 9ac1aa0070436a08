"""API errors as the apiserver words them: `ApiError` carries a `metav1.Status`.

Owns every error message kubectl renders from a Status (NotFound, AlreadyExists, Forbidden
in its RBAC and admission forms, Invalid with causes, BadRequest, Conflict, Gone,
Unauthorized, MethodNotAllowed). The wording is the apiserver's, because kubectl prints it
verbatim and squarepeg's error hints match on it. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]


@dataclass(frozen=True)
class Cause:
    """One `details.causes` entry of an Invalid error: `field: message`."""

    type: str  # FieldValueRequired, FieldValueInvalid, ...
    field: str
    message: str

    def as_dict(self) -> Obj:
        return {"reason": self.type, "message": self.message, "field": self.field}

    def text(self) -> str:
        return f"{self.field}: {self.message}"


# The messages of field.ErrorType, as field.Error.Error() prints them.
def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", path, "Required value" + (f": {detail}" if detail else ""))


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", path, f"Invalid value: {_show(value)}: {detail}")


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", path, f"Duplicate value: {_show(value)}")


def unsupported(path: str, value: Any, supported: list[str]) -> Cause:
    listed = ", ".join(f'"{s}"' for s in supported)
    return Cause("FieldValueNotSupported", path,
                 f"Unsupported value: {_show(value)}: supported values: {listed}")


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", path, f"Forbidden: {detail}")


def too_long(path: str, limit: int) -> Cause:
    return Cause("FieldValueTooLong", path, f"Too long: may not be more than {limit} bytes")


def _show(value: Any) -> str:
    """A value as field.Error shows it: strings quoted, numbers bare."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return str(value)
    return "{...}" if isinstance(value, dict) else "[...]" if isinstance(value, list) else \
        str(value)


class ApiError(Exception):
    """An error the API answers with a Status body and its HTTP code."""

    def __init__(self, code: int, reason: str, message: str, details: Obj | None = None,
                 headers: dict[str, str] | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> Obj:
        body: Obj = {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def qualified(resource: str, group: str) -> str:
    """`pods`, or `jobs.batch` for a resource of a named group (as messages name it)."""
    return f"{resource}.{group}" if group else resource


def _details(resource: str, group: str, name: str | None) -> Obj:
    details: Obj = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def not_found(resource: str, group: str, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{qualified(resource, group)} "{name}" not found',
                    _details(resource, group, name))


def no_such_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource",
                    {})


def already_exists(resource: str, group: str, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{qualified(resource, group)} "{name}" already exists',
                    _details(resource, group, name))


def conflict(resource: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409, "Conflict",
        f'Operation cannot be fulfilled on {qualified(resource, group)} "{name}": {why}',
        _details(resource, group, name),
    )


def forbidden_error(resource: str, group: str, name: str | None, why: str) -> ApiError:
    """admission.NewForbidden / errors.NewForbidden: `pods "x" is forbidden: WHY`."""
    what = qualified(resource, group)
    subject = f'{what} "{name}"' if name else what
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {why}",
                    _details(resource, group, name))


def rbac_denied(user: str, verb: str, resource: str, subresource: str, group: str,
                namespace: str | None, name: str | None) -> ApiError:
    """The authorizer's 403, in the exact form kubectl prints."""
    full = f"{resource}/{subresource}" if subresource else resource
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    why = f'User "{user}" cannot {verb} resource "{full}" in API group "{group}" {scope}'
    return forbidden_error(resource, group, name, why)


def invalid_error(kind: str, group: str, name: str, causes: list[Cause]) -> ApiError:
    """422 Invalid; kubectl rebuilds `The Kind "name" is invalid: ...` from the details."""
    texts = [c.text() for c in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    qualified_kind = f"{kind}.{group}" if group else kind
    details: Obj = {"name": name, "group": group, "kind": kind,
                    "causes": [c.as_dict() for c in causes]}
    if not group:
        del details["group"]
    return ApiError(422, "Invalid", f'{qualified_kind} "{name}" is invalid: {summary}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed(verb: str, resource: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource",
                    {"kind": resource} if resource else {})


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType",
                    f'the body of the request was in an unknown format - accepted media types '
                    f'include: application/json, application/yaml; got "{content_type}"')


def webhook_denied(webhook: str, message: str) -> ApiError:
    """A validating webhook's `allowed: false` as the apiserver turns it into a Status
    (webhookerrors.ToStatusErr): code 400 and no reason when the webhook set none."""
    return ApiError(400, "", f'admission webhook "{webhook}" denied the request: {message}')
