"""The `kubernetes` Service's address, answered inside the kubelet node: a stand-in for kube-proxy.

localkube runs no kube-proxy (there is no iptables binary here, and the API server binds
127.0.0.1 only, which Endpoints validation refuses anyway: `--endpoint-reconciler-type=none`).
Yet a pod that talks to its cluster, as squarepeg does when it runs inside one, finds the API
server the standard way: the kubelet gives every container KUBERNETES_SERVICE_HOST and
KUBERNETES_SERVICE_PORT from the `kubernetes` Service of `default` (10.0.0.1 and 443 here),
and kubectl's in-cluster configuration dials that address and checks the serving certificate
against the service account's `ca.crt` (the certificate names 10.0.0.1, pki.py).

Owns making that address answer, as a service proxy would, for the pods of the kubelet node:
10.0.0.1/32 is added to the node network namespace's `lo`, and a listener there on
10.0.0.1:443 copies each connection to the API server's 127.0.0.1:PORT in the machine's
namespace (the copying is netns.ApiForwarder's). A pod's packets to 10.0.0.1 leave by its
default route, the CNI bridge (`isGateway`), whose other end is the node's namespace, where
the address is local. Nothing changes in the machine's namespace: the address and the
listener are the node's, and the node's namespace has no route out.
"""

from __future__ import annotations

import socket

from tests.localkube.netns import ApiForwarder, NodeNetwork

SERVICE_PORT = 443


class ServiceAddress(ApiForwarder):
    """SERVICE_IP:443 inside the node netns, copied to 127.0.0.1:PORT in the host's."""

    def __init__(self, network: NodeNetwork, api_port: int, service_ip: str) -> None:
        self.service_ip = service_ip
        network.inside("ip", "addr", "add", f"{service_ip}/32", "dev", "lo",
                       what="giving the node's lo the kubernetes Service's address")
        super().__init__(network, api_port)

    def _listen(self) -> socket.socket:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.service_ip, SERVICE_PORT))
        listener.listen(64)
        return listener
