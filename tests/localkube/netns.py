"""The kubelet node's network: a network namespace of its own, joined to the host by one veth.

Owns choosing the node's addresses, making and removing the namespace and its links, running
commands inside it, and the one path from inside it to the API server.

Layout (one instance; the block is a /24 no address or route of the machine touches):

    host netns                               node netns (a file under the state directory)
    127.0.0.1:PORT  kube-apiserver  <----+   127.0.0.1:PORT  the API forwarder (launcher thread)
    lkhPID  BLOCK.129/30  ==== veth ====     eth0   BLOCK.130/30  kubelet :10250 (node InternalIP)
                                             lkbr0  BLOCK.1/25    CNI bridge; pods BLOCK.2-126
                                             lo     127.0.0.1     containerd's stream server,
                                                                  the registry, kubelet healthz

- The addresses: `choose_block` reads the machine's IPv4 addresses and routes (`ip -j -4
  addr`, `ip -j -4 route show table all`) and takes, at random, a /24 of 10.244.0.0/16,
  then 172.29.0.0/16, then 192.168.0.0/16, that overlaps none of them (nor the Service
  range), or refuses with why. Two instances starting at once may pick the same block: the
  one that finds a second address in its block after adding its own gives it up and picks
  again. The node netns has no default route: nothing in it reaches beyond the host's end of
  the veth, and the host has a route only to the /30, not to the pods.
- The namespace is made with `unshare --net=FILE` (a bind mount of the namespace on a file
  in the state directory), not `ip netns add`, which leaves /run/netns mounted (a shared
  self-bind mount made the first time) after the last namespace is gone. Unmounting the file
  after every process in it has ended frees the namespace and with it the veth, the bridge
  and every address.
- Processes run inside with `nsenter --net=FILE` (the network namespace only: the mount
  namespace stays the host's, so the kubelet's and containerd's mounts are where the
  launcher can see and undo them).
- Several nodes (`serve --nodes N`, `ctl add-node`): each has a network of its own as above,
  in its own /24 (each chooser sees the other nodes' /30s among the machine's addresses), and
  the host link `lkhPID` for the first, `lkhPID-K` for the K-th. Their pods reach each
  other through a `Fabric`: one more namespace of the cluster's own holding a bridge
  (`lkfab0`) without any address; each node has a second veth `fab0` into it, with the
  address BLOCK.133/32, and for every other node a route to its BLOCK.133 (scope link) and
  one to its pods' /25 through it. The node namespaces forward (their own sysctl); the
  machine's namespace gains no route and forwards nothing: node to node traffic never
  enters it. A pod's own routes (the CNI configuration) send the candidate pools through
  its node's bridge, so a pod on one node reaches a pod on another.
- A node "loses power" (`link_down`): both its links go down first, so that nothing the
  dying processes send (a FIN, a RST) reaches the API server or another node: the API
  server's connections to its kubelet hang as they would on a real machine's loss.
- The kubelet reaches the API server through `ApiForwarder`: a listener made inside the node
  netns on 127.0.0.1 at the API server's own port (a thread that `setns`es in, binds, and
  ends), whose connections the launcher copies to the real 127.0.0.1:PORT in the host netns.
  So the kubelet's kubeconfig is the admin's (server https://127.0.0.1:PORT, the same serving
  certificate), and the API server keeps listening on 127.0.0.1 only. The API server reaches
  the kubelet (logs, attach, exec, port-forward) at the node's InternalIP, through the veth.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import json
import os
import random
import socket
import subprocess
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.localkube.commands import run_checked

CANDIDATE_POOLS = ("10.244.0.0/16", "172.29.0.0/16", "192.168.0.0/16")
NODE_LINK = "eth0"
BRIDGE = "lkbr0"
FABRIC_LINK = "fab0"  # a node's link into the fabric (several nodes)
FABRIC_BRIDGE = "lkfab0"
CLONE_NEWNET = 0x40000000
CHOOSE_ATTEMPTS = 4

T = TypeVar("T")
Network = ipaddress.IPv4Network


class NetworkError(RuntimeError):
    """No free block, or a step of making the node's network failed; str() says which."""


@dataclass(frozen=True)
class NodeAddresses:
    """The addresses of one node, all inside `block` (a /24)."""

    block: Network

    @property
    def pod_subnet(self) -> Network:
        return next(self.block.subnets(new_prefix=25))

    @property
    def link(self) -> Network:
        return Network(f"{self.block.network_address + 128}/30")

    @property
    def host_address(self) -> str:
        return str(self.block.network_address + 129)

    @property
    def node_address(self) -> str:
        return str(self.block.network_address + 130)

    @property
    def fabric_address(self) -> str:
        """The node's address on the fabric (several nodes), outside its /30 and its pods'."""
        return str(self.block.network_address + 133)


def host_link_name(index: int, pid: int | None = None) -> str:
    """The host end of node `index`'s veth: `lkhPID` for the first (as with one node),
    `lkhPID-K` for the K-th (15 characters at most: a pid has 7 digits at most)."""
    pid = os.getpid() if pid is None else pid
    return f"lkh{pid}" if index == 1 else f"lkh{pid}-{index}"


def fabric_routes(own: NodeAddresses, others: Iterable[NodeAddresses]) -> list[list[str]]:
    """The `ip route replace` arguments of one node toward every other: the other's fabric
    address on the link, then its pods' /25 through that address."""
    routes = []
    for other in others:
        if other.block == own.block:
            continue
        routes.append([f"{other.fabric_address}/32", "dev", FABRIC_LINK, "scope", "link"])
        routes.append([str(other.pod_subnet), "via", other.fabric_address, "dev",
                       FABRIC_LINK])
    return routes


# -- choosing the block (pure) ----------------------------------------------------------------


def _network(destination: str) -> Network | None:
    """A route's `dst` as a network; None for `default` (it overlaps everything and is
    where traffic goes, not an address anyone has)."""
    if destination == "default":
        return None
    try:
        return ipaddress.ip_network(destination if "/" in destination else f"{destination}/32",
                                    strict=False)  # type: ignore[return-value]
    except ValueError:
        return None


def taken_networks(addresses: list[dict[str, Any]], routes: list[dict[str, Any]]) -> list[Network]:
    """Every IPv4 network the machine uses: each address with its prefix, each route's
    destination (of any table and type: local, broadcast, unreachable too)."""
    taken: list[Network] = []
    for link in addresses:
        for info in link.get("addr_info") or []:
            if info.get("family") == "inet" and info.get("local"):
                taken.append(ipaddress.IPv4Network(
                    f"{info['local']}/{info.get('prefixlen', 32)}", strict=False))
    for route in routes:
        network = _network(str(route.get("dst", "")))
        if isinstance(network, ipaddress.IPv4Network):
            taken.append(network)
    return taken


def free_blocks(taken: Iterable[Network], reserved: Iterable[Network] = ()) -> list[Network]:
    """The /24s of the candidate pools that overlap nothing in `taken` or `reserved`, in
    the pools' order."""
    avoid = [*taken, *reserved]
    free = []
    for pool in CANDIDATE_POOLS:
        for block in Network(pool).subnets(new_prefix=24):
            if not any(block.overlaps(other) for other in avoid):
                free.append(block)
    return free


def choose_block(addresses: list[dict[str, Any]], routes: list[dict[str, Any]],
                 reserved: Iterable[Network] = (), rng: random.Random | None = None,
                 ) -> NodeAddresses:
    """A random free /24 of the first pool that has one; NetworkError naming what took them."""
    taken = taken_networks(addresses, routes)
    free = free_blocks(taken, reserved)
    if not free:
        raise NetworkError(
            "no free /24 for the kubelet node's network: every one of "
            f"{', '.join(CANDIDATE_POOLS)} overlaps an address or route of this machine "
            f"({', '.join(sorted({str(n) for n in taken}))}); free one of them")
    first_pool = next(p for p in CANDIDATE_POOLS if free[0].subnet_of(Network(p)))
    in_pool = [b for b in free if b.subnet_of(Network(first_pool))]
    return NodeAddresses((rng or random.Random()).choice(in_pool))


# -- the running namespace ----------------------------------------------------------------------


def _run(argv: list[str], what: str) -> str:
    return run_checked(argv, what, NetworkError, timeout=60)


def machine_network() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The host netns's IPv4 addresses and routes, as `ip -j` gives them."""
    addresses = json.loads(_run(["ip", "-j", "-4", "addr"], "reading the addresses") or "[]")
    routes = json.loads(_run(["ip", "-j", "-4", "route", "show", "table", "all"],
                             "reading the routes") or "[]")
    return addresses, routes


def release_namespace_file(path: Path) -> None:
    """Unmount a namespace bound on `path` (by `unshare --net=` or `--mount=`) and remove
    the file: the namespace goes once no process is left in it. Quiet when it is not there."""
    subprocess.run(["umount", str(path)], capture_output=True, stdin=subprocess.DEVNULL)
    with contextlib.suppress(OSError):
        path.unlink()


_libc = ctypes.CDLL(None, use_errno=True)


def _enter(path: Path) -> None:
    """Move the calling thread (only it) into the network namespace bound at `path`."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"setns into {path}: {os.strerror(errno)}")
    finally:
        os.close(fd)


def call_inside(path: Path, function: Callable[[], T]) -> T:
    """`function()` on a thread of its own inside the namespace: the sockets it makes
    belong there. The thread ends with the call, so no other code ever runs inside."""
    result: list[T] = []
    failure: list[BaseException] = []

    def body() -> None:
        try:
            _enter(path)
            result.append(function())
        except BaseException as exc:  # handed to the caller
            failure.append(exc)

    thread = threading.Thread(target=body, name="localkube-netns", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


class NodeNetwork:
    """One node network namespace, its veth and addresses; `remove` undoes all of it."""

    def __init__(self, state: Path, service_range: str, host_link: str | None = None) -> None:
        self.path = state / "netns"
        self.host_link = host_link or host_link_name(1)
        self.service_range = Network(service_range)
        self.addresses: NodeAddresses | None = None
        self._made = False

    def prefix(self) -> list[str]:
        """The argv prefix that runs a command inside."""
        return ["nsenter", f"--net={self.path}"]

    def inside(self, *argv: str, what: str) -> str:
        return _run([*self.prefix(), *argv], what)

    def create(self) -> NodeAddresses:
        self.path.touch()
        self._made = True
        _run(["unshare", f"--net={self.path}", "true"], "making the node's network namespace")
        self.inside("ip", "link", "set", "lo", "up", what="bringing the node's lo up")
        # Made from inside, its host end moved to the launcher's (the host's) namespace:
        # `ip link ... netns` takes a name under /run/netns or a pid, not a file.
        self.inside("ip", "link", "add", NODE_LINK, "type", "veth", "peer", "name",
                    self.host_link, "netns", str(os.getpid()), what="making the node's veth")
        for attempt in range(CHOOSE_ATTEMPTS):
            addresses = choose_block(*machine_network(), reserved=[self.service_range])
            _run(["ip", "addr", "add", f"{addresses.host_address}/30", "dev", self.host_link],
                 "giving the host's end of the veth its address")
            if self._alone_in(addresses.block) or attempt == CHOOSE_ATTEMPTS - 1:
                break
            # Another instance took the same block at the same moment: give it up.
            _run(["ip", "addr", "flush", "dev", self.host_link], "giving up a taken block")
        else:  # pragma: no cover - the loop always breaks
            raise NetworkError("unreachable")
        if not self._alone_in(addresses.block):
            raise NetworkError(f"{addresses.block} was taken by another link while it was "
                               "chosen, four times over")
        self.addresses = addresses
        self.inside("ip", "addr", "add", f"{addresses.node_address}/30", "dev", NODE_LINK,
                    what="giving the node its address")
        _run(["ip", "link", "set", self.host_link, "up"], "bringing the host's end up")
        self.inside("ip", "link", "set", NODE_LINK, "up", what="bringing the node's end up")
        # Its own sysctl: forward between the pods' bridge and the fabric (the bridge plugin
        # turns it on too, at the first pod); the machine's stays as it is.
        call_inside(self.path, lambda: Path("/proc/sys/net/ipv4/ip_forward").write_text("1"))
        return addresses

    def _links(self) -> list[str]:
        links = [NODE_LINK]
        shown = self.inside("ip", "-j", "link", "show", what="listing the node's links")
        if any(link.get("ifname") == FABRIC_LINK for link in json.loads(shown or "[]")):
            links.append(FABRIC_LINK)
        return links

    def link_down(self) -> None:
        """The node's links down (its veth to the machine, its fabric link): what its
        processes send from now on reaches no one."""
        for link in self._links():
            self.inside("ip", "link", "set", link, "down", what=f"taking {link} down")

    def link_up(self) -> None:
        """Undo link_down. The addresses stay across it, and the routes of the addresses;
        the routes to other nodes went with fab0 (route_to gives them again)."""
        for link in self._links():
            self.inside("ip", "link", "set", link, "up", what=f"bringing {link} up")

    def route_to(self, others: Iterable[NodeAddresses]) -> None:
        """Routes to the other nodes' pods through the fabric (idempotent)."""
        assert self.addresses is not None
        for route in fabric_routes(self.addresses, others):
            self.inside("ip", "route", "replace", *route, what="routing to another node")
    def _alone_in(self, block: Network) -> bool:
        """Whether the host's end of our veth is the only holder of an address in `block`."""
        addresses, _routes = machine_network()
        holders = [link.get("ifname") for link in addresses
                   for info in link.get("addr_info") or []
                   if info.get("family") == "inet"
                   and ipaddress.ip_address(info["local"]) in block]
        return holders == [self.host_link]

    def remove(self) -> None:
        """Delete the veth (both ends go) and free the namespace; for after every process
        inside has ended. Safe to call when `create` stopped half-way, and twice."""
        if not self._made:
            return
        subprocess.run(["ip", "link", "del", self.host_link], capture_output=True,
                       stdin=subprocess.DEVNULL)
        release_namespace_file(self.path)
        self._made = False


class Fabric:
    """The wire between several nodes: a namespace of the cluster's own with one bridge and
    no address; each node joins it with a veth (`join`). `remove` frees it, and with it
    every fabric link of every node."""

    def __init__(self, state: Path) -> None:
        self.path = state / "fabric-netns"
        self._made = False

    def create(self) -> None:
        self.path.touch()
        self._made = True
        _run(["unshare", f"--net={self.path}", "true"], "making the fabric's namespace")
        inside = ["nsenter", f"--net={self.path}"]
        _run([*inside, "ip", "link", "add", FABRIC_BRIDGE, "type", "bridge"],
             "making the fabric's bridge")
        _run([*inside, "ip", "link", "set", FABRIC_BRIDGE, "up"], "bringing the bridge up")

    def join(self, network: NodeNetwork, index: int) -> None:
        """A veth from the node's namespace (`fab0`, its fabric address) to the bridge
        (`lkfK`): `ip link ... netns` takes the namespace's file here."""
        assert network.addresses is not None
        port = f"lkf{index}"
        network.inside("ip", "link", "add", FABRIC_LINK, "type", "veth", "peer", "name", port,
                       "netns", str(self.path), what="joining the node to the fabric")
        inside = ["nsenter", f"--net={self.path}"]
        _run([*inside, "ip", "link", "set", port, "master", FABRIC_BRIDGE],
             "putting the node's port on the fabric's bridge")
        _run([*inside, "ip", "link", "set", port, "up"], "bringing the node's port up")
        network.inside("ip", "addr", "add", f"{network.addresses.fabric_address}/32", "dev",
                       FABRIC_LINK, what="giving the node its fabric address")
        network.inside("ip", "link", "set", FABRIC_LINK, "up", what="bringing fab0 up")

    def remove(self) -> None:
        if not self._made:
            return
        release_namespace_file(self.path)
        self._made = False


class ApiForwarder:
    """127.0.0.1:PORT inside the node netns, copied to 127.0.0.1:PORT in the host's."""

    def __init__(self, network: NodeNetwork, port: int) -> None:
        self.port = port
        self._listener = call_inside(network.path, self._listen)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="localkube-api-forwarder",
                         daemon=True).start()

    def _listen(self) -> socket.socket:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        return listener

    def _accept(self) -> None:
        while True:
            try:
                inner, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                outer = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            except OSError:
                inner.close()  # the API server is down (a restart): the kubelet retries
                continue
            outer.settimeout(None)
            for sock in (inner, outer):
                # Without it a new connection's TLS handshake, relayed in small writes,
                # waited on delayed ACKs: 44 ms a connection instead of 2 (measured).
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._closed:
                    inner.close()
                    outer.close()
                    return
                self._open.update((inner, outer))
            ended = threading.Semaphore(0)
            for source, target in ((inner, outer), (outer, inner)):
                threading.Thread(target=self._copy, args=(source, target, ended),
                                 daemon=True, name="localkube-api-copy").start()
            threading.Thread(target=self._close_pair, args=(inner, outer, ended), daemon=True,
                             name="localkube-api-pair").start()

    @staticmethod
    def _copy(source: socket.socket, target: socket.socket, ended: threading.Semaphore) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            # One side broke: end the other direction too, as a plain connection would.
            with contextlib.suppress(OSError):
                source.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)
        ended.release()

    def _close_pair(self, inner: socket.socket, outer: socket.socket,
                    ended: threading.Semaphore) -> None:
        ended.acquire()
        ended.acquire()
        with self._lock:
            self._open.difference_update((inner, outer))
        inner.close()
        outer.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets = list(self._open)
            self._open.clear()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
