"""The REST API over the store: what each verb on each resource does, as an apiserver would.

Owns routing of `/api/v1/...` and `/apis/GROUP/VERSION/...` paths to resources, and the
verbs: create (decode, defaulting, mutating admission, validation, validating admission,
quota, dryRun=All), get, list (label and field selectors, limit/continue), watch (the
synthetic ADDED of a resourceVersion=0 watch, watching from a list's resourceVersion,
timeoutSeconds, ERROR 410 when too old), update, patch (merge, strategic, JSON patch),
delete with DeleteOptions (graceful pod deletion, a Job's Background/Foreground/Orphan and
its legacy orphan default, namespace termination), the pod `log` and `eviction`
subresources, and Table output for kubectl's human printing. The node proxy's `/logs/`
(`nodes/NODE/proxy/logs/...`) is handed to nodelogs.py.

It writes only what an apiserver writes: metadata, spec defaults, the initial status, and
deletion marks. Everything else in `status` belongs to the cluster half (cluster.py).
"""

from __future__ import annotations

import base64
import bisect
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import yaml

from tests.kubesim import apierrors, defaults, nodelogs, patches, protobuf, tables, validation
from tests.kubesim.admission import Admission, authorize
from tests.kubesim.apierrors import ApiError
from tests.kubesim.logbook import LogBook, LogStreamDropped, parse_timestamp
from tests.kubesim.resources import Resource, lookup
from tests.kubesim.scenario import Scenario, Token
from tests.kubesim.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from tests.kubesim.store import AlreadyExists, Expired, Store, Watch, now_rfc3339
from tests.kubesim.transport import Reply, Request, Stream, StreamDropped

Obj = dict[str, Any]

WATCH_MAX_SECONDS = 1800.0  # a real apiserver ends watches after 30 to 60 minutes
TERMINAL_PHASES = ("Succeeded", "Failed")
PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")


@dataclass(frozen=True)
class Route:
    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str


def parse_route(path: str) -> Route | None:
    """The resource a path names, or None for a path that is not one."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespaced = lookup(group, version, rest[2])
        if namespaced is not None and namespaced.namespaced and len(rest) <= 5:
            return Route(namespaced, rest[1], rest[3] if len(rest) > 3 else None,
                         rest[4] if len(rest) > 4 else "")
    resource = lookup(group, version, rest[0])
    if resource is None or len(rest) > 3:
        return None
    return Route(resource, None, rest[1] if len(rest) > 1 else None,
                 rest[2] if len(rest) > 2 else "")


def _strip_type(obj: Obj) -> Obj:
    """A list item as the apiserver writes it: without kind and apiVersion."""
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def _bool(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def _int(req: Request, name: str) -> int | None:
    value = req.param(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise apierrors.bad_request(f'invalid value for "{name}": {value!r}') from None


def _encode_continue(rv: str, namespace: str, name: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": int(rv), "start": [namespace, name]})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = data["start"]
        return str(namespace), str(name)
    except (ValueError, KeyError, TypeError):
        raise apierrors.bad_request("continue key is not valid: incorrect encoded start "
                                    "resourceVersion (version meta.k8s.io/v1)") from None


class Api:
    """The API half of kubesim: routes a request to a verb and answers it."""

    def __init__(self, store: Store, logbook: LogBook, scenario: Scenario,
                 admission: Admission, *, evict: Callable[[str, str], bool] | None = None):
        self.store = store
        self.logbook = logbook
        self.scenario = scenario
        self.admission = admission
        self.evict = evict
        self._streams_lock = threading.Lock()
        self._watches: set[Watch] = set()
        # The standing watch fault (cut_each_watch): (after seconds, times per watcher), and
        # how often each watcher (resource, namespace and selectors) was cut.
        self._cut_each_watch: tuple[float, int] | None = None
        self._watch_cuts: dict[tuple[str, ...], int] = {}

    # -- entry point ---------------------------------------------------------------------

    def handle(self, req: Request) -> Reply | Stream:
        proxied = nodelogs.match(req.path)
        if proxied is not None:
            return nodelogs.serve(self.store, self.logbook, req, *proxied)
        route = parse_route(req.path)
        if route is None:
            raise apierrors.no_such_path()
        r, sub = route.resource, route.subresource
        if sub and sub not in {s.name for s in r.subresources}:
            raise apierrors.no_such_path()
        method = req.method
        if route.name is None:
            if method == "GET":
                if _bool(req.param("watch")):
                    return self.watch(req, route)
                return self.list_collection(req, route)
            if method == "POST":
                return self.create(req, route)
            if method == "DELETE":
                return self.delete_collection(req, route)
            raise apierrors.method_not_allowed(method, r.plural)
        if sub == "log":
            if method != "GET":
                raise apierrors.method_not_allowed(method, r.plural)
            return self.logs(req, route)
        if sub == "eviction":
            if method != "POST":
                raise apierrors.method_not_allowed(method, r.plural)
            return self.eviction(req, route)
        if method == "GET":
            return self.get(req, route)
        if method == "PUT":
            return self.update(req, route)
        if method == "PATCH":
            return self.patch(req, route)
        if method == "DELETE" and not sub:
            return self.delete(req, route)
        raise apierrors.method_not_allowed(method, r.plural)

    # -- helpers -------------------------------------------------------------------------

    def _authorize(self, req: Request, verb: str, route: Route, name: str | None = None) -> None:
        token: Token = req.user
        r = route.resource
        namespace = route.namespace if r.namespaced else None
        authorize(token, verb, r.plural, route.subresource, r.group, namespace,
                  name if name is not None else route.name)

    def _body(self, req: Request) -> Any:
        content_type = req.header("Content-Type").split(";", 1)[0].strip()
        if content_type == protobuf.CONTENT_TYPE:
            return protobuf.decode(req.body)
        try:
            if content_type in ("application/yaml", "application/apply-patch+yaml"):
                return yaml.safe_load(req.body.decode("utf-8"))
            return json.loads(req.body or b"null", object_pairs_hook=validation.object_pairs)
        except (ValueError, yaml.YAMLError) as exc:
            raise apierrors.bad_request(
                f"couldn't get version/kind; json parse error: {exc}") from None

    def _stored(self, route: Route, name: str | None = None) -> Obj:
        r = route.resource
        obj = self.store.get_raw(r.plural, route.namespace, name or route.name or "")
        if obj is None:
            raise apierrors.not_found(r.plural, r.group, name or route.name or "")
        return obj

    def _object_reply(self, req: Request, route: Route, obj: Obj, code: int = 200,
                      headers: dict[str, str] | None = None) -> Reply:
        if tables.wants_table(req.header("Accept")):
            body = tables.table(route.resource.plural, [obj],
                                resource_version=obj["metadata"].get("resourceVersion", ""),
                                include_object=req.param("includeObject") or "Metadata")
            return Reply.json(code, body, headers=headers)
        return Reply.json(code, obj, headers=headers)

    def _dry_run(self, req: Request, options: Obj | None = None) -> bool:
        values = req.query.get("dryRun", [])
        if options and options.get("dryRun"):
            values = list(values) + list(options["dryRun"])
        for value in values:
            if value != "All":
                raise apierrors.bad_request(f'Invalid dryRun value "{value}": '
                                            'valid values are "All"')
        return bool(values)

    def _field_validation(self, req: Request) -> str:
        value = req.param("fieldValidation") or "Warn"
        if value not in ("Ignore", "Warn", "Strict"):
            raise apierrors.bad_request(
                f'fieldValidation must be one of "Ignore", "Warn", or "Strict", got {value!r}')
        return value

    @staticmethod
    def _warnings(messages: list[str]) -> dict[str, str]:
        if not messages:
            return {}
        quoted = ", ".join('299 - "' + m.replace('"', '\\"') + '"' for m in messages)
        return {"Warning": quoted}

    def _check_namespace(self, route: Route, verb: str) -> None:
        if not route.resource.namespaced or route.namespace is None:
            return
        ns = self.store.get_raw("namespaces", None, route.namespace)
        if ns is None:
            raise apierrors.not_found("namespaces", "", route.namespace)
        if verb == "create" and (ns.get("status") or {}).get("phase") == "Terminating":
            r = route.resource
            raise apierrors.forbidden_error(
                r.plural, r.group, None,
                f"unable to create new content in namespace {route.namespace} because it is "
                "being terminated")

    # -- create --------------------------------------------------------------------------

    def create(self, req: Request, route: Route) -> Reply:
        r = route.resource
        self._authorize(req, "create", route)
        obj = self._body(req)
        if not isinstance(obj, dict):
            raise apierrors.bad_request("Object 'Kind' is missing in 'null'")
        if obj.get("kind") not in (None, "", r.kind) or \
                obj.get("apiVersion") not in (None, "", r.api_version):
            raise apierrors.bad_request(
                f'the API version in the data ({obj.get("apiVersion")}) does not match the '
                f"expected API version ({r.api_version})"
                if obj.get("apiVersion") not in (None, "", r.api_version) else
                f"{obj.get('kind')} in version \"{r.version}\" cannot be handled as a "
                f"{r.kind}: no kind \"{obj.get('kind')}\" is registered for version "
                f'"{r.api_version}" in scheme "pkg/api/legacyscheme/scheme.go:30"')
        field_validation = self._field_validation(req)
        dry_run = self._dry_run(req)
        warnings = validation.decode(r.plural, obj, r.kind, r.api_version, field_validation)
        stored = self.create_object(route, obj, dry_run=dry_run, user=req.user)
        return self._object_reply(req, route, stored, 201, self._warnings(warnings))

    def create_object(self, route: Route, obj: Obj, *, dry_run: bool = False,
                      user: Token | None = None) -> Obj:
        """Everything a create does after decoding: defaults, admission, validation, store."""
        r = route.resource
        obj["kind"], obj["apiVersion"] = r.kind, r.api_version
        meta = obj.get("metadata")
        if not isinstance(meta, dict):
            meta = obj["metadata"] = {}
        if r.namespaced:
            if meta.get("namespace") and meta["namespace"] != route.namespace:
                raise apierrors.bad_request("the namespace of the provided object does not "
                                            "match the namespace sent on the request")
            meta["namespace"] = route.namespace
        else:
            meta.pop("namespace", None)
        for key in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                    "deletionGracePeriodSeconds", "generation", "managedFields", "selfLink"):
            meta.pop(key, None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = defaults.generated_name(str(meta["generateName"]))
        self._check_namespace(route, "create")
        uid = str(uuid.uuid4())
        self.admission.mutate(r.plural, obj, route.namespace)
        defaults.defaults_for(r.plural, obj, uid)
        causes = validation.validate(r.plural, obj, r.namespaced)
        if causes:
            raise apierrors.invalid_error(r.kind, r.group, str(meta.get("name") or ""), causes)
        with self.admission.lock:
            self.admission.admit(r.plural, obj, route.namespace)
            try:
                return self.store.create(r.plural, obj, dry_run=dry_run, uid=uid)
            except AlreadyExists:
                error = apierrors.already_exists(r.plural, r.group, meta["name"])
                existing = self.store.get_raw(r.plural, route.namespace, meta["name"])
                if existing is not None and existing["metadata"].get("deletionTimestamp"):
                    # The API server's own words for a name whose object is terminating.
                    error.message = f"object is being deleted: {error.message}"
                raise error from None

    # -- read ----------------------------------------------------------------------------

    def get(self, req: Request, route: Route) -> Reply:
        self._authorize(req, "get", route)
        return self._object_reply(req, route, self._stored(route))

    def _selectors(self, req: Request, route: Route) -> tuple[LabelSelector, FieldSelector]:
        try:
            labels = parse_label_selector(req.param("labelSelector"))
            fields = parse_field_selector(req.param("fieldSelector"), route.resource.plural)
        except SelectorError as exc:
            raise apierrors.bad_request(str(exc)) from None
        return labels, fields

    def list_collection(self, req: Request, route: Route) -> Reply:
        r = route.resource
        self._authorize(req, "list", route)
        labels, fields = self._selectors(req, route)
        items, rv = self.store.list_raw(r.plural, route.namespace,
                                        labels=labels if labels.requirements else None,
                                        fields=fields if fields.requirements else None)
        limit = _int(req, "limit") or 0
        token = req.param("continue")
        if token:
            start = _decode_continue(token)
            keys = [(o["metadata"].get("namespace") or "", o["metadata"]["name"]) for o in items]
            items = items[bisect.bisect_right(keys, start):]
        next_token, remaining = "", None
        if limit > 0 and len(items) > limit:
            last = items[limit - 1]["metadata"]
            next_token = _encode_continue(rv, last.get("namespace") or "", last["name"])
            remaining = len(items) - limit
            items = items[:limit]
        if tables.wants_table(req.header("Accept")):
            body = tables.table(r.plural, items, resource_version=rv, continue_token=next_token,
                                include_object=req.param("includeObject") or "Metadata")
            return Reply.json(200, body)
        meta: Obj = {"resourceVersion": rv}
        if next_token:
            meta["continue"] = next_token
            if not req.param("labelSelector") and not req.param("fieldSelector"):
                meta["remainingItemCount"] = remaining
        head = json.dumps({"kind": r.list_kind, "apiVersion": r.api_version,
                           "metadata": meta}, separators=(",", ":"))
        parts = [json.dumps(_strip_type(o), separators=(",", ":")) for o in items]
        text = head[:-1] + ',"items":[' + ",".join(parts) + "]}"
        return Reply(200, text.encode())

    # -- watch ---------------------------------------------------------------------------

    def watch(self, req: Request, route: Route) -> Stream | Reply:
        r = route.resource
        self._authorize(req, "watch", route)
        labels, fields = self._selectors(req, route)
        timeout = _int(req, "timeoutSeconds")
        seconds = WATCH_MAX_SECONDS if timeout is None or timeout <= 0 else float(timeout)
        rv = req.param("resourceVersion") or ""
        initial: list[Obj] = []
        try:
            if rv in ("", "0"):
                initial, list_rv = self.store.list_raw(r.plural, route.namespace, labels=labels,
                                                       fields=fields)
                watch = self.store.watch_parsed(r.plural, route.namespace, labels=labels,
                                                fields=fields, since_rv=int(list_rv))
            else:
                try:
                    since = int(rv)
                except ValueError:
                    raise apierrors.bad_request(
                        f'invalid resource version "{rv}"') from None
                watch = self.store.watch_parsed(r.plural, route.namespace, labels=labels,
                                                fields=fields, since_rv=since)
        except Expired as exc:
            error = apierrors.gone(str(exc)).status()
            line = json.dumps({"type": "ERROR", "object": error}).encode() + b"\n"
            return Stream(200, iter([line]), "application/json")
        with self._streams_lock:
            self._watches.add(watch)
        as_table = tables.wants_table(req.header("Accept"))
        include = req.param("includeObject") or "Metadata"
        watcher = (r.plural, route.namespace or "", req.param("labelSelector") or "",
                   req.param("fieldSelector") or "")
        return Stream(200, self._events(watch, initial, seconds, r.plural, as_table, include,
                                        self._cut_deadline(watcher)),
                      "application/json")

    def _cut_deadline(self, watcher: tuple[str, ...]) -> tuple[float, tuple[str, ...]] | None:
        """When the standing fault cuts this watch: (monotonic time, watcher), or None."""
        with self._streams_lock:
            policy = self._cut_each_watch
            if policy is None or self._watch_cuts.get(watcher, 0) >= policy[1]:
                return None
            return time.monotonic() + policy[0], watcher

    def _events(self, watch: Watch, initial: list[Obj], seconds: float, resource: str,
                as_table: bool, include: str,
                cut: tuple[float, tuple[str, ...]] | None = None) -> Iterator[bytes]:
        deadline = time.monotonic() + seconds
        if cut is not None:
            deadline = min(deadline, cut[0])
        first = [True]

        def line(kind: str, obj: Obj) -> bytes:
            shown: Obj = obj
            if as_table:
                shown = tables.table(resource, [obj],
                                     resource_version=obj["metadata"].get("resourceVersion", ""),
                                     include_object=include, with_columns=first[0])
                first[0] = False
            return json.dumps({"type": kind, "object": shown},
                              separators=(",", ":")).encode() + b"\n"

        try:
            if initial:
                yield b"".join(line("ADDED", o) for o in initial)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0 and cut is not None and cut[0] <= deadline:
                    with self._streams_lock:
                        self._watch_cuts[cut[1]] = self._watch_cuts.get(cut[1], 0) + 1
                    raise StreamDropped()
                if remaining <= 0:
                    return
                item = watch.next_raw(timeout=min(1.0, remaining))
                if item is None:
                    if watch.closed:
                        if watch.dropped:
                            raise StreamDropped()
                        return
                    yield b""
                    continue
                yield line(*item)
        finally:
            watch.close()
            with self._streams_lock:
                self._watches.discard(watch)

    def open_watches(self) -> int:
        with self._streams_lock:
            return len(self._watches)

    def pending_events(self) -> int:
        """Events queued on open watches and not yet sent."""
        with self._streams_lock:
            return sum(w.pending() for w in self._watches)

    def cut_each_watch(self, after_seconds: float, times: int) -> int:
        """The standing watch fault: from now on, every watch is cut `after_seconds` after it
        began, until the same watcher (resource, namespace, selectors) has been cut `times`
        times. Returns how many watchers were cut so far."""
        with self._streams_lock:
            self._cut_each_watch = (after_seconds, times) if times > 0 else None
            return len(self._watch_cuts)

    def watch_cut_counts(self) -> dict[int, int]:
        """How many watchers were cut how many times (cut_each_watch)."""
        with self._streams_lock:
            counts: dict[int, int] = {}
            for cuts in self._watch_cuts.values():
                counts[cuts] = counts.get(cuts, 0) + 1
            return counts

    def drop_watches(self) -> int:
        """The fault: cut every open API watch; returns how many were open."""
        with self._streams_lock:
            watches = list(self._watches)
        for watch in watches:
            watch.close(dropped=True)
        return len(watches)

    # -- update and patch ----------------------------------------------------------------

    def update(self, req: Request, route: Route) -> Reply:
        r = route.resource
        self._authorize(req, "update", route)
        new = self._body(req)
        if not isinstance(new, dict):
            raise apierrors.bad_request("Object 'Kind' is missing in 'null'")
        name = (new.get("metadata") or {}).get("name")
        if name and name != route.name:
            raise apierrors.bad_request(f"the name of the object ({name}) does not match the "
                                        f"name on the URL ({route.name})")
        warnings = validation.decode(r.plural, new, r.kind, r.api_version,
                                     self._field_validation(req))
        stored = self._replace(req, route, lambda _old: new)
        return self._object_reply(req, route, stored, 200, self._warnings(warnings))

    def patch(self, req: Request, route: Route) -> Reply:
        r = route.resource
        self._authorize(req, "patch", route)
        body = self._body(req)
        content_type = req.header("Content-Type")
        if content_type.split(";", 1)[0].strip() == patches.APPLY:
            return self._server_side_apply(req, route, body)

        def patched(old: Obj) -> Obj:
            new = patches.apply(r.plural, content_type, old, body)
            if not isinstance(new, dict):
                raise apierrors.bad_request("the patch does not produce an object")
            validation.decode(r.plural, new, r.kind, r.api_version,
                              self._field_validation(req))
            return new

        stored = self._replace(req, route, patched)
        return self._object_reply(req, route, stored)

    def _server_side_apply(self, req: Request, route: Route, body: Any) -> Reply:
        """Server-side apply, approximated: create when absent, else a strategic merge (lists
        merged by key; no field ownership, so fields dropped from the applied configuration
        are not removed)."""
        r = route.resource
        if not isinstance(body, dict):
            raise apierrors.bad_request("the applied configuration is not an object")
        name = (body.get("metadata") or {}).get("name")
        if name and name != route.name:
            raise apierrors.bad_request(f"the name of the object ({name}) does not match the "
                                        f"name on the URL ({route.name})")
        warnings = validation.decode(r.plural, body, r.kind, r.api_version,
                                     self._field_validation(req))
        if self.store.get_raw(r.plural, route.namespace, route.name or "") is None:
            self._authorize(req, "create", route)
            body.setdefault("metadata", {})["name"] = route.name
            created = self.create_object(Route(r, route.namespace, None, ""), body,
                                         dry_run=self._dry_run(req), user=req.user)
            return self._object_reply(req, route, created, 201, self._warnings(warnings))
        stored = self._replace(req, route, lambda old: patches.apply(r.plural, patches.APPLY,
                                                                     old, body))
        return self._object_reply(req, route, stored, 200, self._warnings(warnings))

    def _replace(self, req: Request, route: Route, change: Callable[[Obj], Obj]) -> Obj:
        """Update an object (or its status) through `change`, checking what an update may
        not do; finishes the deletion of an object whose last finalizer went."""
        r = route.resource
        dry_run = self._dry_run(req)
        status_only = route.subresource == "status"

        def mutate(current: Obj) -> None:
            old = json.loads(json.dumps(current))
            new = change(json.loads(json.dumps(current)))
            meta = new.setdefault("metadata", {})
            expected = meta.get("resourceVersion")
            if expected and expected != old["metadata"].get("resourceVersion"):
                raise apierrors.conflict(r.plural, r.group, route.name or "",
                                         "the object has been modified; please apply your "
                                         "changes to the latest version and try again")
            if status_only:
                result = dict(old, status=new.get("status", {}))
            else:
                result = dict(new)
                if "status" in old:
                    result["status"] = old["status"]
                else:
                    result.pop("status", None)
                kept = {k: old["metadata"][k] for k in (
                    "uid", "creationTimestamp", "deletionTimestamp",
                    "deletionGracePeriodSeconds", "namespace", "name", "generation")
                    if k in old["metadata"]}
                result["metadata"] = {**meta, **kept}
                causes = validation.validate(r.plural, result, r.namespaced) + \
                    validation.validate_update(r.plural, old, result)
                if causes:
                    raise apierrors.invalid_error(r.kind, r.group, route.name or "", causes)
            result["kind"], result["apiVersion"] = r.kind, r.api_version
            current.clear()
            current.update(result)

        if dry_run:
            probe: Obj = json.loads(json.dumps(self._stored(route)))
            mutate(probe)
            return probe
        updated = self.store.update(r.plural, route.namespace, route.name or "", mutate)
        if updated is None:
            raise apierrors.not_found(r.plural, r.group, route.name or "")
        meta = updated["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and r.plural != "pods":
            self.store.delete(r.plural, route.namespace, route.name or "")
        return updated

    # -- delete --------------------------------------------------------------------------

    def _delete_options(self, req: Request) -> Obj:
        options: Obj = {}
        if req.body.strip():
            body = self._body(req)
            if isinstance(body, dict):
                validation.decode("deleteoptions", body, "DeleteOptions", "v1", "Ignore")
                options = body
        for key in ("gracePeriodSeconds",):
            value = _int(req, key)
            if value is not None:
                options[key] = value
        if req.param("propagationPolicy"):
            options["propagationPolicy"] = req.param("propagationPolicy")
        if req.param("orphanDependents"):
            options["orphanDependents"] = _bool(req.param("orphanDependents"))
        policy = options.get("propagationPolicy")
        if policy is not None and policy not in ("Orphan", "Background", "Foreground"):
            raise apierrors.invalid_error("DeleteOptions", "", "", [apierrors.unsupported(
                "propagationPolicy", policy, ["Foreground", "Background", "Orphan", "nil"])])
        return options

    def delete(self, req: Request, route: Route) -> Reply:
        self._authorize(req, "delete", route)
        options = self._delete_options(req)
        dry_run = self._dry_run(req, options)
        result = self.delete_object(route, options, dry_run=dry_run)
        return Reply.json(200, result)

    def delete_object(self, route: Route, options: Obj, *, dry_run: bool = False) -> Obj:
        """Delete as the apiserver does; returns what the DELETE answers with."""
        r = route.resource
        name = route.name or ""
        obj = self._stored(route)
        meta = obj["metadata"]
        preconditions = options.get("preconditions") or {}
        if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
            raise apierrors.conflict(
                r.plural, r.group, name,
                f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                f"UID in object meta: {meta.get('uid')}")
        if preconditions.get("resourceVersion") and \
                preconditions["resourceVersion"] != meta.get("resourceVersion"):
            raise apierrors.conflict(
                r.plural, r.group, name,
                f"Precondition failed: ResourceVersion in precondition: "
                f"{preconditions['resourceVersion']}, ResourceVersion in object meta: "
                f"{meta.get('resourceVersion')}")
        if r.plural == "namespaces" and name in PROTECTED_NAMESPACES:
            raise apierrors.forbidden_error("namespaces", "", name,
                                            "this namespace may not be deleted")
        if dry_run:
            return obj
        if r.plural == "pods":
            return self._delete_pod(route, obj, options)
        if r.plural == "jobs":
            return self._delete_job(route, obj, options)
        if r.plural == "namespaces":
            return self._terminate_namespace(obj)
        if meta.get("finalizers"):
            return self._mark_deleted(route, 0, None) or obj
        self.store.delete(r.plural, route.namespace, name)
        return self._success(route, meta)

    @staticmethod
    def _success(route: Route, meta: Obj) -> Obj:
        r = route.resource
        details: Obj = {"name": meta.get("name"), "kind": r.plural, "uid": meta.get("uid")}
        if r.group:
            details["group"] = r.group
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": details}

    def _mark_deleted(self, route: Route, grace: int, finalizer: str | None) -> Obj | None:
        def mark(obj: Obj) -> None:
            meta = obj["metadata"]
            if not meta.get("deletionTimestamp") or \
                    grace < int(meta.get("deletionGracePeriodSeconds") or 0):
                moment = datetime.now(timezone.utc) + timedelta(seconds=grace)
                meta["deletionTimestamp"] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
                meta["deletionGracePeriodSeconds"] = grace
            if finalizer and finalizer not in (meta.get("finalizers") or []):
                meta["finalizers"] = [*(meta.get("finalizers") or []), finalizer]
        return self.store.update(route.resource.plural, route.namespace, route.name or "", mark)

    def _delete_pod(self, route: Route, pod: Obj, options: Obj) -> Obj:
        spec, meta = pod.get("spec") or {}, pod["metadata"]
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = spec.get("terminationGracePeriodSeconds")
        grace = 30 if grace is None else max(0, int(grace))
        phase = (pod.get("status") or {}).get("phase")
        if spec.get("nodeName") and phase not in TERMINAL_PHASES and grace > 0:
            if meta.get("deletionTimestamp") and \
                    grace >= int(meta.get("deletionGracePeriodSeconds") or 0):
                return pod
            marked = self._mark_deleted(route, grace, None)
            if marked is not None:
                return marked
        gone = self.store.delete("pods", route.namespace, route.name or "")
        if gone is None:
            raise apierrors.not_found("pods", "", route.name or "")
        if not spec.get("nodeName") or phase in TERMINAL_PHASES:
            self.logbook.remove(route.namespace or "", route.name or "")
        return gone

    def _delete_job(self, route: Route, job: Obj, options: Obj) -> Obj:
        meta = job["metadata"]
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy is None:
            policy = "Orphan"  # the legacy default of batch/v1 Jobs deleted through the API
        if meta.get("deletionTimestamp"):
            return job
        if policy == "Foreground":
            marked = self._mark_deleted(route, 0, "foregroundDeletion")
            return marked if marked is not None else job
        if policy == "Orphan":
            self._orphan_children(route.namespace or "", meta.get("uid", ""))
        self.store.delete("jobs", route.namespace, route.name or "")
        return self._success(route, meta)

    def _orphan_children(self, namespace: str, owner_uid: str) -> None:
        pods, _ = self.store.list_raw("pods", namespace)
        owned = [p["metadata"]["name"] for p in pods
                 if any(ref.get("uid") == owner_uid
                        for ref in p["metadata"].get("ownerReferences") or [])]

        def strip(pod: Obj) -> None:
            refs = [ref for ref in pod["metadata"].get("ownerReferences") or []
                    if ref.get("uid") != owner_uid]
            if refs:
                pod["metadata"]["ownerReferences"] = refs
            else:
                pod["metadata"].pop("ownerReferences", None)

        for name in owned:
            self.store.update("pods", namespace, name, strip)

    def _terminate_namespace(self, ns: Obj) -> Obj:
        name = ns["metadata"]["name"]

        def terminate(obj: Obj) -> None:
            obj["metadata"].setdefault("deletionTimestamp", now_rfc3339())
            obj["metadata"].setdefault("deletionGracePeriodSeconds", 0)
            obj["status"] = {"phase": "Terminating"}

        updated = self.store.update("namespaces", None, name, terminate)
        return updated if updated is not None else ns

    def delete_collection(self, req: Request, route: Route) -> Reply:
        r = route.resource
        self._authorize(req, "deletecollection", route)
        labels, fields = self._selectors(req, route)
        options = self._delete_options(req)
        dry_run = self._dry_run(req, options)
        items, rv = self.store.list_raw(r.plural, route.namespace, labels=labels, fields=fields)
        deleted = []
        with self.store.batch():
            for item in items:
                meta = item["metadata"]
                one = Route(r, meta.get("namespace"), meta["name"], "")
                with contextlib.suppress(ApiError):
                    self.delete_object(one, options, dry_run=dry_run)
                    deleted.append(_strip_type(item))
        return Reply.json(200, {"kind": r.list_kind, "apiVersion": r.api_version,
                                "metadata": {"resourceVersion": rv}, "items": deleted})

    # -- pod subresources ----------------------------------------------------------------

    def eviction(self, req: Request, route: Route) -> Reply:
        self._authorize(req, "create", route)
        body = self._body(req)
        options = (body or {}).get("deleteOptions") or {} if isinstance(body, dict) else {}
        self._stored(route)
        if self._dry_run(req, options):
            return Reply.json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Success", "code": 201})
        self._delete_pod(Route(route.resource, route.namespace, route.name, ""),
                         self._stored(route), options)
        return Reply.json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Success", "code": 201})

    def logs(self, req: Request, route: Route) -> Reply | Stream:
        self._authorize(req, "get", route)
        pod = self._stored(route)
        pod_name = route.name or ""
        namespace = route.namespace or ""
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        names = [c.get("name") for c in spec.get("containers") or []]
        inits = [c.get("name") for c in spec.get("initContainers") or []]
        container = req.param("container")
        if not container:
            if len(names) != 1:
                message = (f"a container name must be specified for pod {pod_name}, choose "
                           f"one of: [{' '.join(str(n) for n in names)}]")
                if inits:
                    message += f" or one of the init containers: [{' '.join(inits)}]"
                raise apierrors.bad_request(message)
            container = str(names[0])
        elif container not in names and container not in inits:
            raise apierrors.bad_request(f"container {container} is not valid for pod {pod_name}")
        since_seconds = _int(req, "sinceSeconds")
        since_time_text = req.param("sinceTime")
        if since_seconds is not None and since_time_text:
            raise apierrors.bad_request("at most one of `sinceTime` or `sinceSeconds` may be "
                                        "specified")
        if since_seconds is not None and since_seconds < 1:
            raise apierrors.invalid_error("PodLogOptions", "", "", [apierrors.invalid(
                "sinceSeconds", since_seconds, "must be greater than 0")])
        since_time = None
        if since_time_text:
            try:
                since_time = parse_timestamp(since_time_text)
            except ValueError:
                raise apierrors.bad_request(
                    f'parsing time "{since_time_text}" as "2006-01-02T15:04:05Z07:00": cannot '
                    "parse") from None
        tail = _int(req, "tailLines")
        limit_bytes = _int(req, "limitBytes")
        follow = _bool(req.param("follow"))
        if _bool(req.param("previous")):
            raise apierrors.bad_request(f'previous terminated container "{container}" in pod '
                                        f'"{pod_name}" not found')
        if not self.logbook.has_records(namespace, pod_name, container):
            if not spec.get("nodeName"):
                return Reply(200, b"", "text/plain")
            self._check_startable(status, container, pod_name)
        chunks = self.logbook.read(namespace, pod_name, container, since_time=since_time,
                                   since_seconds=since_seconds, follow=follow,
                                   timestamps=_bool(req.param("timestamps")),
                                   tail_lines=tail)
        return Stream(200, self._log_chunks(chunks, limit_bytes), "text/plain")

    @staticmethod
    def _check_startable(status: Obj, container: str, pod: str) -> None:
        """The kubelet's refusal to serve a container with no log yet."""
        statuses = (status.get("containerStatuses") or []) + \
            (status.get("initContainerStatuses") or [])
        found = next((s for s in statuses if s.get("name") == container), None)
        prefix = f'container "{container}" in pod "{pod}"'
        if found is None:
            raise apierrors.bad_request(f"{prefix} is waiting to start: ContainerCreating")
        state = found.get("state") or {}
        if state.get("running") is not None or state.get("terminated") is not None or \
                (found.get("lastState") or {}).get("terminated") is not None:
            return
        reason = (state.get("waiting") or {}).get("reason")
        if reason == "ErrImagePull":
            raise apierrors.bad_request(f"{prefix} is waiting to start: image can't be pulled")
        if reason == "ImagePullBackOff":
            raise apierrors.bad_request(f"{prefix} is waiting to start: trying and failing to "
                                        "pull image")
        if reason:
            raise apierrors.bad_request(f"{prefix} is waiting to start: {reason}")
        raise apierrors.bad_request(f"{prefix} is waiting to start - no logs yet")

    @staticmethod
    def _log_chunks(chunks: Iterator[bytes], limit_bytes: int | None) -> Iterator[bytes]:
        sent = 0
        try:
            for chunk in chunks:
                if limit_bytes is not None and limit_bytes > 0:
                    chunk = chunk[:max(0, limit_bytes - sent)]
                    sent += len(chunk)
                    if chunk:
                        yield chunk
                    if sent >= limit_bytes:
                        return
                    continue
                yield chunk
        except LogStreamDropped:
            raise StreamDropped() from None
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
