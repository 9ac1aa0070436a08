"""Defaulting at create time, as a 1.32 apiserver does it: the scheme's defaults, the
strategies' PrepareForCreate, and the built-in mutating plugins (ServiceAccount, Priority).

Pods: dnsPolicy, restartPolicy, schedulerName, terminationGracePeriodSeconds,
serviceAccountName, securityContext, enableServiceLinks, priority, preemptionPolicy, the
not-ready/unreachable tolerations, per container imagePullPolicy by tag,
terminationMessagePath/Policy, resources (requests default to limits), port protocols,
probe defaults; the service account token volume; status {phase: Pending, qosClass}.
Jobs: the selector with the controller uid, the controller-uid/job-name labels (both
spellings), backoffLimit, completions, parallelism, completionMode, suspend,
podReplacementPolicy, and the template's pod defaults. Namespaces: the name label,
the kubernetes finalizer and phase Active. Nothing here does I/O.
"""

from __future__ import annotations

import random
from typing import Any

from tests.kubesim.podstatus import qos_class

Obj = dict[str, Any]

TOLERATION_SECONDS = 300
TOKEN_VOLUME_PREFIX = "kube-api-access-"
SA_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def random_suffix(length: int = 5) -> str:
    """The apiserver's name-generation alphabet: consonants and digits without lookalikes."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(random.choice(alphabet) for _ in range(length))


def image_pull_policy(image: str) -> str:
    """Always for `:latest` or no tag (a digest counts as pinned), IfNotPresent otherwise."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if ":" not in last:
        return "Always"
    return "Always" if last.rsplit(":", 1)[1] == "latest" else "IfNotPresent"


def _probe(probe: Obj) -> None:
    probe.setdefault("timeoutSeconds", 1)
    probe.setdefault("periodSeconds", 10)
    probe.setdefault("successThreshold", 1)
    probe.setdefault("failureThreshold", 3)
    http = probe.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")


def _container(c: Obj) -> None:
    if isinstance(c.get("image"), str):
        c.setdefault("imagePullPolicy", image_pull_policy(c["image"]))
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    resources = c.setdefault("resources", {})
    if isinstance(resources, dict):
        limits = resources.get("limits")
        if isinstance(limits, dict) and limits:
            requests = resources.setdefault("requests", {})
            if isinstance(requests, dict):
                for name, value in limits.items():
                    requests.setdefault(name, value)
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in c.get("env") or []:
        ref = env.get("valueFrom", {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        if isinstance(c.get(key), dict):
            _probe(c[key])


def pod_spec(spec: Obj, *, in_template: bool = False) -> None:
    """The scheme defaults of a PodSpec (also applied to Job pod templates)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    if "serviceAccount" in spec and "serviceAccountName" not in spec:
        spec["serviceAccountName"] = spec["serviceAccount"]
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _container(c)
    for volume in spec.get("volumes") or []:
        if not isinstance(volume, dict):
            continue
        for source in ("configMap", "secret", "projected", "downwardAPI"):
            if isinstance(volume.get(source), dict):
                volume[source].setdefault("defaultMode", 420)
        if not any(k != "name" for k in volume):
            volume["emptyDir"] = {}
    if not in_template:
        spec.setdefault("enableServiceLinks", True)


def _tolerations(spec: Obj) -> None:
    """DefaultTolerationSeconds: tolerate not-ready and unreachable for 300 s."""
    tolerations = spec.setdefault("tolerations", [])
    keys = {t.get("key") for t in tolerations if isinstance(t, dict)}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if key not in keys:
            tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": TOLERATION_SECONDS})


def _service_account(spec: Obj) -> None:
    """The ServiceAccount admission plugin: the default account and its token volume."""
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    if spec.get("automountServiceAccountToken") is False:
        return
    volumes = spec.setdefault("volumes", [])
    name = TOKEN_VOLUME_PREFIX + random_suffix()
    volumes.append({"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt",
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}})
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if not isinstance(c, dict):
                continue
            mounts = c.setdefault("volumeMounts", [])
            if not any(m.get("mountPath") == SA_MOUNT_PATH for m in mounts
                       if isinstance(m, dict)):
                mounts.append({"name": name, "mountPath": SA_MOUNT_PATH, "readOnly": True})


def pod(obj: Obj) -> None:
    """Defaults and admission mutations of a new Pod, and its initial status."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    pod_spec(spec)
    _tolerations(spec)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    _service_account(spec)
    obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def job(obj: Obj, uid: str) -> None:
    """Defaults of a new Job; `uid` is the uid the Job is about to be stored with."""
    spec = obj.setdefault("spec", {})
    meta = obj.setdefault("metadata", {})
    if not isinstance(spec, dict):
        return
    template = spec.setdefault("template", {})
    tmeta = template.setdefault("metadata", {})
    # SetDefaults_Job copies the template labels map into an empty metadata.labels; in Go
    # both then share one map, so the labels generateSelector adds below land on the Job too.
    share_labels = not meta.get("labels") and tmeta.get("labels") is not None
    parallelism = spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1 if parallelism is not None else None)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    if not spec.get("manualSelector"):
        labels = tmeta.setdefault("labels", {})
        labels.update({
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": meta.get("name", ""),
            "controller-uid": uid,
            "job-name": meta.get("name", ""),
        })
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        if share_labels:
            meta["labels"] = dict(labels)
    tmeta.setdefault("creationTimestamp", None)
    tspec = template.setdefault("spec", {})
    if isinstance(tspec, dict):
        pod_spec(tspec, in_template=True)
    obj["status"] = {}


def namespace(obj: Obj) -> None:
    name = obj.get("metadata", {}).get("name", "")
    obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    obj["spec"] = {"finalizers": ["kubernetes"]}
    obj["status"] = {"phase": "Active"}


def generated_name(prefix: str) -> str:
    return prefix + random_suffix()


def defaults_for(resource: str, obj: Obj, uid: str) -> None:
    """Apply the create-time defaults of `resource` to `obj` in place."""
    if resource == "pods":
        pod(obj)
    elif resource == "jobs":
        job(obj, uid)
    elif resource == "namespaces":
        namespace(obj)
    elif resource == "resourcequotas":
        hard = (obj.get("spec") or {}).get("hard") or {}
        obj["status"] = {"hard": dict(hard), "used": {}}

