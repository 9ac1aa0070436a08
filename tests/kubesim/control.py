"""The fault and inspection API under `/kubesim/`, on the same server, admin token only.

    POST /kubesim/drop-logs[?afterBytes=N]       cut every open log stream now, or after N
                                                 more bytes each      -> {"dropped": n}
    POST /kubesim/drop-watches                   cut every open watch -> {"dropped": n}
    POST /kubesim/restart?down=S                 answer, then stop listening for S seconds
                                                 (streams cut, state kept), listen again
    POST /kubesim/evict?namespace=NS&name=POD    node-pressure eviction (the cluster half)
    POST /kubesim/delete-pod?namespace=NS&name=POD[&gracePeriodSeconds=N]
                                                 a graceful delete, as another actor would
    POST /kubesim/seed?resource=pods&namespace=NS   body: a JSON list of objects, stored
                                                 through the create path in one request
    GET  /kubesim/stats                          object counts, open watches, listening

Errors are Status objects like the API's. The `Sim` protocol is what this module needs of
the server (server.KubeSim provides it).
"""

from __future__ import annotations

import json
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
    if verb == "drop-logs":
        after = _float(req, "afterBytes", None)
        count = sim.api.logbook.drop_followers(int(after) if after is not None else None)
        return Reply.json(200, {"dropped": count})
    if verb == "drop-watches":
        return Reply.json(200, {"dropped": sim.api.drop_watches()})
    if verb == "restart":
        down = _float(req, "down", 1.0) or 0.0
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
    if verb == "seed":
        return _seed(sim, req)
    raise apierrors.no_such_path()


def _seed(sim: Sim, req: Request) -> Reply:
    resource = _required(req, "resource")
    namespace = req.param("namespace")
    target = next((r for r in RESOURCES if r.plural == resource), None)
    if target is None:
        raise apierrors.bad_request(f"unknown resource {resource!r}")
    try:
        objects = json.loads(req.body or b"[]")
    except ValueError as exc:
        raise apierrors.bad_request(f"body is not JSON: {exc}") from None
    if not isinstance(objects, list):
        raise apierrors.bad_request("body must be a JSON list of objects")
    created = 0
    for obj in objects:
        route = Route(target, namespace if target.namespaced else None, None, "")
        sim.api.create_object(route, obj)
        created += 1
    return Reply.json(201, {"created": created})
