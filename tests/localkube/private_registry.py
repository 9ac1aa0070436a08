"""localkube's private registry: a registry host that refuses a pull without credentials.

Owns the one thing crane's registry lacks (`crane registry serve` has no authentication): a
small HTTP reverse proxy, run as its own process (`python3 private_registry.py`, stdlib only,
so it starts in a tenth of a second) inside the kubelet node's network namespace beside
crane's registry. Every request without the right HTTP Basic credentials is answered
`401 Unauthorized` with `WWW-Authenticate: Basic realm=...`, as a registry with basic
authentication answers (containerd's resolver reads the challenge, then retries with the
credentials the kubelet handed it from the pod's image pull secret, or gives up without
any); every request with them is forwarded to crane's registry as it came.

containerd reaches it as the registry host `HOST` (`private.localkube:5001`): the node's
certs.d has a `hosts.toml` for that name pointing at `http://127.0.0.1:5001`, so no DNS is
asked. The image `IMAGE` is pushed to crane's registry under `REPOSITORY` (the busybox
image, as `alpine`), so it is also reachable unauthenticated as `docker.io/private/...`:
what the tests need is a host that refuses, not a secret image.

The constants are read by the node (kubelet_node.py) and by the tests (the `Localkube`
fixture's `private_registry`); importing this module starts nothing.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import http.server
import sys
from dataclasses import dataclass

HOST = "private.localkube:5001"
LISTEN = "127.0.0.1:5001"
REPOSITORY = "private/alpine"
TAG = "latest"
IMAGE = f"{HOST}/{REPOSITORY}:{TAG}"
USER = "squarepeg"
PASSWORD = "open-sesame"
REALM = "localkube private registry"
# Not forwarded: the proxy's own business (credentials, the connection) or recomputed.
_HOP_HEADERS = frozenset({"authorization", "host", "connection", "keep-alive",
                          "transfer-encoding", "proxy-authorization"})


@dataclass(frozen=True)
class PrivateRegistry:
    """What a test needs to pull from the private registry."""

    host: str = HOST
    image: str = IMAGE
    user: str = USER
    password: str = PASSWORD


def authorized(header: str | None, user: str = USER, password: str = PASSWORD) -> bool:
    if not header or not header.lower().startswith("basic "):
        return False
    try:
        given = base64.b64decode(header[6:].strip(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return False
    return given == f"{user}:{password}"


def _handler(upstream: str) -> type[http.server.BaseHTTPRequestHandler]:
    upstream_host, upstream_port = upstream.rsplit(":", 1)

    class Handler(http.server.BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            body = (b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required",'
                    b'"detail":null}]}')
            self.send_response(401)
            self.send_header("WWW-Authenticate", f'Basic realm="{REALM}"')
            self.send_header("Docker-Distribution-API-Version", "registry/2.0")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _forward(self) -> None:
            if not authorized(self.headers.get("Authorization")):
                self._refuse()
                return
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
            connection = http.client.HTTPConnection(upstream_host, int(upstream_port),
                                                    timeout=60)
            try:
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
                # The images are a few MB: read whole, sent with its length.
                data = answer.read()
                self.send_response(answer.status, answer.reason)
                for key, value in answer.getheaders():
                    if key.lower() not in _HOP_HEADERS and key.lower() != "content-length":
                        self.send_header(key, value)
                declared = answer.getheader("Content-Length")
                self.send_header("Content-Length",
                                 declared if self.command == "HEAD" and declared
                                 else str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
            finally:
                connection.close()

        do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        def log_message(self, format: str, *args: object) -> None:
            sys.stderr.write(f"{self.command} {self.path} -> {args[1] if len(args) > 1 else ''}"
                             f" ({'with' if self.headers.get('Authorization') else 'no'}"
                             f" credentials)\n")

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--listen", default=LISTEN)
    parser.add_argument("--upstream", required=True, help="crane's registry, HOST:PORT")
    args = parser.parse_args(argv)
    host, port = args.listen.rsplit(":", 1)
    server = http.server.ThreadingHTTPServer((host, int(port)), _handler(args.upstream))
    server.daemon_threads = True
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
