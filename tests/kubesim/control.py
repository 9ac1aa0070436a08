"""The fault and inspection API under `/kubesim/`, on the same server, admin token only.

    POST /kubesim/drop-logs[?afterBytes=N]       cut every open log stream now, or after N
                                                 more bytes each      -> {"dropped": n}
    POST /kubesim/drop-logs?afterBytes=N&times=K from now on, cut every container's follow
                                                 streams after N bytes, K times per container
    POST /kubesim/drop-watches                   cut every open watch -> {"dropped": n}
    POST /kubesim/drop-watches?afterSeconds=S&times=K
                                                 from now on, cut every watch S s after it
                                                 began, K times per watcher (resource,
                                                 namespace, selectors)
    POST /kubesim/restart?down=S                 answer, then stop listening for S seconds
                                                 (streams cut, state kept), listen again
    POST /kubesim/restart?down=S&atDeleteOf=NAME the same, armed: when a DELETE of an object
                                                 called NAME arrives (answered 503)
    POST /kubesim/evict?namespace=NS&name=POD    node-pressure eviction (the cluster half)
    POST /kubesim/delete-pod?namespace=NS&name=POD[&gracePeriodSeconds=N]
                                                 a graceful delete, as another actor would
    POST /kubesim/seed-pods?namespace=NS&count=N[&labels=a=b,c=d][&prefix=P]
                                                 store N pods no scheduler takes (for scale
                                                 tests), through the create path
    GET  /kubesim/stats                          object counts, open watches, listening,
                                                 the standing faults' cuts ({times: how many})

Errors are Status objects like the API's. The `Sim` protocol is what this module needs of
the server (server.KubeSim provides it).
"""

from __future__ import annotations

from typing import Any, Protocol

from tests.kubesim import apierrors
from tests.kubesim.api import Api, Route
from tests.kubesim.resources import RESOURCES
from tests.kubesim.scenario import Token
from tests.kubesim.transport import Reply, Request

Obj = dict[str, Any]


class Sim(Protocol):
    api: Api

    def restart_later(self, down: float) -> None: ...

    def restart_at_delete(self, name: str, down: float) -> None: ...

    def evict(self, namespace: str, name: str) -> bool: ...

    def stats(self) -> Obj: ...


def _required(req: Request, name: str) -> str:
    value = req.param(name)
    if not value:
        raise apierrors.bad_request(f"missing query parameter {name!r}")
    return value


def _float(req: Request, name: str, default: float | None) -> float | None:
    value = req.param(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise apierrors.bad_request(f"{name} must be a number, not {value!r}") from None


def handle(sim: Sim, req: Request) -> Reply:
    token: Token = req.user
    if token.rules is not None:
        raise apierrors.forbidden_error("kubesim", "", None,
                                        f'User "{token.user}" may not use the control API')
    verb = req.path.removeprefix("/kubesim/").strip("/")
    if req.method == "GET" and verb == "stats":
        return Reply.json(200, sim.stats())
    if req.method != "POST":
        raise apierrors.method_not_allowed(req.method, "")
    times = _float(req, "times", None)
    if verb == "drop-logs":
        after = _float(req, "afterBytes", None)
        if times is not None:
            if after is None:
                raise apierrors.bad_request("times needs afterBytes")
            return Reply.json(200, {"open": sim.api.logbook.cut_each(int(after), int(times))})
        count = sim.api.logbook.drop_followers(int(after) if after is not None else None)
        return Reply.json(200, {"dropped": count})
    if verb == "drop-watches":
        if times is not None:
            after_seconds = _float(req, "afterSeconds", 1.0)
            after_seconds = 1.0 if after_seconds is None else max(after_seconds, 0.0)
            return Reply.json(200, {"cut": sim.api.cut_each_watch(after_seconds, int(times))})
        return Reply.json(200, {"dropped": sim.api.drop_watches()})
    if verb == "restart":
        down = _float(req, "down", 1.0) or 0.0
        at_delete_of = req.param("atDeleteOf")
        if at_delete_of:
            sim.restart_at_delete(at_delete_of, down)
            return Reply.json(200, {"armed": at_delete_of, "down": down})
        reply = Reply.json(200, {"restarting": True, "down": down})
        reply.after = lambda: sim.restart_later(down)
        return reply
    if verb == "evict":
        namespace, name = _required(req, "namespace"), _required(req, "name")
        if not sim.evict(namespace, name):
            raise apierrors.not_found("pods", "", name)
        return Reply.json(200, {"evicted": f"{namespace}/{name}"})
    if verb == "delete-pod":
        namespace, name = _required(req, "namespace"), _required(req, "name")
        options: Obj = {}
        grace = _float(req, "gracePeriodSeconds", None)
        if grace is not None:
            options["gracePeriodSeconds"] = int(grace)
        pods = next(r for r in RESOURCES if r.plural == "pods")
        result = sim.api.delete_object(Route(pods, namespace, name, ""), options)
        return Reply.json(200, result)
    if verb == "seed-pods":
        return _seed_pods(sim, req)
    raise apierrors.no_such_path()


IDLE_SCHEDULER = "kubesim-idle"  # no scheduler serves it: the pods stay Pending, unbound


def _seed_pods(sim: Sim, req: Request) -> Reply:
    """Store COUNT pods that no scheduler picks up (schedulerName kubesim-idle), each through
    the whole create path, for scale tests: NAMESPACE/PREFIX00000, ... with LABELS."""
    namespace = _required(req, "namespace")
    count = int(_float(req, "count", 0) or 0)
    prefix = req.param("prefix") or "seed-"
    labels: dict[str, str] = {}
    for pair in (req.param("labels") or "").split(","):
        if pair.strip():
            key, _, value = pair.partition("=")
            labels[key.strip()] = value.strip()
    pods = next(r for r in RESOURCES if r.plural == "pods")
    route = Route(pods, namespace, None, "")
    for i in range(count):
        sim.api.create_object(route, {
            "metadata": {"name": f"{prefix}{i:05d}", "labels": dict(labels)},
            "spec": {"schedulerName": IDLE_SCHEDULER,
                     "containers": [{"name": "main", "image": "alpine:3.20"}]},
        })
    return Reply.json(201, {"created": count})
