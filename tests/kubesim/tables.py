"""Server-side printing: objects as `meta.k8s.io/v1` Tables, for kubectl's human output.

`kubectl get` (without `-o`) asks for `as=Table`; the columns and cell values here follow
the apiserver's printers (pkg/printers/internalversion) for pods, jobs, events, namespaces,
nodes and resource quotas, including the STATUS a pod shows (the waiting or terminated
reason of its containers, Terminating, Init:N/M) and ages as `HumanDuration` writes them.
Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

Obj = dict[str, Any]
Column = tuple[str, str, int]  # name, format, priority

NAME_DOC = "Name must be unique within a namespace."
AGE_DOC = "CreationTimestamp is a timestamp representing the server time when this object " \
          "was created."


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def since(text: str | None, now: datetime) -> str:
    moment = _parse_time(text)
    return "<unknown>" if moment is None else human_duration((now - moment).total_seconds())


def _pod_cells(pod: Obj, now: datetime) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    meta = pod.get("metadata") or {}
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    restarts = 0
    last_restart: str | None = None
    initializing = False
    inits = status.get("initContainerStatuses") or []
    for i, c in enumerate(inits):
        restarts += int(c.get("restartCount") or 0)
        state = c.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated and terminated.get("exitCode") == 0:
            continue
        if terminated:
            reason = "Init:" + terminated["reason"] if terminated.get("reason") else \
                f"Init:ExitCode:{terminated.get('exitCode')}"
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(spec.get('initContainers') or [])}"
        initializing = True
        break
    ready = 0
    initialized = any(c.get("type") == "Initialized" and c.get("status") == "True"
                      for c in status.get("conditions") or [])
    if not initializing or initialized:
        restarts = 0
        has_running = False
        for c in reversed(status.get("containerStatuses") or []):
            restarts += int(c.get("restartCount") or 0)
            last = ((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
            if last and (last_restart is None or last > last_restart):
                last_restart = last
            state = c.get("state") or {}
            waiting, terminated = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated and terminated.get("reason"):
                reason = terminated["reason"]
            elif terminated:
                signal = terminated.get("signal")
                reason = f"Signal:{signal}" if signal else \
                    f"ExitCode:{terminated.get('exitCode')}"
            elif c.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            ready_condition = any(c.get("type") == "Ready" and c.get("status") == "True"
                                  for c in status.get("conditions") or [])
            reason = "Running" if ready_condition else "NotReady"
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart:
        restarts_text = f"{restarts} ({since(last_restart, now)} ago)"
    gates = spec.get("readinessGates") or []
    return [
        meta.get("name"), f"{ready}/{len(spec.get('containers') or [])}", reason,
        restarts_text, since(meta.get("creationTimestamp"), now),
        status.get("podIP") or "<none>", spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        f"0/{len(gates)}" if gates else "<none>",
    ]


def _has_condition(obj: Obj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def _job_cells(job: Obj, now: datetime) -> list[Any]:
    spec, status, meta = job.get("spec") or {}, job.get("status") or {}, job.get("metadata") or {}
    if _has_condition(job, "Complete"):
        state = "Complete"
    elif _has_condition(job, "Failed"):
        state = "Failed"
    elif meta.get("deletionTimestamp"):
        state = "Terminating"
    elif _has_condition(job, "Suspended"):
        state = "Suspended"
    elif _has_condition(job, "FailureTarget"):
        state = "FailureTarget"
    elif _has_condition(job, "SuccessCriteriaMet"):
        state = "SuccessCriteriaMet"
    else:
        state = "Running"
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    else:
        completions = f"{succeeded}/1 of {spec.get('parallelism', 1)}"
    start, end = _parse_time(status.get("startTime")), _parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration(((end or now) - start).total_seconds())
    tspec = ((spec.get("template") or {}).get("spec") or {})
    containers = tspec.get("containers") or []
    selector = ",".join(f"{k}={v}" for k, v in
                        sorted(((spec.get("selector") or {}).get("matchLabels") or {}).items()))
    return [meta.get("name"), state, completions, duration,
            since(meta.get("creationTimestamp"), now),
            ",".join(str(c.get("name")) for c in containers),
            ",".join(str(c.get("image")) for c in containers), selector or "<none>"]


def _event_cells(event: Obj, now: datetime) -> list[Any]:
    meta = event.get("metadata") or {}
    first = event.get("firstTimestamp") or event.get("eventTime")
    last = event.get("lastTimestamp") or event.get("eventTime") or first
    count = int(event.get("count") or 0)
    last_seen = since(last, now)
    if count > 1:
        last_seen = f"{last_seen} (x{count} over {since(first, now)})"
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    source_text = ", ".join(v for v in (source.get("component"), source.get("host")) if v)
    return [last_seen, event.get("type") or "", event.get("reason") or "",
            f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
            involved.get("fieldPath") or "", source_text or event.get("reportingComponent", ""),
            event.get("message") or "", since(first, now), count, meta.get("name")]


def _namespace_cells(ns: Obj, now: datetime) -> list[Any]:
    meta = ns.get("metadata") or {}
    return [meta.get("name"), (ns.get("status") or {}).get("phase", ""),
            since(meta.get("creationTimestamp"), now)]


def _node_cells(node: Obj, now: datetime) -> list[Any]:
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    state = "Unknown"
    if ready:
        state = "Ready" if ready[0].get("status") == "True" else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    roles = sorted(k.split("/", 1)[1] for k in (meta.get("labels") or {})
                   if k.startswith("node-role.kubernetes.io/"))
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [meta.get("name"), state, ",".join(roles) or "<none>",
            since(meta.get("creationTimestamp"), now), info.get("kubeletVersion", ""),
            addresses.get("InternalIP", "<none>"), addresses.get("ExternalIP", "<none>"),
            info.get("osImage", "<unknown>"), info.get("kernelVersion", "<unknown>"),
            info.get("containerRuntimeVersion", "<unknown>")]


def _quota_cells(quota: Obj, now: datetime) -> list[Any]:
    meta, status = quota.get("metadata") or {}, quota.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    request = [f"{k}: {used.get(k, '0')}/{v}" for k, v in sorted(hard.items())
               if not k.startswith("limits.")]
    limit = [f"{k}: {used.get(k, '0')}/{v}" for k, v in sorted(hard.items())
             if k.startswith("limits.")]
    return [meta.get("name"), since(meta.get("creationTimestamp"), now), ", ".join(request),
            ", ".join(limit)]


PRINTERS: dict[str, tuple[list[Column], Callable[[Obj, datetime], list[Any]]]] = {
    "pods": ([("Name", "name", 0), ("Ready", "", 0), ("Status", "", 0), ("Restarts", "", 0),
              ("Age", "", 0), ("IP", "", 1), ("Node", "", 1), ("Nominated Node", "", 1),
              ("Readiness Gates", "", 1)], _pod_cells),
    "jobs": ([("Name", "name", 0), ("Status", "", 0), ("Completions", "", 0),
              ("Duration", "", 0), ("Age", "", 0), ("Containers", "", 1), ("Images", "", 1),
              ("Selector", "", 1)], _job_cells),
    "events": ([("Last Seen", "", 0), ("Type", "", 0), ("Reason", "", 0), ("Object", "", 0),
                ("Subobject", "", 1), ("Source", "", 1), ("Message", "", 0),
                ("First Seen", "", 1), ("Count", "", 1), ("Name", "", 1)], _event_cells),
    "namespaces": ([("Name", "name", 0), ("Status", "", 0), ("Age", "", 0)],
                   _namespace_cells),
    "nodes": ([("Name", "name", 0), ("Status", "", 0), ("Roles", "", 0), ("Age", "", 0),
               ("Version", "", 0), ("Internal-IP", "", 1), ("External-IP", "", 1),
               ("OS-Image", "", 1), ("Kernel-Version", "", 1), ("Container-Runtime", "", 1)],
              _node_cells),
    "resourcequotas": ([("Name", "name", 0), ("Age", "", 0), ("Request", "", 0),
                        ("Limit", "", 0)], _quota_cells),
}


def wants_table(accept: str) -> bool:
    return "as=Table" in accept.replace(" ", "")


def _column_definitions(columns: list[Column]) -> list[Obj]:
    return [{"name": name, "type": "integer" if name == "Count" else "string",
             "format": fmt, "description": NAME_DOC if fmt == "name" else
             AGE_DOC if name == "Age" else name, "priority": priority}
            for name, fmt, priority in columns]


def _row_object(obj: Obj, include: str) -> Obj:
    if include == "Object":
        return obj
    if include == "None":
        return {}
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}


def table(resource: str, items: list[Obj], *, resource_version: str, continue_token: str = "",
          include_object: str = "Metadata", with_columns: bool = True) -> Obj:
    """A Table of `items`; without a printer for the resource, Name and Age only."""
    columns, cells = PRINTERS.get(resource, ([("Name", "name", 0), ("Age", "", 0)], lambda o, n: [
        (o.get("metadata") or {}).get("name"),
        since((o.get("metadata") or {}).get("creationTimestamp"), n)]))
    now = datetime.now(timezone.utc)
    meta: Obj = {"resourceVersion": resource_version}
    if continue_token:
        meta["continue"] = continue_token
    out: Obj = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta}
    if with_columns:
        out["columnDefinitions"] = _column_definitions(columns)
    out["rows"] = [{"cells": cells(o, now), "object": _row_object(o, include_object)}
                   for o in items]
    return out
