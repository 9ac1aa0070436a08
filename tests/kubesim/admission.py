"""Authentication, authorization and admission, configured by the scenario.

- `authenticate`: a bearer token to its `scenario.Token`, or None (the API answers 401).
- `authorize`: RBAC per token (a token without rules is a cluster admin); a denial is the
  authorizer's 403 in the exact form kubectl prints.
- `mutate`: the scenario's mutating rules (`add-label`, `add-sidecar`), on pods and on the
  pod template of Jobs, at create.
- `admit`: the validating rules (`deny`: `admission webhook "NAME" denied the request: MSG`)
  then ResourceQuota (`exceeded quota: ...`, `failed quota: ...`), in the apiserver's order.
  Quota usage is computed from the store at admission time, under a lock that the caller
  holds until the object is stored, so two creates cannot both take the last slot.
All of it runs under dryRun=All too; nothing here persists anything.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from tests.kubesim import apierrors
from tests.kubesim.quantities import QuantityError, parse_quantity
from tests.kubesim.scenario import Scenario, Token
from tests.kubesim.selectors import SelectorError, parse_label_selector
from tests.kubesim.store import Store

Obj = dict[str, Any]

TERMINAL_PHASES = ("Succeeded", "Failed")
# Quota names whose use needs every container to declare the resource (the evaluator's
# "BACKWARD COMPATIBILITY REQUIREMENT").
_NEEDS_DECLARATION = {
    "requests.cpu": ("requests", "cpu"), "cpu": ("requests", "cpu"),
    "requests.memory": ("requests", "memory"), "memory": ("requests", "memory"),
    "limits.cpu": ("limits", "cpu"), "limits.memory": ("limits", "memory"),
}


def authenticate(scenario: Scenario, authorization: str) -> Token | None:
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return scenario.tokens.get(value.strip())


def authorize(token: Token, verb: str, resource: str, subresource: str, group: str,
              namespace: str | None, name: str | None) -> None:
    """Raise the RBAC 403 unless the token may `verb` the resource."""
    full = f"{resource}/{subresource}" if subresource else resource
    if token.allows(verb, full, namespace, group):
        return
    raise apierrors.rbac_denied(token.user, verb, resource, subresource, group, namespace, name)


def _pod_specs(resource: str, obj: Obj) -> list[Obj]:
    """The pod specs an object carries: a Pod's own, a Job's template."""
    if resource == "pods":
        spec = obj.get("spec")
        return [spec] if isinstance(spec, dict) else []
    if resource == "jobs":
        spec = ((obj.get("spec") or {}).get("template") or {}).get("spec")
        return [spec] if isinstance(spec, dict) else []
    return []


def _images(resource: str, obj: Obj) -> list[str]:
    return [str(c.get("image", "")) for spec in _pod_specs(resource, obj)
            for key in ("containers", "initContainers") for c in spec.get(key) or []
            if isinstance(c, dict)]


def _selected(rule_selector: str | None, obj: Obj) -> bool:
    if not rule_selector:
        return True
    try:
        return parse_label_selector(rule_selector).matches(
            (obj.get("metadata") or {}).get("labels"))
    except SelectorError:
        return False


class Admission:
    """The scenario's admission chain over one store."""

    def __init__(self, store: Store, scenario: Scenario):
        self.store = store
        self.scenario = scenario
        self.lock = threading.RLock()  # held from admit() until the create is stored

    # -- mutating ------------------------------------------------------------------------

    def mutate(self, resource: str, obj: Obj, namespace: str | None) -> None:
        for rule in self.scenario.admission:
            if rule.type == "deny" or not rule.applies_to(resource, namespace):
                continue
            if not _selected(rule.label_selector, obj) or not rule.image_matches(
                    _images(resource, obj)):
                continue
            if rule.type == "add-label":
                obj.setdefault("metadata", {}).setdefault("labels", {}).update(rule.labels)
                if resource == "jobs":
                    template = obj.setdefault("spec", {}).setdefault("template", {})
                    template.setdefault("metadata", {}).setdefault("labels", {}).update(
                        rule.labels)
            elif rule.type == "add-sidecar":
                for spec in _pod_specs(resource, obj):
                    containers = spec.setdefault("containers", [])
                    name = rule.container.get("name")
                    if not any(isinstance(c, dict) and c.get("name") == name
                               for c in containers):
                        containers.append(copy.deepcopy(rule.container))

    # -- validating ----------------------------------------------------------------------

    def admit(self, resource: str, obj: Obj, namespace: str | None) -> None:
        """The validating rules, then quota; raises the first denial."""
        for rule in self.scenario.admission:
            if rule.type != "deny" or not rule.applies_to(resource, namespace):
                continue
            if _selected(rule.label_selector, obj) and rule.image_matches(
                    _images(resource, obj)):
                raise apierrors.webhook_denied(rule.name, rule.message)
        if namespace is not None:
            self._quota(resource, obj, namespace)

    def _quota(self, resource: str, obj: Obj, namespace: str) -> None:
        quotas = [q for q in self.store.list_raw("resourcequotas", namespace)[0]]
        if not quotas or resource not in ("pods", "jobs"):
            return
        name = (obj.get("metadata") or {}).get("name")
        requested = usage_of(resource, obj)
        for quota in quotas:
            hard = (quota.get("spec") or {}).get("hard") or {}
            relevant = [k for k in hard if k in requested]
            if not relevant:
                continue
            if resource == "pods":
                missing = _missing_declarations(obj, hard)
                if missing:
                    raise apierrors.forbidden_error(
                        "pods", "", name,
                        f"failed quota: {quota['metadata']['name']}: must specify {missing}")
            used = namespace_usage(self.store, namespace)
            over = [k for k in relevant
                    if used.get(k, Decimal(0)) + requested[k] > _quantity(hard[k])]
            if over:
                keys = sorted(over)
                raise apierrors.forbidden_error(
                    resource, "batch" if resource == "jobs" else "", name,
                    f"exceeded quota: {quota['metadata']['name']}, "
                    f"requested: {_pretty(keys, requested, hard)}, "
                    f"used: {_pretty(keys, used, hard)}, "
                    f"limited: {_pretty(keys, {k: _quantity(hard[k]) for k in keys}, hard)}")


def _quantity(value: Any) -> Decimal:
    try:
        return parse_quantity(str(value))
    except QuantityError:
        return Decimal(0)


def _missing_declarations(pod: Obj, hard: Mapping[str, Any]) -> str:
    missing: dict[str, list[str]] = {}
    for key in hard:
        where = _NEEDS_DECLARATION.get(key)
        if where is None:
            continue
        for c in (pod.get("spec") or {}).get("containers") or []:
            declared = ((c.get("resources") or {}).get(where[0]) or {})
            if where[1] not in declared:
                missing.setdefault(key, []).append(str(c.get("name")))
    return "; ".join(f"{k} for: {','.join(sorted(set(v)))}" for k, v in sorted(missing.items()))


def _pretty(keys: Iterable[str], values: Mapping[str, Decimal], hard: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={format_quantity(k, values.get(k, Decimal(0)))}" for k in keys)


def format_quantity(name: str, value: Decimal) -> str:
    """A quantity in the canonical form the apiserver prints (`500m`, `2`, `1Gi`)."""
    if value == value.to_integral_value():
        whole = int(value)
        if "memory" in name or "storage" in name:
            for suffix, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30),
                                 ("Mi", 2**20), ("Ki", 2**10)):
                if whole and whole % size == 0:
                    return f"{whole // size}{suffix}"
        return str(whole)
    millis = value * 1000
    if millis == millis.to_integral_value():
        return f"{int(millis)}m"
    return f"{int((value * 10**9).to_integral_value())}n"


def _container_sum(pod: Obj, kind: str, resource: str) -> Decimal:
    total = Decimal(0)
    for c in (pod.get("spec") or {}).get("containers") or []:
        value = ((c.get("resources") or {}).get(kind) or {}).get(resource)
        if value is not None:
            total += _quantity(value)
    init = Decimal(0)
    for c in (pod.get("spec") or {}).get("initContainers") or []:
        value = ((c.get("resources") or {}).get(kind) or {}).get(resource)
        if value is not None:
            init = max(init, _quantity(value))
    return max(total, init)


def usage_of(resource: str, obj: Obj) -> dict[str, Decimal]:
    """What one object counts against a quota."""
    if resource == "jobs":
        return {"count/jobs.batch": Decimal(1)}
    if resource != "pods":
        return {}
    usage = {"pods": Decimal(1), "count/pods": Decimal(1)}
    for kind in ("requests", "limits"):
        for name in ("cpu", "memory"):
            amount = _container_sum(obj, kind, name)
            usage[f"{kind}.{name}"] = amount
            if kind == "requests":
                usage[name] = amount
    return usage


def namespace_usage(store: Store, namespace: str) -> dict[str, Decimal]:
    """What the pods (not yet finished) and jobs of a namespace use."""
    used: dict[str, Decimal] = {}
    pods, _ = store.list_raw("pods", namespace)
    for pod in pods:
        if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        for key, value in usage_of("pods", pod).items():
            used[key] = used.get(key, Decimal(0)) + value
    jobs, _ = store.list_raw("jobs", namespace)
    if jobs:
        used["count/jobs.batch"] = Decimal(len(jobs))
    return used


def quota_status(store: Store, quota: Obj) -> Obj:
    """The `status` a quota shows: hard as given, used for each hard key."""
    hard = dict((quota.get("spec") or {}).get("hard") or {})
    namespace = (quota.get("metadata") or {}).get("namespace") or ""
    used = namespace_usage(store, namespace)
    return {"hard": hard,
            "used": {k: format_quantity(k, used.get(k, Decimal(0))) for k in hard}}
