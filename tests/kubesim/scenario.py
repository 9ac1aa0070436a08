"""Scenarios: what a kubesim cluster looks like (nodes, images, quotas, tokens, admission).

A scenario is a YAML file (or a dict, for tests) read into frozen dataclasses with defaults;
without one the cluster has one node, the common images, no quotas, only the admin token and
no admission rules. Every key is optional:

    nodes:                      # default: one node "kubesim-node"
      - {name: n1, cpu: "4", memory: 8Gi, pods: 110, labels: {disk: ssd},
         taints: [{key: k, value: v, effect: NoSchedule}]}
    images:                     # merged over the defaults below
      myapp: {entrypoint: [python3, -c], cmd: ["print(1)"], pull_seconds: 2}
    namespaces: [team-a]        # created at start besides default/kube-system/kube-public
    quotas:
      - {namespace: default, name: compute, hard: {pods: "2", requests.cpu: "1"}}
    tokens:                     # extra bearer tokens; rules: RBAC allow-list (omit = admin)
      alice-token: {user: alice, rules: [{verbs: [get, list], resources: [pods]}]}
    admission:
      - {type: deny, name: policy.example.com, resources: [pods], image_pattern: "*:latest",
         message: "images must be pinned"}
      - {type: add-label, name: labeler.example.com, labels: {team: blue}}
      - {type: add-sidecar, name: sidecar.example.com,
         container: {name: proxy, image: busybox, command: [sleep, "3600"]}}
    secrets: {default: [db-password]}      # names that exist, for env/volume references
    configmaps: {default: [settings]}
    persistentvolumeclaims: {default: [data]}
    options: {crash_backoff_seconds: 1.0}  # free-form knobs the cluster side documents
    # (cluster.py's table; the node's logs: log_rotate_bytes, log_rotate_seconds,
    #  log_follow_end_after_bytes, log_follow_end_times, log_first_read_delay_seconds,
    #  in logbook.py's docstring)
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ADMIN_USER = "kubesim-admin"


class ScenarioError(ValueError):
    """A scenario file or dict with a key or value kubesim does not understand."""


def _default_labels(name: str) -> dict[str, str]:
    return {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": name}


@dataclass(frozen=True)
class Node:
    name: str
    cpu: str = "4"
    memory: str = "8Gi"
    pods: int = 110
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The well-known labels are always there, as a kubelet registers them; the
        # scenario's own labels win.
        object.__setattr__(self, "labels", {**_default_labels(self.name), **self.labels})


@dataclass(frozen=True)
class Image:
    name: str
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    pull_seconds: float = 0.0


DEFAULT_IMAGES: dict[str, Image] = {
    name: Image(name, [], ["sh"]) for name in ("alpine", "busybox", "ubuntu", "debian")
} | {"python": Image("python", [], ["python3"])}


def image_short_name(ref: str) -> str:
    """The last path component of an image reference without tag or digest:
    "registry.example.com:5000/team/alpine@sha256:ab" -> "alpine"."""
    ref = ref.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


@dataclass(frozen=True)
class Quota:
    namespace: str
    name: str
    hard: dict[str, str]


@dataclass(frozen=True)
class Rule:
    """An RBAC allow rule; "*" in a list matches everything."""

    verbs: list[str] = field(default_factory=lambda: ["*"])
    resources: list[str] = field(default_factory=lambda: ["*"])
    namespaces: list[str] = field(default_factory=lambda: ["*"])
    api_groups: list[str] = field(default_factory=lambda: ["*"])

    def allows(self, verb: str, resource: str, namespace: str | None, api_group: str) -> bool:
        def hit(values: list[str], value: str) -> bool:
            return "*" in values or value in values
        return (hit(self.verbs, verb) and hit(self.resources, resource)
                and hit(self.api_groups, api_group)
                and (namespace is None or hit(self.namespaces, namespace)))


@dataclass(frozen=True)
class Token:
    token: str
    user: str
    groups: list[str] = field(default_factory=list)
    rules: list[Rule] | None = None  # None: allowed everything (cluster-admin)

    def allows(self, verb: str, resource: str, namespace: str | None, api_group: str) -> bool:
        if self.rules is None:
            return True
        return any(r.allows(verb, resource, namespace, api_group) for r in self.rules)


@dataclass(frozen=True)
class AdmissionRule:
    """A webhook stand-in. type "deny" rejects matching objects; "add-label" adds labels;
    "add-sidecar" appends a container to pods (and to Job pod templates)."""

    type: str
    name: str
    resources: list[str] = field(default_factory=lambda: ["pods"])
    namespaces: list[str] = field(default_factory=lambda: ["*"])
    label_selector: str | None = None
    image_pattern: str | None = None
    message: str = "denied by policy"
    labels: dict[str, str] = field(default_factory=dict)
    container: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.type not in ("deny", "add-label", "add-sidecar"):
            raise ScenarioError(
                f"admission rule {self.name!r}: type must be deny, add-label or add-sidecar, "
                f"not {self.type!r}"
            )

    def applies_to(self, resource: str, namespace: str | None) -> bool:
        return ("*" in self.resources or resource in self.resources) and (
            "*" in self.namespaces or namespace in self.namespaces
        )

    def image_matches(self, images: list[str]) -> bool:
        if self.image_pattern is None:
            return True
        return any(fnmatch.fnmatchcase(i, self.image_pattern) for i in images)


@dataclass(frozen=True)
class Scenario:
    nodes: list[Node] = field(default_factory=lambda: [Node("kubesim-node")])
    images: dict[str, Image] = field(default_factory=lambda: dict(DEFAULT_IMAGES))
    namespaces: list[str] = field(default_factory=list)
    quotas: list[Quota] = field(default_factory=list)
    tokens: dict[str, Token] = field(default_factory=dict)
    admission: list[AdmissionRule] = field(default_factory=list)
    secrets: dict[str, list[str]] = field(default_factory=dict)
    configmaps: dict[str, list[str]] = field(default_factory=dict)
    persistentvolumeclaims: dict[str, list[str]] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)

    def image(self, ref: str) -> Image | None:
        """The catalogue entry an image reference resolves to (by its last path component)."""
        return self.images.get(image_short_name(ref))

    def with_admin_token(self, token: str) -> Scenario:
        """A copy that also accepts `token` as the cluster admin."""
        tokens = {token: Token(token, ADMIN_USER, ["system:masters"]), **self.tokens}
        return Scenario(**{**self.__dict__, "tokens": tokens})


def _build(cls: type[Any], data: Any, where: str) -> Any:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: expected a mapping, got {type(data).__name__}")
    try:
        return cls(**data)
    except TypeError as exc:
        raise ScenarioError(f"{where}: {exc}") from exc


def scenario_from_dict(data: Mapping[str, Any] | None) -> Scenario:
    """Build a Scenario from parsed YAML; unknown keys are a ScenarioError naming them."""
    data = dict(data or {})
    known = set(Scenario.__dataclass_fields__)
    unknown = sorted(set(data) - known)
    if unknown:
        raise ScenarioError(f"unknown scenario keys {unknown}; known: {sorted(known)}")
    kwargs: dict[str, Any] = {}
    if "nodes" in data:
        kwargs["nodes"] = [_build(Node, n, f"nodes[{i}]") for i, n in enumerate(data["nodes"])]
    if "images" in data:
        images = dict(DEFAULT_IMAGES)
        for name, spec in (data["images"] or {}).items():
            images[name] = _build(Image, {"name": name, **(spec or {})}, f"images.{name}")
        kwargs["images"] = images
    if "quotas" in data:
        kwargs["quotas"] = [_build(Quota, q, f"quotas[{i}]") for i, q in enumerate(data["quotas"])]
    if "tokens" in data:
        tokens = {}
        for value, spec in (data["tokens"] or {}).items():
            spec = dict(spec or {})
            if "rules" in spec and spec["rules"] is not None:
                spec["rules"] = [_build(Rule, r, f"tokens.{value}.rules[{i}]")
                                 for i, r in enumerate(spec["rules"])]
            tokens[str(value)] = _build(Token, {"token": str(value), **spec}, f"tokens.{value}")
        kwargs["tokens"] = tokens
    if "admission" in data:
        kwargs["admission"] = [_build(AdmissionRule, a, f"admission[{i}]")
                               for i, a in enumerate(data["admission"])]
    for key in ("namespaces", "secrets", "configmaps", "persistentvolumeclaims", "options"):
        if key in data:
            kwargs[key] = data[key]
    return Scenario(**kwargs)


def load_scenario(path: Path | str | None) -> Scenario:
    """Read a scenario YAML file; None is the default scenario."""
    if path is None:
        return Scenario()
    with open(path, encoding="utf-8") as handle:
        return scenario_from_dict(yaml.safe_load(handle))
