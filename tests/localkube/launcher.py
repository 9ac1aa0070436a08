"""The command line of localkube (`scripts/localkube`).

    serve --kubeconfig FILE [--port N] [--scenario FILE] [--node kubelet|agent]
          [--release 1.34|1.37] [--nodes N] [--node-grace SECONDS]
          [--toleration-seconds SECONDS]
        Build what is missing (build.py, node_build.py), start etcd, kube-apiserver,
        kube-controller-manager, kube-scheduler and the node in a state directory of its
        own: by default the real kubelet with containerd, runc and the CNI bridge in a
        network namespace of its own (kubelet_node.py, netns.py); with `--node agent` (or
        LOCALKUBE_NODE=agent, or a `--scenario`, which is the agent's) kubesim's node
        agent. Writes FILE (context `localkube`, namespace `default`, the admin token, the
        CA), and prints exactly one line on stdout once a pod can run:
        `localkube: ready on https://127.0.0.1:PORT (kubeconfig FILE)`. Progress and timings
        go to stderr. Runs until SIGTERM or Ctrl-C, then stops every process it started,
        removes its state directory (and the node's namespace, links, mounts, cgroups) and
        exits 0 (1 if it could not start, 2 on bad usage). A scenario file may give the node
        agent's `images` and kubelet `options` (see kubesim's scenario.py); its other keys
        are for kubesim only and are refused, and the kubelet node takes none.
        `--nodes N` starts N kubelet nodes (default 1, named `localkube-node`; several are
        `localkube-node-1` ... `localkube-node-N`), each in network and mount namespaces of
        its own, their pods joined by a fabric (netns.py); their names, InternalIPs and pod
        ranges go to stderr. `--node-grace SECONDS` is the controller manager's
        node-monitor-grace-period (the release's 50 s by default; the kubelets' lease is
        then SECONDS long, renewed at a quarter of it), `--toleration-seconds` the API
        server's default not-ready/unreachable tolerations (300 s by default).
    build [--node kubelet|agent] [--install-packages] [--release 1.34|1.37] [--check]
        Build what is missing and exit (0, or 1 if the build failed); prints what it built
        and how long it took on stderr. The kubelet node's binaries too, unless
        `--node agent`; with `--install-packages` it first apt-get installs the Debian
        packages the node needs (node_build.APT_PACKAGES) when some are missing (as root,
        DEBIAN_FRONTEND=noninteractive; scripts/test uses it). With `--check`, build
        nothing: exit 0 if the binaries are built and current, 1 if not (scripts/test asks
        before a cell).
    ctl --kubeconfig FILE restart --down SECONDS |
        restart-kubelet|restart-containerd --down SECONDS [--wait-for-containers N] |
        evict NAMESPACE/POD | evict-api NAMESPACE/POD |
        delete-pod NAMESPACE/POD [--grace-period N] | drop-logs [--after-bytes N] |
        stop-node NODE | start-node NODE | drain NODE | uncordon NODE | add-node | nodes
        Faults by real means: stop the kube-apiserver process (SIGTERM, SIGKILL after a
        second: open streams end then), keep it down for SECONDS,
        start it again on the same port (etcd keeps the state; the command returns once it
        is stopped); the same for the kubelet node's kubelet or containerd (SIGTERM, SIGKILL
        after 5 s, down SECONDS, started again with the same flags; with
        `--wait-for-containers N` only once N containers run at the node; the command
        returns once it answers again, saying how many containers ran and which of their
        processes are gone: none, as they run under their shims, unless one ended by
        itself meanwhile; refused on the agent node); a node-pressure
        eviction by the node agent (refused on the kubelet node, as is drop-logs); an
        eviction through the Eviction API (POST pods/NAME/eviction, as `kubectl drain`: the
        pod gets the DisruptionTarget condition and a graceful delete; either node); a
        graceful DELETE through
        the API, as another actor's `kubectl delete`; the node agent cutting its end of
        every open log stream (now, or after N more bytes each), as a kubelet connection
        that breaks. The kubelet nodes' own (refused on the agent): a node that loses power
        (its links down, then SIGKILL of its kubelet, containerd, shims and pods, its
        mounts dropped; nothing tells the API), boots again with its disk, is drained
        (cordoned, each pod evicted through the Eviction API), uncordoned; a node added
        (answers its name once it is Ready and ran a canary); the nodes listed (running or
        stopped, addresses, resident memory). restart-kubelet and restart-containerd take
        `--node NODE` (default the first). Prints a JSON answer; exit 1 on error.

`--release` picks the Kubernetes release (build.RELEASES: 1.34, i.e. v1.34.4, the default,
or 1.37, v1.37.2); LOCALKUBE_RELEASE sets the default. Each release has binaries of its own
under ~/.cache/kubectl-squarepeg/localkube/<version>/.

"Ready" means: /readyz answers ok, the node is registered (and Ready), the `default`
service account exists in `default` and `kube-system`, and a canary pod in `kube-system`
was scheduled, ran and succeeded (then it is deleted). The kubeconfig carries the control
socket's path in a cluster extension named `localkube`; `ctl` talks to it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import socketserver
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import pod_manifest
from tests.kubesim.launcher import write_kubeconfig
from tests.kubesim.scenario import ScenarioError, load_scenario
from tests.localkube import build, node_build, pki
from tests.localkube.agent import NODE_NAME, NodeAgent
from tests.localkube.apiclient import ApiClient, ApiError, ApiUnavailable
from tests.localkube.kubelet_node import KubeletNode
from tests.localkube.netns import Fabric, NetworkError
from tests.localkube.processes import (
    SERVICE_IP,
    Component,
    Interrupted,
    Layout,
    StartError,
    apiserver,
    controller_manager,
    etcd,
    free_port,
    node_grace_flags,
    scheduler,
    wait_for,
    write_component_kubeconfig,
)
from tests.localkube.service_address import ServiceAddress

TEARDOWN_SECONDS = 2.0
RESTART_GRACE_SECONDS = 1.0
CANARY = "localkube-canary"
EXTENSION = "localkube"
NODES = ("kubelet", "agent")
DEFAULT_NODE = "kubelet"
# ctl's restarts of the kubelet node's components, and the component each restarts.
NODE_RESTARTS = {"restart-kubelet": "kubelet", "restart-containerd": "containerd"}
# ctl's verbs on the kubelet nodes themselves: on the main thread (they start processes)...
NODE_POWER = ("stop-node", "start-node", "add-node")
# ... and through the API only, on the control connection's thread.
NODE_API_VERBS = ("drain", "uncordon", "nodes")
NODE_READY_SECONDS = 90
ADD_NODE_SECONDS = 300.0  # an answer's wait for add-node: images pushed, Ready, a canary


def node_names(count: int) -> list[str]:
    """The nodes' names at the start: a single node keeps the one name it always had
    (`localkube-node`); several are `localkube-node-1` ... `localkube-node-N`."""
    return [NODE_NAME] if count == 1 else [f"{NODE_NAME}-{k}" for k in range(1, count + 1)]


def added_node_name(index: int) -> str:
    """The name of the node `ctl add-node` joins as the cluster's `index`-th (from 2)."""
    return f"{NODE_NAME}-{index}"


def drainable(pod: dict[str, Any]) -> str | None:
    """Why `drain` leaves a pod alone (as kubectl drain --ignore-daemonsets does), or None:
    a DaemonSet's pod, a static (mirror) pod, a pod already being deleted."""
    meta = pod.get("metadata") or {}
    if any(owner.get("kind") == "DaemonSet" for owner in meta.get("ownerReferences") or []):
        return "a DaemonSet's pod"
    if "kubernetes.io/config.mirror" in (meta.get("annotations") or {}):
        return "a static pod"
    if meta.get("deletionTimestamp"):
        return "already being deleted"
    return None


def say(message: str) -> None:
    print(f"localkube: {message}", file=sys.stderr, flush=True)


def _http_ok(url: str) -> bool:
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@dataclass
class ControlRequest:
    verb: str
    args: dict[str, Any]
    answer: queue.Queue[dict[str, Any]]


class Cluster:
    """Every process and thread of one running localkube."""

    def __init__(self, layout: Layout, scenario_path: str | None, node: str = "kubelet",
                 nodes: int = 1, node_grace: float | None = None,
                 toleration_seconds: int | None = None) -> None:
        self.layout = layout
        self.scenario = load_scenario(scenario_path)
        self.stop_requested = threading.Event()
        self.api = ApiClient("127.0.0.1", layout.apiserver_port, layout.pki.admin.token,
                             str(layout.pki.ca_cert))
        controller_flags, api_flags = node_grace_flags(node_grace, toleration_seconds)
        # A short grace needs the kubelets' leases renewed well within it (at a quarter).
        self.lease_seconds = None if node_grace is None else max(4, round(node_grace))
        self.etcd = etcd(layout)
        self.apiserver = apiserver(layout, tuple(api_flags))
        kcm_config = layout.state / "controller-manager.kubeconfig"
        scheduler_config = layout.state / "scheduler.kubeconfig"
        write_component_kubeconfig(kcm_config, layout.server, layout.pki,
                                   layout.pki.controller_manager)
        write_component_kubeconfig(scheduler_config, layout.server, layout.pki,
                                   layout.pki.scheduler)
        self.controller_manager = controller_manager(layout, kcm_config,
                                                     tuple(controller_flags))
        self.scheduler = scheduler(layout, scheduler_config)
        self.agent: NodeAgent | None = None
        self.kubelet_nodes: list[KubeletNode] = []
        # The kubernetes Service's address for each node's pods (service_address.py).
        self.service_addresses: list[ServiceAddress] = []
        self.fabric: Fabric | None = None  # the wire between several nodes (netns.py)
        self._joined: set[int] = set()  # the nodes on the fabric, by index
        self.kubelet_kubeconfig = layout.state / "kubelet.kubeconfig"
        if node == "kubelet":
            write_component_kubeconfig(self.kubelet_kubeconfig, layout.server, layout.pki,
                                       layout.pki.admin)
            for index, name in enumerate(node_names(nodes), start=1):
                self.kubelet_nodes.append(self._new_node(index, name))
        else:
            self.agent = NodeAgent(self.api, self.scenario, build.selected().version)
        self.requests: queue.Queue[ControlRequest] = queue.Queue()
        self.control_path = layout.state / "control.sock"
        self._control: socketserver.UnixStreamServer | None = None
        self._agent_started = False
        self._restarting = False

    @property
    def kubelet_node(self) -> KubeletNode | None:
        """The first kubelet node (the only one unless --nodes or add-node), None on the agent."""
        return self.kubelet_nodes[0] if self.kubelet_nodes else None

    def _new_node(self, index: int, name: str) -> KubeletNode:
        state = self.layout.state / ("node" if index == 1 else f"node-{index}")
        return KubeletNode(state, self.kubelet_kubeconfig, self.layout.log, name,
                           self.layout.apiserver_port, index=index,
                           images=self.layout.state / "images",
                           lease_seconds=self.lease_seconds)

    def node_named(self, name: str) -> KubeletNode:
        for node in self.kubelet_nodes:
            if node.node_name == name:
                return node
        known = ", ".join(n.node_name for n in self.kubelet_nodes) or "none"
        raise LookupError(f'node "{name}" is not one of localkube\'s kubelet nodes ({known})')

    # -- start ----------------------------------------------------------------------------------

    def _stopping(self) -> bool:
        return self.stop_requested.is_set()

    def _readyz(self) -> bool:
        try:
            self.api.request("GET", "/readyz")
        except (ApiError, ApiUnavailable, ValueError):
            return False
        return True

    def _exists(self, path: str) -> bool:
        try:
            self.api.request("GET", path)
        except (ApiError, ApiUnavailable):
            return False
        return True

    def start(self) -> None:
        etcd_url = f"http://127.0.0.1:{self.layout.etcd_port}/health"
        self.etcd.start()
        wait_for(lambda: _http_ok(etcd_url), 30, "etcd to be healthy", self.etcd,
                 self._stopping)
        self.apiserver.start()
        wait_for(self._readyz, 90, "kube-apiserver /readyz", self.apiserver, self._stopping)
        self.controller_manager.start()
        self.scheduler.start()
        self._agent_started = True
        if self.agent is not None:
            self.agent.start()
        for node in self.kubelet_nodes:
            node.start(self._stopping)
        self._join_fabric()
        for node in self.kubelet_nodes:
            self._node_up(node)
        for namespace in ("default", "kube-system"):
            wait_for(lambda ns=namespace: self._exists(  # type: ignore[misc]
                f"/api/v1/namespaces/{ns}/serviceaccounts/default"), 60,
                f"the default service account of namespace {namespace}",
                self.controller_manager, self._stopping)
        if len(self.kubelet_nodes) > 1:
            self._canary([node.node_name for node in self.kubelet_nodes])
        else:
            self._canary([None])
        self._serve_control()

    def _node_up(self, node: KubeletNode) -> None:
        """Wait until a started node is Ready, then give its pods the Service's address."""
        wait_for(lambda: self._node_ready(node.node_name), NODE_READY_SECONDS,
                 f"node {node.node_name} to be Ready", node.kubelet, self._stopping)
        self.service_addresses.append(ServiceAddress(node.network, self.layout.apiserver_port,
                                                     SERVICE_IP))

    def _join_fabric(self) -> None:
        """With two nodes or more: the fabric made, every node on it, and each powered
        node's routes to every other's pods (again after a node's boot: its routes went
        down with its link)."""
        if len(self.kubelet_nodes) < 2:
            return
        if self.fabric is None:
            self.fabric = Fabric(self.layout.state)
            self.fabric.create()
        for node in self.kubelet_nodes:
            if node.index not in self._joined and node.powered:  # a stopped one at its boot
                self.fabric.join(node.network, node.index)
                self._joined.add(node.index)
        everyone = [node.network.addresses for node in self.kubelet_nodes
                    if node.network.addresses is not None]
        for node in self.kubelet_nodes:
            if node.powered:
                node.network.route_to(everyone)

    def _node_ready(self, name: str = NODE_NAME) -> bool:
        try:
            node = self.api.request("GET", f"/api/v1/nodes/{name}")
        except (ApiError, ApiUnavailable):
            return False
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (node.get("status") or {}).get("conditions") or [])

    def node_components(self) -> tuple[Component, ...]:
        return tuple(c for node in self.kubelet_nodes for c in node.components())

    def _canary(self, nodes: list[str | None]) -> None:
        """Run one pod through scheduler, node and API for each node named (by a
        nodeSelector on its hostname: the scheduler still places it), or one anywhere
        for None: proof that a pod can run there."""
        path = "/api/v1/namespaces/kube-system/pods"
        names = {}
        for node in nodes:
            name = CANARY if node is None else f"{CANARY}-{node}"
            selector = {} if node is None else {
                "nodeSelector": {"kubernetes.io/hostname": node}}
            self.api.request("POST", path, pod_manifest(name, ["true"], image="busybox",
                                                        grace=0, **selector))
            names[name] = node or NODE_NAME

        def succeeded(name: str) -> bool:
            try:
                pod = self.api.request("GET", f"{path}/{name}")
            except (ApiError, ApiUnavailable):
                return False
            return (pod.get("status") or {}).get("phase") == "Succeeded"

        for name, node in names.items():
            wait_for(lambda name=name: succeeded(name), 60,  # type: ignore[misc]
                     f"the canary pod kube-system/{name} to run on {node}",
                     self.scheduler, self._stopping)
        for name in names:
            with contextlib.suppress(ApiError, ApiUnavailable):
                self.api.request("DELETE", f"{path}/{name}", {"gracePeriodSeconds": 0})

    # -- the control socket -----------------------------------------------------------------------

    def _serve_control(self) -> None:
        cluster = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                try:
                    request = json.loads(self.rfile.readline() or b"{}")
                    answer = cluster.control(str(request.get("verb")), request.get("args") or {})
                except Exception as exc:  # the client gets every error as an answer
                    answer = {"error": str(exc)}
                self.wfile.write(json.dumps(answer).encode() + b"\n")

        server = socketserver.ThreadingUnixStreamServer(str(self.control_path), Handler)
        server.daemon_threads = True
        self._control = server
        threading.Thread(target=server.serve_forever, name="localkube-control",
                         daemon=True).start()

    def control(self, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run on a control connection's thread; process work goes to the main thread."""
        if verb == "evict-api":
            return self._evict_through_the_api(str(args["namespace"]), str(args["name"]))
        if verb in (*NODE_POWER, *NODE_API_VERBS) and not self.kubelet_nodes:
            return {"error": f"{verb}: the node agent is a single node of its own; use the "
                             "kubelet node (serve --nodes N)"}
        if verb in NODE_API_VERBS:
            return self._node_api_verb(verb, args)
        if verb in NODE_POWER:
            if verb != "add-node":
                try:
                    self.node_named(str(args.get("node")))
                except LookupError as exc:
                    return {"error": f"{verb}: {exc}"}
            request = ControlRequest(verb, args, queue.Queue())
            self.requests.put(request)
            return request.answer.get(timeout=ADD_NODE_SECONDS)
        if verb in NODE_RESTARTS and self.kubelet_node is None:
            return {"error": f"{verb}: the node agent has no {NODE_RESTARTS[verb]}; use the "
                             "kubelet node"}
        if verb in ("evict", "drop-logs") and self.agent is None:
            return {"error": f"{verb}: a fault of the node agent; this cluster's node is the "
                             "real kubelet"}
        if verb == "evict" and self.agent is not None:
            namespace, name = str(args["namespace"]), str(args["name"])
            if not self.agent.evict(namespace, name):
                return {"error": f'pods "{name}" not found in {namespace}'}
            return {"evicted": f"{namespace}/{name}"}
        if verb == "delete-pod":
            namespace, name = str(args["namespace"]), str(args["name"])
            body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
            if args.get("gracePeriodSeconds") is not None:
                body["gracePeriodSeconds"] = int(args["gracePeriodSeconds"])
            try:
                self.api.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", body)
            except ApiError as exc:
                return {"error": exc.message}
            return {"deleted": f"{namespace}/{name}"}
        if verb == "drop-logs" and self.agent is not None:
            after = args.get("afterBytes")
            return {"dropped": self.agent.logbook.drop_followers(
                None if after is None else int(after))}
        if verb == "restart" or verb in NODE_RESTARTS:
            request = ControlRequest(verb, args, queue.Queue())
            self.requests.put(request)
            return request.answer.get(timeout=120)
        return {"error": f"{verb}: not a fault localkube can make (kubesim only)"}

    def _node_api_verb(self, verb: str, args: dict[str, Any]) -> dict[str, Any]:
        """`nodes`, `drain`, `uncordon`: through the API only, on this thread."""
        if verb == "nodes":
            return {"nodes": [self._node_facts(node) for node in self.kubelet_nodes]}
        name = str(args.get("node"))
        try:
            self.node_named(name)
        except LookupError as exc:
            return {"error": f"{verb}: {exc}"}
        patch = {"spec": {"unschedulable": True if verb == "drain" else None}}
        try:
            self.api.request("PATCH", f"/api/v1/nodes/{name}", patch,
                             content_type="application/merge-patch+json")
        except (ApiError, ApiUnavailable) as exc:
            return {"error": f"{verb}: {exc}"}
        if verb == "uncordon":
            return {"uncordoned": name}
        return self._drain(name)

    def _drain(self, name: str) -> dict[str, Any]:
        """The node cordoned (above), then each of its pods evicted through the Eviction
        API, as `kubectl drain --ignore-daemonsets` does, once each: a refusal (a
        disruption budget's 429) is an error naming the pods, the node stays cordoned.
        Returns once the evictions are accepted, not once the pods are gone."""
        try:
            pods = self.api.request("GET", f"/api/v1/pods?fieldSelector=spec.nodeName%3D{name}")
        except (ApiError, ApiUnavailable) as exc:
            return {"error": f"drain: listing the pods of {name}: {exc}"}
        evicted, skipped, refused = [], {}, {}
        for pod in pods.get("items") or []:
            meta = pod.get("metadata") or {}
            ref = f"{meta.get('namespace')}/{meta.get('name')}"
            why = drainable(pod)
            if why is not None:
                skipped[ref] = why
                continue
            answer = self._evict_through_the_api(str(meta.get("namespace")),
                                                 str(meta.get("name")))
            if "error" in answer:
                refused[ref] = answer["error"]
            else:
                evicted.append(ref)
        if refused:
            return {"error": f"drain: {name} is cordoned, but the Eviction API refused "
                             + "; ".join(f"{ref}: {why}" for ref, why in refused.items())}
        return {"drained": name, "cordoned": True, "evicted": evicted, "skipped": skipped}

    def _node_facts(self, node: KubeletNode) -> dict[str, Any]:
        addresses = node.network.addresses
        return {"name": node.node_name, "index": node.index,
                "state": "running" if node.powered else "stopped",
                "address": node.address,
                "podCIDR": str(addresses.pod_subnet) if addresses else None,
                "hostLink": node.network.host_link, "stateDirectory": str(node.state),
                "memoryKiB": node.memory()}

    def _evict_through_the_api(self, namespace: str, name: str) -> dict[str, Any]:
        """POST pods/NAME/eviction, as `kubectl drain` does: the API server checks the
        disruption budgets, sets the pod's DisruptionTarget condition (reason
        EvictionByEvictionAPI) and deletes it with its own grace period; the node then
        stops it as for any delete."""
        body = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": name, "namespace": namespace}}
        try:
            self.api.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
                             body)
        except ApiError as exc:
            return {"error": exc.message}
        return {"evicted": f"{namespace}/{name}", "through": "the Eviction API"}

    # -- running ----------------------------------------------------------------------------------

    def _restart_apiserver(self, request: ControlRequest) -> None:
        down = float(request.args.get("down") or 0)
        self._restarting = True
        began = time.monotonic()
        # SIGTERM, then SIGKILL a second later: the graceful shutdown would keep serving
        # open log streams (not watches) for as long as the stop waits, so "down" would
        # not mean down.
        self.apiserver.stop(RESTART_GRACE_SECONDS)
        request.answer.put({"restarting": True, "down": down,
                            "stopped_in": round(time.monotonic() - began, 2)})
        if self.stop_requested.wait(down):
            return
        self.apiserver.start()
        try:
            wait_for(self._readyz, 90, "kube-apiserver /readyz after the restart",
                     self.apiserver, self._stopping)
        except Interrupted:
            return
        finally:
            self._restarting = False
        say(f"kube-apiserver restarted ({down:g}s down)")

    def _restart_node_component(self, request: ControlRequest) -> None:
        assert self.kubelet_node is not None  # control() refuses these on the agent
        self._restarting = True
        try:
            node = (self.kubelet_node if request.args.get("node") is None
                    else self.node_named(str(request.args["node"])))
            if not node.powered:
                raise LookupError(f"{node.node_name} is stopped (ctl start-node first)")
            answer = node.restart(NODE_RESTARTS[request.verb],
                                               float(request.args.get("down") or 0),
                                               self._stopping,
                                               int(request.args.get("waitForContainers") or 0))
        except (StartError, Interrupted, LookupError) as exc:
            answer = {"error": f"{request.verb}: {exc}"}
        finally:
            self._restarting = False
        request.answer.put(answer)
        if "error" not in answer:
            say(f"{NODE_RESTARTS[request.verb]} restarted ({answer.get('down', 0):g}s down)")

    def _node_power(self, request: ControlRequest) -> None:
        """stop-node, start-node, add-node, on the main thread."""
        verb = request.verb
        try:
            if verb == "add-node":
                answer = self._add_node()
            else:
                node = self.node_named(str(request.args.get("node")))
                if verb == "stop-node":
                    answer = (node.power_off() if node.powered
                              else {"error": f"stop-node: {node.node_name} is stopped"})
                elif node.powered:
                    answer = {"error": f"start-node: {node.node_name} is running"}
                else:
                    answer = node.power_on(self._stopping)
                    self._join_fabric()  # its routes to the others again
        except (StartError, Interrupted, NetworkError, LookupError, OSError,
                ApiError, ApiUnavailable) as exc:
            answer = {"error": f"{verb}: {exc}"}
        request.answer.put(answer)
        if "error" not in answer:
            say(f"{verb}: " + ", ".join(f"{k} {v}" for k, v in answer.items()))

    def _add_node(self) -> dict[str, Any]:
        """A new kubelet node joins: started, on the fabric, Ready, a canary run on it."""
        began = time.monotonic()
        index = len(self.kubelet_nodes) + 1
        node = self._new_node(index, added_node_name(index))
        self.kubelet_nodes.append(node)  # stop() cleans up after a half-made node too
        node.start(self._stopping)
        self._join_fabric()
        self._node_up(node)
        self._canary([node.node_name])
        return {"added": node.node_name, "in": round(time.monotonic() - began, 2)}

    def run_until_stopped(self) -> str | None:
        """Serve control requests on this (the main) thread until a stop; the name of a
        component that died, if one did."""
        while not self.stop_requested.is_set():
            try:
                request = self.requests.get(timeout=0.5)
            except queue.Empty:
                request = None
            if request is not None:
                if request.verb in NODE_RESTARTS:
                    self._restart_node_component(request)
                elif request.verb in NODE_POWER:
                    self._node_power(request)
                else:
                    self._restart_apiserver(request)
                continue
            watched = [c for node in self.kubelet_nodes for c in node.watched_components()]
            for component in (self.etcd, self.apiserver, self.controller_manager,
                              self.scheduler, *watched):
                if not component.running() and not self._restarting:
                    return component.name
        return None

    def stop(self) -> None:
        if self._control is not None:
            self._control.shutdown()
            self._control.server_close()
        if self._agent_started and self.agent is not None:
            self.agent.stop()
        for service_address in self.service_addresses:
            service_address.close()
        for node in self.kubelet_nodes:
            node.stop()
        if self.fabric is not None:
            self.fabric.remove()
        # The state is thrown away: no component needs a graceful end, and the API server's
        # would take seconds (it drains its watches first).
        for component in (self.scheduler, self.controller_manager, self.apiserver, self.etcd):
            component.stop(TEARDOWN_SECONDS)


def admin_kubeconfig(layout: Layout, control: Path) -> dict[str, Any]:
    ca = base64.b64encode(layout.pki.ca_cert.read_bytes()).decode()
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "current-context": "localkube",
        "clusters": [{"name": "localkube", "cluster": {
            "server": layout.server, "certificate-authority-data": ca,
            "extensions": [{"name": EXTENSION, "extension": {"control": str(control)}}]}}],
        "users": [{"name": "localkube-admin", "user": {"token": layout.pki.admin.token}}],
        "contexts": [{"name": "localkube", "context": {
            "cluster": "localkube", "user": "localkube-admin", "namespace": "default"}}],
    }


def _check_scenario(path: str | None) -> None:
    if path is None:
        return
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    extra = sorted(set(data) - {"images", "options"})
    if extra:
        raise ScenarioError(f"localkube takes only `images` and `options` from a scenario; "
                            f"make {extra} with real objects instead")
    load_scenario(path)


def serve(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.node is None:
        args.node = "agent" if args.scenario is not None else default_node()
    if args.nodes < 1 or (args.node != "kubelet" and args.nodes != 1):
        print("localkube: error: --nodes N takes N >= 1 kubelet nodes (the node agent is "
              "one node)", file=sys.stderr)
        return 2
    if (args.node_grace is not None and args.node_grace <= 0) or \
            (args.toleration_seconds is not None and args.toleration_seconds < 0):
        print("localkube: error: --node-grace takes seconds > 0 and --toleration-seconds "
              "seconds >= 0", file=sys.stderr)
        return 2
    if args.node == "kubelet" and args.scenario is not None:
        print("localkube: error: the kubelet node takes no scenario (its images are alpine "
              "and busybox in its local registry); drop --scenario or use --node agent",
              file=sys.stderr)
        return 2
    try:
        _check_scenario(args.scenario)
    except (OSError, ScenarioError, yaml.YAMLError) as exc:
        print(f"localkube: error: cannot use the scenario {args.scenario}: {exc}",
              file=sys.stderr)
        return 2
    began = time.monotonic()
    try:
        built = build.ensure_built(say)
        if args.node == "kubelet":
            built = node_build.ensure_built(say) or built
    except build.BuildError as exc:
        print(f"localkube: error: {exc}", file=sys.stderr)
        return 1
    if stop.is_set():
        return 0
    build_seconds = time.monotonic() - began
    state = Path(tempfile.mkdtemp(prefix="localkube-"))
    cluster: Cluster | None = None
    try:
        port = args.port or free_port()
        layout = Layout(state=state, bin=build.bin_dir(),
                        pki=pki.create(state / "pki", SERVICE_IP), apiserver_port=port,
                        etcd_port=free_port(), etcd_peer_port=free_port())
        cluster = Cluster(layout, args.scenario, args.node, args.nodes, args.node_grace,
                          args.toleration_seconds)
        cluster.stop_requested = stop
        started = time.monotonic()
        try:
            cluster.start()
        except Interrupted:
            return 0
        except (StartError, ApiError, ApiUnavailable, OSError) as exc:
            print(f"localkube: error: the cluster did not start: {exc}", file=sys.stderr)
            return 1
        kubeconfig = Path(args.kubeconfig).resolve()
        write_kubeconfig(kubeconfig, admin_kubeconfig(layout, cluster.control_path))
        node_name = "kubelet" if args.node == "kubelet" else "node agent"
        if args.nodes > 1:
            node_name = f"{args.nodes} kubelet nodes"
        say(f"Kubernetes {build.selected().version} ({node_name})"
            f" started in {time.monotonic() - started:.1f}s"
            + (f" (build {build_seconds:.0f}s)" if built else "") + f"; state in {state}")
        for node in cluster.kubelet_nodes:
            addresses = node.network.addresses
            say(f"node {node.node_name}: InternalIP {node.address}, pods "
                f"{addresses.pod_subnet if addresses else '?'}, state {node.state}")
        print(f"localkube: ready on {layout.server} (kubeconfig {kubeconfig})", flush=True)
        died = cluster.run_until_stopped()
        if died is not None:
            component = next(c for c in (cluster.etcd, cluster.apiserver,
                                         cluster.controller_manager, cluster.scheduler,
                                         *cluster.node_components())
                             if c.name == died)
            print(f"localkube: error: {died} exited; the end of its log:\n{component.tail()}",
                  file=sys.stderr)
            return 1
        return 0
    finally:
        stopping = time.monotonic()
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(state, ignore_errors=True)
        say(f"stopped in {time.monotonic() - stopping:.1f}s")


def default_node() -> str:
    return os.environ.get("LOCALKUBE_NODE") or DEFAULT_NODE


def build_only(node: str | None, install_packages: bool = False, check: bool = False) -> int:
    node = node or default_node()
    if check:
        built = build.is_built() and (node != "kubelet" or node_build.is_built())
        say(f"{build.selected().version} ({node} node) is "
            + ("built" if built else "not built (or not current)"))
        return 0 if built else 1
    try:
        if node == "kubelet" and install_packages:
            node_build.install_packages(say)  # first: a missing package fails fast
        if not build.ensure_built(say):
            say(f"{build.selected().version} is built: {build.bin_dir()}")
        if node == "kubelet" and not node_build.ensure_built(say):
            say(f"the kubelet node is built: {node_build.bin_dir()}")
    except build.BuildError as exc:
        print(f"localkube: error: {exc}", file=sys.stderr)
        return 1
    return 0


def control_path(kubeconfig: Path) -> Path:
    config = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    for cluster in config.get("clusters") or []:
        for extension in cluster.get("cluster", {}).get("extensions") or []:
            if extension.get("name") == EXTENSION:
                return Path(extension["extension"]["control"])
    raise RuntimeError(f"{kubeconfig} was not written by `localkube serve`")


def control_request(kubeconfig: Path, verb: str, args: dict[str, Any],
                    timeout: float = 120.0) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(control_path(kubeconfig)))
        sock.sendall(json.dumps({"verb": verb, "args": args}).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    answer: dict[str, Any] = json.loads(data or b"{}")
    return answer


def pod_ref(text: str) -> tuple[str, str]:
    """NAMESPACE/POD, as an argparse type."""
    namespace, _, name = text.partition("/")
    if not (namespace and name):
        raise argparse.ArgumentTypeError(f"expected NAMESPACE/POD, got {text!r}")
    return namespace, name


def ctl(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {}
    timeout = 120.0
    if args.verb == "restart" or args.verb in NODE_RESTARTS:
        params["down"] = args.down
        if args.verb in NODE_RESTARTS:
            params["waitForContainers"] = args.wait_for_containers
            params["node"] = args.node
    elif args.verb in (*NODE_POWER, *NODE_API_VERBS):
        params["node"] = getattr(args, "node", None)
        timeout = ADD_NODE_SECONDS + 10
    elif args.verb == "drop-logs":
        params["afterBytes"] = args.after_bytes
    elif args.verb in ("evict", "evict-api", "delete-pod"):
        params["namespace"], params["name"] = args.pod
        if args.verb == "delete-pod":
            params["gracePeriodSeconds"] = args.grace_period
    try:
        answer = control_request(Path(args.kubeconfig), args.verb, params, timeout)
    except (OSError, RuntimeError, KeyError, ValueError) as exc:
        print(f"localkube: error: {args.verb}: {exc}", file=sys.stderr)
        return 1
    if "error" in answer:
        print(f"localkube: error: {args.verb}: {answer['error']}", file=sys.stderr)
        return 1
    print(json.dumps(answer))
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="localkube", description="A real Kubernetes control "
                                  "plane on 127.0.0.1 with a real kubelet node in a network "
                                  "namespace of its own (or a node agent), for the tests.")
    verbs = top.add_subparsers(dest="command", required=True)
    serve_p = verbs.add_parser("serve", help="build if needed, start a cluster, serve")
    serve_p.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig")
    serve_p.add_argument("--port", type=int, default=0, help="API server port (default: free)")
    serve_p.add_argument("--scenario", help="images and options for the node agent")
    serve_p.add_argument("--nodes", type=int, default=1, metavar="N",
                         help="N kubelet nodes, each in network and mount namespaces of its "
                         "own (default 1: localkube-node; several: localkube-node-1 ...)")
    serve_p.add_argument("--node-grace", type=float, default=None, metavar="SECONDS",
                         help="the controller manager's node-monitor-grace-period (a node "
                         "unheard of that long is NotReady; the kubelets renew their lease "
                         "at a quarter of it); default the release's own, 50 s")
    serve_p.add_argument("--toleration-seconds", type=int, default=None, metavar="SECONDS",
                         help="the API server's default not-ready and unreachable "
                         "tolerations of every pod (how long a pod stays bound to a lost "
                         "node before the taint manager evicts it); default 300")
    build_p = verbs.add_parser("build", help="build the binaries if they are not cached")
    build_p.add_argument("--install-packages", action="store_true",
                         help="first apt-get install what the kubelet node needs (as root; "
                         "nothing when it is all there)")
    build_p.add_argument("--check", action="store_true",
                         help="build nothing: exit 0 if the binaries are built, 1 if not")
    for command in (serve_p, build_p):
        command.add_argument("--node", choices=NODES, default=None,
                             help="the node: the real kubelet with containerd (default) or "
                             "kubesim's node agent, for the faults only it makes (ctl evict, "
                             "drop-logs; the default with --scenario); LOCALKUBE_NODE sets "
                             "the default")
        command.add_argument("--release", default=None, metavar="MINOR",
                             help="the Kubernetes release: "
                             + " or ".join(f"{r.minor} ({r.version})" for r in build.RELEASES)
                             + f"; {build.RELEASE_VARIABLE} sets the default, else "
                             f"{build.DEFAULT_RELEASE.minor}")
    ctl_p = verbs.add_parser("ctl", help="inject a fault into a running cluster")
    ctl_p.add_argument("--kubeconfig", required=True, help="the kubeconfig serve wrote")
    faults = ctl_p.add_subparsers(dest="verb", required=True)
    restart = faults.add_parser("restart", help="restart kube-apiserver (etcd keeps state)")
    restart.add_argument("--down", type=float, required=True, help="seconds to stay down")
    for verb, component in NODE_RESTARTS.items():
        node_restart = faults.add_parser(verb, help=f"restart the kubelet node's {component} "
                                         "with the same flags (the pods keep running)")
        node_restart.add_argument("--down", type=float, required=True,
                                  help="seconds to stay down")
        node_restart.add_argument("--wait-for-containers", type=int, default=0, metavar="N",
                                  help="first wait (up to 60 s) until N containers run at "
                                  "the node")
        node_restart.add_argument("--node", default=None, metavar="NODE",
                                  help="which kubelet node (default the first)")
    for verb, text in (("stop-node", "a machine that lost power: its links down, SIGKILL of "
                        "its kubelet, containerd, shims and pods; nothing tells the API"),
                       ("start-node", "boot a stopped node again with its disk"),
                       ("drain", "cordon, then evict each pod through the Eviction API, as "
                        "kubectl drain --ignore-daemonsets"),
                       ("uncordon", "make the node schedulable again")):
        node_verb = faults.add_parser(verb, help=text)
        node_verb.add_argument("node", metavar="NODE", help="the node's name")
    faults.add_parser("add-node", help="join a new kubelet node (capacity arriving); prints "
                      "its name once it is Ready and ran a canary pod")
    faults.add_parser("nodes", help="the kubelet nodes: name, running or stopped, addresses, "
                      "state directory, resident memory")
    evict = faults.add_parser("evict", help="evict a pod for node pressure (the node agent)")
    evict.add_argument("pod", type=pod_ref, help="NAMESPACE/POD")
    evict_api = faults.add_parser("evict-api", help="evict a pod through the Eviction API "
                                  "(POST pods/NAME/eviction), as kubectl drain does")
    evict_api.add_argument("pod", type=pod_ref, help="NAMESPACE/POD")
    delete = faults.add_parser("delete-pod", help="delete a pod as another actor would")
    delete.add_argument("pod", type=pod_ref, help="NAMESPACE/POD")
    delete.add_argument("--grace-period", type=int, default=None)
    drop = faults.add_parser("drop-logs", help="cut the node's end of open log streams")
    drop.add_argument("--after-bytes", type=int, default=None,
                      help="let each stream send N more bytes first")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if default_node() not in NODES:
        print(f"localkube: error: LOCALKUBE_NODE={default_node()!r}: use one of "
              f"{', '.join(NODES)}", file=sys.stderr)
        return 2
    if args.command in ("serve", "build"):
        try:
            release = build.selected(args.release)
        except build.UnknownRelease as exc:
            print(f"localkube: error: {exc}", file=sys.stderr)
            return 2
        # Everything below (the builds, the node's binaries) reads the selection from here.
        os.environ[build.RELEASE_VARIABLE] = release.version
    if args.command == "serve":
        return serve(args)
    if args.command == "build":
        return build_only(args.node, args.install_packages, args.check)
    return ctl(args)


if __name__ == "__main__":
    sys.exit(main())
