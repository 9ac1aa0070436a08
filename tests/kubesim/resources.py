"""The resource types kubesim serves: one table that routing, discovery and OpenAPI share.

Each `Resource` names its group, version, plural, kind, scope, short names, verbs and
subresources, exactly as a 1.32 apiserver advertises them. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Subresource:
    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = "v1"


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch",
                              "update", "watch")
    subresources: tuple[Subresource, ...] = field(default_factory=tuple)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def api_version(self) -> str:
        return self.group_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def base_path(self, namespace: str | None) -> str:
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"


def _status(kind: str, group: str = "") -> Subresource:
    return Subresource("status", kind, ("get", "patch", "update"), group)


RESOURCES: tuple[Resource, ...] = (
    Resource("", "v1", "pods", "Pod", True, "pod", ("po",), ("all",),
             subresources=(
                 _status("Pod"),
                 Subresource("attach", "PodAttachOptions", ("create", "get")),
                 Subresource("log", "Pod", ("get",)),
                 Subresource("eviction", "Eviction", ("create",), "policy"),
             )),
    Resource("", "v1", "events", "Event", True, "event", ("ev",)),
    Resource("", "v1", "namespaces", "Namespace", False, "namespace", ("ns",),
             verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
             subresources=(_status("Namespace"),)),
    Resource("", "v1", "nodes", "Node", False, "node", ("no",), subresources=(_status("Node"),)),
    Resource("", "v1", "resourcequotas", "ResourceQuota", True, "resourcequota", ("quota",),
             subresources=(_status("ResourceQuota"),)),
    Resource("batch", "v1", "jobs", "Job", True, "job", (), ("all",),
             subresources=(_status("Job", "batch"),)),
)

BY_PATH: dict[tuple[str, str, str], Resource] = {
    (r.group, r.version, r.plural): r for r in RESOURCES
}
BY_KIND: dict[str, Resource] = {r.kind: r for r in RESOURCES}


def lookup(group: str, version: str, plural: str) -> Resource | None:
    return BY_PATH.get((group, version, plural))


def group_versions() -> dict[str, list[Resource]]:
    """Resources by group ("" is the core group), in the table's order."""
    groups: dict[str, list[Resource]] = {}
    for r in RESOURCES:
        groups.setdefault(r.group, []).append(r)
    return groups
