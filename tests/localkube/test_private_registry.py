"""private_registry.py: the proxy asks for HTTP Basic credentials as a registry does, and
forwards what carries them. Against a stand-in upstream on the machine's loopback (the
node's namespace is not needed to test the proxy itself; the e2e tests pull through it on
the real node: tests/e2e/test_private_registry.py)."""

from __future__ import annotations

import base64
import http.server
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import ClassVar

import pytest

from tests.helpers import stop_process, wait_until
from tests.localkube import kubelet_node, private_registry
from tests.localkube.processes import free_port

MANIFEST = b'{"schemaVersion":2}'


class Upstream(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, str | None]]] = []

    def _answer(self) -> None:
        Upstream.seen.append((self.command, self.path, self.headers.get("Authorization")))
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.oci.image.manifest.v1+json")
        self.send_header("Content-Length", str(len(MANIFEST)))
        self.end_headers()
        if self.command == "GET":
            self.wfile.write(MANIFEST)

    do_GET = do_HEAD = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[str]:
    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    listen = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [sys.executable, "-I", private_registry.__file__, "--listen", listen, "--upstream",
         f"127.0.0.1:{upstream.server_address[1]}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: _status(listen, None) == 401, 20, "the proxy to answer")
        yield listen
    finally:
        stop_process(process)
        upstream.shutdown()
        upstream.server_close()


def _request(listen: str, credentials: str | None,
             method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(f"http://{listen}/v2/private/alpine/manifests/latest",
                                     method=method)
    if credentials is not None:
        request.add_header("Authorization",
                           "Basic " + base64.b64encode(credentials.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read()
    except OSError:
        return 0, {}, b""


def _status(listen: str, credentials: str | None) -> int:
    return _request(listen, credentials)[0]


def test_without_the_credentials_it_is_a_basic_challenge(proxy: str) -> None:
    Upstream.seen.clear()
    for credentials in (None, f"{private_registry.USER}:wrong", "other:open-sesame"):
        code, headers, body = _request(proxy, credentials)
        assert code == 401
        assert headers["WWW-Authenticate"] == f'Basic realm="{private_registry.REALM}"'
        assert b"UNAUTHORIZED" in body
    assert Upstream.seen == []  # nothing refused reached the registry


def test_with_them_it_forwards_without_them(proxy: str) -> None:
    Upstream.seen.clear()
    given = f"{private_registry.USER}:{private_registry.PASSWORD}"
    assert _request(proxy, given)[::2] == (200, MANIFEST)
    code, headers, body = _request(proxy, given, "HEAD")
    assert (code, headers["Content-Length"], body) == (200, str(len(MANIFEST)), b"")
    assert Upstream.seen == [("GET", "/v2/private/alpine/manifests/latest", None),
                             ("HEAD", "/v2/private/alpine/manifests/latest", None)]


def test_containerd_reaches_the_host_name_over_plain_http() -> None:
    assert kubelet_node.hosts_toml(private_registry.LISTEN) == (
        'server = "http://127.0.0.1:5001"\n\n[host."http://127.0.0.1:5001"]\n'
        '  capabilities = ["pull", "resolve"]\n')
    assert private_registry.IMAGE == "private.localkube:5001/private/alpine:latest"
    assert not private_registry.authorized("Basic !!!")
    assert not private_registry.authorized("Bearer x")
