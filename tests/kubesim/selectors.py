"""Label and field selectors: parsing the query-string syntax and matching stored objects.

Label selectors support `=`, `==`, `!=`, `in (...)`, `notin (...)`, `key` and `!key`, joined
by commas, as the apiserver does. Field selectors support `=`, `==` and `!=` over the fields
the apiserver indexes for the resources kubesim serves (`metadata.name`, `metadata.namespace`,
`status.phase`, `spec.nodeName`, `involvedObject.*`, ...). Matching reads the stored object in
place and never copies it, so a list over 10,000 pods stays cheap.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    """A selector string that does not parse; the API answers 400 BadRequest with its text."""


_KEY_RE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                     r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE_RE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


@dataclass(frozen=True)
class Requirement:
    """One clause of a label selector: `key op values`."""

    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and labels[self.key] in self.values
        # "!=" and "notin" match objects without the key, as the apiserver does.
        return not present or labels[self.key] not in self.values


@dataclass(frozen=True)
class LabelSelector:
    """A parsed label selector; the empty selector matches everything."""

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside a `( ... )` value set."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise SelectorError(f"unable to parse requirement: unbalanced parentheses in {text!r}")
    parts.append("".join(current))
    return parts


def _check_key(key: str) -> str:
    if not _KEY_RE.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise SelectorError(
            f"unable to parse requirement: invalid label key \"{key}\": name part must consist "
            "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )
    return key


def _check_value(value: str) -> str:
    if not _VALUE_RE.match(value) or len(value) > 63:
        raise SelectorError(
            f"unable to parse requirement: invalid label value: \"{value}\": a valid label "
            "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return value


_SET_RE = re.compile(r"^(?P<key>[^\s!=()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")


def _parse_requirement(clause: str) -> Requirement:
    clause = clause.strip()
    if not clause:
        raise SelectorError("found '', expected: identifier")
    match = _SET_RE.match(clause)
    if match:
        values = frozenset(_check_value(v.strip()) for v in match["values"].split(","))
        return Requirement(_check_key(match["key"]), match["op"], values)
    for op in ("!=", "==", "="):
        if op in clause:
            key, value = clause.split(op, 1)
            return Requirement(
                _check_key(key.strip()), "!=" if op == "!=" else "=",
                frozenset([_check_value(value.strip())]),
            )
    if clause.startswith("!"):
        return Requirement(_check_key(clause[1:].strip()), "!", frozenset())
    return Requirement(_check_key(clause), "exists", frozenset())


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse `a=b,c!=d,e in (f,g),!h`; None or "" is the selector matching everything."""
    if not text or not text.strip():
        return LabelSelector(())
    return LabelSelector(tuple(_parse_requirement(c) for c in _split_top_level(text)))


def selector_from_match_labels(match_labels: Mapping[str, str]) -> str:
    """The selector string equivalent to a `matchLabels` map (for Job selectors)."""
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))


def label_selector_from_spec(spec: Mapping[str, Any]) -> LabelSelector:
    """A `metav1.LabelSelector` object (`matchLabels` + `matchExpressions`) as a selector."""
    requirements = [
        Requirement(k, "=", frozenset([v])) for k, v in (spec.get("matchLabels") or {}).items()
    ]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in spec.get("matchExpressions") or []:
        requirements.append(
            Requirement(expr["key"], ops[expr["operator"]], frozenset(expr.get("values") or []))
        )
    return LabelSelector(tuple(requirements))


@dataclass(frozen=True)
class FieldRequirement:
    """One clause of a field selector: `path op value`."""

    path: tuple[str, ...]
    negate: bool
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        actual: Any = obj
        for part in self.path:
            actual = actual.get(part) if isinstance(actual, Mapping) else None
        # Absent fields compare as the empty string, like the apiserver's field sets.
        text = "" if actual is None else str(actual)
        return (text == self.value) != self.negate


@dataclass(frozen=True)
class FieldSelector:
    """A parsed field selector; the empty selector matches everything."""

    requirements: tuple[FieldRequirement, ...]

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    def exact_name(self) -> str | None:
        """The name a `metadata.name=X` clause pins, so a store can look it up directly."""
        for r in self.requirements:
            if r.path == ("metadata", "name") and not r.negate:
                return r.value
        return None


# Fields the apiserver accepts in field selectors, per resource (beyond metadata.*).
SUPPORTED_FIELDS: dict[str, frozenset[str]] = {
    "pods": frozenset({
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
    }),
    "events": frozenset({
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
    }),
    "namespaces": frozenset({"status.phase"}),
    "nodes": frozenset({"spec.unschedulable"}),
    "jobs": frozenset({"status.successful"}),
}


def parse_field_selector(text: str | None, resource: str = "") -> FieldSelector:
    """Parse `metadata.name=x,status.phase!=Running`; unknown fields are a SelectorError
    worded as the apiserver words it (when `resource` is given)."""
    if not text or not text.strip():
        return FieldSelector(())
    requirements = []
    for clause in text.split(","):
        clause = clause.strip()
        for op in ("!=", "==", "="):
            if op in clause:
                field, value = clause.split(op, 1)
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{clause}'")
        field = field.strip()
        allowed = SUPPORTED_FIELDS.get(resource, frozenset())
        if resource and not field.startswith("metadata.") and field not in allowed:
            raise SelectorError(f'field label not supported: {field}')
        if field.startswith("metadata.") and field not in ("metadata.name", "metadata.namespace"):
            raise SelectorError(f'field label not supported: {field}')
        requirements.append(FieldRequirement(tuple(field.split(".")), op == "!=", value.strip()))
    return FieldSelector(tuple(requirements))
