"""The command line of localkube (`scripts/localkube`).

    serve --kubeconfig FILE [--port N] [--scenario FILE] [--node kubelet|agent]
          [--release 1.34|1.37]
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
        delete-pod NAMESPACE/POD [--grace-period N] | drop-logs [--after-bytes N]
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
        that breaks. Prints a JSON answer; exit 1 on error.

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

from tests.kubesim.launcher import write_kubeconfig
from tests.kubesim.scenario import ScenarioError, load_scenario
from tests.localkube import build, node_build, pki
from tests.localkube.agent import NODE_NAME, NodeAgent
from tests.localkube.apiclient import ApiClient, ApiError, ApiUnavailable
from tests.localkube.kubelet_node import KubeletNode
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

    def __init__(self, layout: Layout, scenario_path: str | None, node: str = "kubelet") -> None:
        self.layout = layout
        self.scenario = load_scenario(scenario_path)
        self.stop_requested = threading.Event()
        self.api = ApiClient("127.0.0.1", layout.apiserver_port, layout.pki.admin.token,
                             str(layout.pki.ca_cert))
        self.etcd = etcd(layout)
        self.apiserver = apiserver(layout)
        kcm_config = layout.state / "controller-manager.kubeconfig"
        scheduler_config = layout.state / "scheduler.kubeconfig"
        write_component_kubeconfig(kcm_config, layout.server, layout.pki,
                                   layout.pki.controller_manager)
        write_component_kubeconfig(scheduler_config, layout.server, layout.pki,
                                   layout.pki.scheduler)
        self.controller_manager = controller_manager(layout, kcm_config)
        self.scheduler = scheduler(layout, scheduler_config)
        self.agent: NodeAgent | None = None
        self.kubelet_node: KubeletNode | None = None
        # The kubernetes Service's address for the node's pods (service_address.py).
        self.service_address: ServiceAddress | None = None
        if node == "kubelet":
            kubelet_config = layout.state / "kubelet.kubeconfig"
            write_component_kubeconfig(kubelet_config, layout.server, layout.pki,
                                       layout.pki.admin)
            self.kubelet_node = KubeletNode(layout.state / "node", kubelet_config, layout.log,
                                            NODE_NAME, layout.apiserver_port)
        else:
            self.agent = NodeAgent(self.api, self.scenario, build.selected().version)
        self.requests: queue.Queue[ControlRequest] = queue.Queue()
        self.control_path = layout.state / "control.sock"
        self._control: socketserver.UnixStreamServer | None = None
        self._agent_started = False
        self._restarting = False

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
        if self.kubelet_node is not None:
            self.kubelet_node.start(self._stopping)
            wait_for(self._node_ready, 90, f"node {NODE_NAME} to be Ready",
                     self.kubelet_node.kubelet, self._stopping)
            self.service_address = ServiceAddress(self.kubelet_node.network,
                                                  self.layout.apiserver_port, SERVICE_IP)
        for namespace in ("default", "kube-system"):
            wait_for(lambda ns=namespace: self._exists(  # type: ignore[misc]
                f"/api/v1/namespaces/{ns}/serviceaccounts/default"), 60,
                f"the default service account of namespace {namespace}",
                self.controller_manager, self._stopping)
        self._canary()
        self._serve_control()

    def _node_ready(self) -> bool:
        try:
            node = self.api.request("GET", f"/api/v1/nodes/{NODE_NAME}")
        except (ApiError, ApiUnavailable):
            return False
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (node.get("status") or {}).get("conditions") or [])

    def node_components(self) -> tuple[Component, ...]:
        return () if self.kubelet_node is None else self.kubelet_node.components()

    def _canary(self) -> None:
        """Run one pod through scheduler, node and API: proof that a pod can run."""
        path = "/api/v1/namespaces/kube-system/pods"
        self.api.request("POST", path, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": CANARY},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox",
                                     "command": ["true"]}]}})

        def succeeded() -> bool:
            try:
                pod = self.api.request("GET", f"{path}/{CANARY}")
            except (ApiError, ApiUnavailable):
                return False
            return (pod.get("status") or {}).get("phase") == "Succeeded"

        wait_for(succeeded, 60, f"the canary pod kube-system/{CANARY} to run on {NODE_NAME}",
                 self.scheduler, self._stopping)
        with contextlib.suppress(ApiError, ApiUnavailable):
            self.api.request("DELETE", f"{path}/{CANARY}", {"gracePeriodSeconds": 0})

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
            answer = self.kubelet_node.restart(NODE_RESTARTS[request.verb],
                                               float(request.args.get("down") or 0),
                                               self._stopping,
                                               int(request.args.get("waitForContainers") or 0))
        except (StartError, Interrupted) as exc:
            answer = {"error": f"{request.verb}: {exc}"}
        finally:
            self._restarting = False
        request.answer.put(answer)
        if "error" not in answer:
            say(f"{NODE_RESTARTS[request.verb]} restarted ({answer.get('down', 0):g}s down)")

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
                else:
                    self._restart_apiserver(request)
                continue
            for component in (self.etcd, self.apiserver, self.controller_manager,
                              self.scheduler, *self.node_components()):
                if not component.running() and not self._restarting:
                    return component.name
        return None

    def stop(self) -> None:
        if self._control is not None:
            self._control.shutdown()
            self._control.server_close()
        if self._agent_started and self.agent is not None:
            self.agent.stop()
        if self.service_address is not None:
            self.service_address.close()
        if self.kubelet_node is not None:
            self.kubelet_node.stop()
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
        cluster = Cluster(layout, args.scenario, args.node)
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
        say(f"Kubernetes {build.selected().version} ({node_name})"
            f" started in {time.monotonic() - started:.1f}s"
            + (f" (build {build_seconds:.0f}s)" if built else "") + f"; state in {state}")
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
    if args.verb == "restart" or args.verb in NODE_RESTARTS:
        params["down"] = args.down
        if args.verb in NODE_RESTARTS:
            params["waitForContainers"] = args.wait_for_containers
    elif args.verb == "drop-logs":
        params["afterBytes"] = args.after_bytes
    elif args.verb in ("evict", "evict-api", "delete-pod"):
        params["namespace"], params["name"] = args.pod
        if args.verb == "delete-pod":
            params["gracePeriodSeconds"] = args.grace_period
    try:
        answer = control_request(Path(args.kubeconfig), args.verb, params)
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
