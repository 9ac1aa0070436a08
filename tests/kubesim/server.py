"""KubeSim: one simulated cluster, the API server and (when present) the cluster half.

Owns assembly and lifecycle: the store, the log book, the scenario with its admin token,
the TLS material, the transport, the API, the control API, housekeeping, and the Cluster
from `cluster.py` (imported lazily: without it the API still serves, pods stay Pending).
Also the request pipeline before the API: authentication (401), the paths every client may
read (`/version`, discovery, OpenAPI), and the `/kubesim/` control API. And the kubeconfig
a client needs (context `kubesim`, namespace `default`, the CA data and the token).
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import secrets
import sys
import threading
import time
import traceback
from typing import Any

from tests.kubesim import apierrors, attach, control, defaults, discovery, openapi, tls, validation
from tests.kubesim import exec as kubesim_exec
from tests.kubesim.admission import Admission, authenticate
from tests.kubesim.api import Api, Route, parse_route
from tests.kubesim.housekeeping import Housekeeping
from tests.kubesim.logbook import LogBook
from tests.kubesim.resources import RESOURCES
from tests.kubesim.scenario import Scenario
from tests.kubesim.store import Store
from tests.kubesim.transport import Reply, Request, Stream, Transport, Upgrade

Obj = dict[str, Any]

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NO_CACHE = {"Cache-Control": "no-cache, private"}


def load_cluster_class() -> Any:
    """`cluster.Cluster`, or None while the cluster half is not there."""
    try:
        module = importlib.import_module("tests.kubesim.cluster")
    except ModuleNotFoundError as exc:
        if exc.name == "tests.kubesim.cluster":
            return None
        raise
    return getattr(module, "Cluster", None)


class KubeSim:
    """A simulated cluster listening on https://127.0.0.1:PORT."""

    def __init__(self, scenario: Scenario | None = None, *, port: int = 0,
                 token: str | None = None, with_cluster: bool = True, verbose: bool = False,
                 latency_ms: int = 0):
        self.token = token or secrets.token_urlsafe(24)
        self.scenario = (scenario or Scenario()).with_admin_token(self.token)
        self.store = Store()
        self.logbook = LogBook()
        self.tls = tls.generate()
        self.admission = Admission(self.store, self.scenario)
        self.api = Api(self.store, self.logbook, self.scenario, self.admission, evict=self.evict)
        # latency_ms stands for a remote API server's round trip (transport.py).
        self.transport = Transport(self.handle, self.tls.server_context(), port,
                                   verbose=verbose, latency=latency_ms / 1000)
        self.housekeeping = Housekeeping(self.store, self._delete_for_housekeeping)
        self.with_cluster = with_cluster
        self.cluster: Any = None
        self.verbose = verbose
        self._stopped = False
        self._restart_lock = threading.Lock()
        self._restarts: list[threading.Thread] = []
        self._restart_at_delete: tuple[str, float] | None = None  # (object name, seconds)

    # -- lifecycle -----------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.transport.url

    @property
    def port(self) -> int:
        return self.transport.port

    def start(self) -> None:
        """Seed the namespaces and quotas, start the cluster half and listen."""
        threading.Thread(target=validation.definitions, name="kubesim-schemas",
                         daemon=True).start()
        self._seed()
        self.housekeeping.start()
        if self.with_cluster:
            cluster_class = load_cluster_class()
            if cluster_class is not None:
                self.cluster = cluster_class(self.store, self.logbook, self.scenario,
                                             self.admission)
                self.cluster.start()
        self.transport.start()

    def _seed(self) -> None:
        """The namespaces every cluster has, the scenario's, and its quotas (stored directly:
        they are valid by construction, and this keeps start-up fast)."""
        namespaces = list(SYSTEM_NAMESPACES) + [n for n in self.scenario.namespaces
                                                if n not in SYSTEM_NAMESPACES]
        for quota in self.scenario.quotas:
            if quota.namespace not in namespaces:
                namespaces.append(quota.namespace)
        for name in namespaces:
            namespace: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            defaults.defaults_for("namespaces", namespace, "")
            self.store.create("namespaces", namespace)
        for quota in self.scenario.quotas:
            obj: Obj = {"apiVersion": "v1", "kind": "ResourceQuota",
                        "metadata": {"name": quota.name, "namespace": quota.namespace},
                        "spec": {"hard": dict(quota.hard)}}
            defaults.defaults_for("resourcequotas", obj, "")
            self.store.create("resourcequotas", obj)

    def stop(self) -> None:
        """Stop listening, end every stream, stop the cluster half (its processes die)."""
        if self._stopped:
            return
        self._stopped = True
        self.transport.stop()
        self.api.drop_watches()
        self.logbook.close()
        self.housekeeping.stop()
        if self.cluster is not None:
            self.cluster.stop()
        for thread in list(self._restarts):
            thread.join(1)

    def restart(self, down: float) -> None:
        """The fault: stop listening for `down` seconds (every open stream cut, all state
        kept), then listen again on the same port."""
        with self._restart_lock:
            self.transport.stop()
            self.api.drop_watches()
            self.logbook.drop_followers()
            deadline = time.monotonic() + down
            while not self._stopped and time.monotonic() < deadline:
                time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
            if not self._stopped:
                self.transport.start()

    def restart_later(self, down: float) -> None:
        thread = threading.Thread(target=self.restart, args=(down,), name="kubesim-restart",
                                  daemon=True)
        self._restarts.append(thread)
        thread.start()

    def restart_at_delete(self, name: str, down: float) -> None:
        """Arm the fault: the next DELETE of an object called `name` is answered 503, as by
        an API server shutting down, which then stops listening for `down` seconds."""
        self._restart_at_delete = (name, down)

    def _armed_restart(self, req: Request) -> Reply | None:
        armed = self._restart_at_delete
        if armed is None or req.method != "DELETE":
            return None
        route = parse_route(req.path)
        if route is None or route.name != armed[0] or route.subresource:
            return None
        self._restart_at_delete = None
        reply = Reply.json(503, apierrors.ApiError(
            503, "ServiceUnavailable", "apiserver is shutting down").status())
        reply.after = lambda: self.restart_later(armed[1])
        return reply

    def evict(self, namespace: str, name: str) -> bool:
        if self.cluster is None:
            raise apierrors.ApiError(501, "NotImplemented",
                                     "eviction needs the cluster half, which is not running")
        return bool(self.cluster.evict(namespace, name))

    def stats(self) -> Obj:
        counts = {r.plural: len(self.store.list_raw(r.plural)[0]) for r in RESOURCES}
        return {"objects": counts, "resourceVersion": self.store.resource_version,
                "listening": self.transport.listening,
                "watches": self.api.open_watches(),
                "cluster": self.cluster is not None,
                "restartArmedAtDeleteOf": (self._restart_at_delete or (None,))[0],
                "logCuts": {str(k): v for k, v in self.logbook.cut_counts().items()},
                "watchCuts": {str(k): v for k, v in self.api.watch_cut_counts().items()}}

    def _delete_for_housekeeping(self, resource: str, namespace: str, name: str,
                                 options: Obj) -> None:
        with contextlib.suppress(apierrors.ApiError):
            self.api.delete_object(Route(_resource(resource), namespace, name, ""), options)

    # -- requests ------------------------------------------------------------------------

    def handle(self, req: Request) -> Reply | Stream | Upgrade:
        try:
            reply = self._route(req)
        except apierrors.ApiError as exc:
            reply = Reply.json(exc.code, exc.status(), headers=exc.headers)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            reply = Reply.json(500, apierrors.ApiError(
                500, "InternalError", "Internal error occurred: kubesim failed; see its "
                "stderr").status())
        reply.headers = {**NO_CACHE, **reply.headers}
        return reply

    def _route(self, req: Request) -> Reply | Stream | Upgrade:
        token = authenticate(self.scenario, req.header("Authorization"))
        if token is None:
            raise apierrors.unauthorized()
        req.user = token
        path = req.path.rstrip("/") or "/"
        if path == "/version":
            return Reply.json(200, discovery.VERSION)
        if path.startswith("/kubesim/"):
            return control.handle(self, req)
        if req.method == "GET":
            found = self._discovery(req, path)
            if found is not None:
                return found
        if path.endswith("/attach"):
            route = parse_route(path)
            if route is not None and route.resource.plural == "pods" and \
                    route.subresource == "attach":
                return attach.handle(self, req, route)
        if path.endswith("/exec"):
            route = parse_route(path)
            if route is not None and route.resource.plural == "pods" and \
                    route.subresource == "exec":
                return kubesim_exec.handle(self, req, route)
        return self._armed_restart(req) or self.api.handle(req)

    def _discovery(self, req: Request, path: str) -> Reply | None:
        accept = req.header("Accept")
        if path in ("/api", "/apis"):
            aggregated = discovery.wants_aggregated(accept)
            if aggregated:
                return Reply.json(200, discovery.aggregated(path == "/api", aggregated),
                                  aggregated)
            if path == "/api":
                return Reply.json(200, discovery.api_versions(f"127.0.0.1:{self.port}"))
            return Reply.json(200, discovery.api_group_list())
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) == 2:
            doc = discovery.api_resource_list("", parts[1])
            return Reply.json(200, doc) if doc else None
        if parts[0] == "apis" and len(parts) == 2:
            group = discovery.api_group(parts[1])
            return Reply.json(200, group) if group else None
        if parts[0] == "apis" and len(parts) == 3:
            doc = discovery.api_resource_list(parts[1], parts[2])
            return Reply.json(200, doc) if doc else None
        if path == "/openapi/v3":
            return Reply(200, openapi.root())
        if path.startswith("/openapi/v3/"):
            body = openapi.document(path.removeprefix("/openapi/v3/"))
            if body is None:
                raise apierrors.no_such_path()
            return Reply(200, body, headers={"Cache-Control": "public, immutable"})
        if path == "/openapi/v2":
            body, content_type = openapi.v2_document(accept)
            return Reply(200, body, content_type)
        if path == "/swagger.json":
            raise apierrors.no_such_path()
        if path in ("/healthz", "/livez", "/readyz"):
            return Reply(200, b"ok", "text/plain; charset=utf-8")
        return None

    # -- clients -------------------------------------------------------------------------

    def kubeconfig(self, context: str = "kubesim") -> Obj:
        """A kubeconfig for the admin token, plus one context per scenario token."""
        ca = base64.b64encode(self.tls.ca_pem).decode()
        users = [{"name": "kubesim-admin", "user": {"token": self.token}}]
        contexts = [{"name": context, "context": {"cluster": "kubesim", "user": "kubesim-admin",
                                                  "namespace": "default"}}]
        for value, token in self.scenario.tokens.items():
            if value == self.token:
                continue
            users.append({"name": token.user, "user": {"token": value}})
            contexts.append({"name": f"kubesim-{token.user}", "context": {
                "cluster": "kubesim", "user": token.user, "namespace": "default"}})
        return {
            "apiVersion": "v1", "kind": "Config", "preferences": {},
            "clusters": [{"name": "kubesim", "cluster": {
                "server": self.url, "certificate-authority-data": ca}}],
            "users": users, "contexts": contexts, "current-context": context,
        }


def _resource(plural: str) -> Any:
    return next(r for r in RESOURCES if r.plural == plural)
