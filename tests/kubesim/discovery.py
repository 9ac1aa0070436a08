"""Discovery documents: `/version`, `/api`, `/apis` and the per-group-version lists.

Serves both shapes kubectl understands: aggregated discovery (an `APIGroupDiscoveryList`,
sent only when the client's Accept asks for it, with the exact content type) and the legacy
one (APIVersions, APIGroupList, APIResourceList). Built once from `resources.RESOURCES`.
Nothing here does I/O.
"""

from __future__ import annotations

from typing import Any

from tests.kubesim.resources import RESOURCES, Resource, group_versions

Obj = dict[str, Any]

AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_TYPE_BETA = (
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
)

VERSION: Obj = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.4",
    "gitCommit": "59526cd4867447956156ae3a602fcbac10a2c335",
    "gitTreeState": "clean",
    "buildDate": "2025-04-22T16:02:27Z",
    "goVersion": "go1.23.6",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def wants_aggregated(accept: str) -> str | None:
    """The aggregated content type to answer with, when Accept asks for one (v2 preferred)."""
    compact = accept.replace(" ", "")
    if "as=APIGroupDiscoveryList" not in compact:
        return None
    if "v=v2;" in compact or compact.endswith("v=v2"):
        return AGGREGATED_TYPE
    return AGGREGATED_TYPE_BETA if "v=v2beta1" in compact else None


def _aggregated_resource(r: Resource) -> Obj:
    out: Obj = {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        out["shortNames"] = list(r.short_names)
    if r.categories:
        out["categories"] = list(r.categories)
    if r.subresources:
        out["subresources"] = [
            {
                "subresource": s.name,
                "responseKind": {"group": s.group, "version": s.version,
                                 "kind": s.kind or r.kind},
                "verbs": list(s.verbs),
            }
            for s in r.subresources
        ]
    return out


def _aggregated_group(group: str, members: list[Resource], content_type: str) -> Obj:
    version = members[0].version
    item: Obj = {
        "metadata": {"creationTimestamp": None},
        "versions": [{
            "version": version,
            "resources": [_aggregated_resource(r) for r in members],
            "freshness": "Current",
        }],
    }
    if group:
        item["metadata"]["name"] = group
    return item


def aggregated(core: bool, content_type: str) -> Obj:
    """`/api` (core=True) or `/apis` as an APIGroupDiscoveryList."""
    api_version = "apidiscovery.k8s.io/v2" if content_type == AGGREGATED_TYPE else \
        "apidiscovery.k8s.io/v2beta1"
    groups = group_versions()
    items = [
        _aggregated_group(g, members, content_type)
        for g, members in groups.items() if (g == "") == core
    ]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version,
            "metadata": {}, "items": items}


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address},
        ],
    }


def api_group_list() -> Obj:
    groups = []
    for group, members in group_versions().items():
        if not group:
            continue
        gv = {"groupVersion": members[0].group_version, "version": members[0].version}
        groups.append({"name": group, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(group: str) -> Obj | None:
    members = group_versions().get(group)
    if not group or not members:
        return None
    gv = {"groupVersion": members[0].group_version, "version": members[0].version}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": [gv],
            "preferredVersion": gv}


def api_resource_list(group: str, version: str) -> Obj | None:
    members = [r for r in RESOURCES if r.group == group and r.version == version]
    if not members:
        return None
    resources: list[Obj] = []
    for r in members:
        entry: Obj = {
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        if r.categories:
            entry["categories"] = list(r.categories)
        resources.append(entry)
        for s in r.subresources:
            sub: Obj = {"name": f"{r.plural}/{s.name}", "singularName": "",
                        "namespaced": r.namespaced, "kind": s.kind or r.kind,
                        "verbs": list(s.verbs)}
            if s.group:
                sub["group"], sub["version"] = s.group, s.version
            resources.append(sub)
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": members[0].group_version, "resources": resources}
