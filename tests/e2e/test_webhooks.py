"""Admission webhooks on the real API server (issue 33, decision 0300): a webhook that denies
the run's pod, and one the API server cannot reach, each end the run at once (exit 125 in
seconds, in pod and in job mode) with the webhook's own words, never called a permission
problem; a mutating webhook that injects a mesh-like sidecar (one that ignores SIGTERM)
neither holds the run's output nor its exit code.

The webhooks are served by this module on 127.0.0.1 over TLS, with a certificate of a
throwaway CA (tests/localkube/pki.py) whose certificate is the configurations' caBundle;
localkube's API server runs in the machine's network namespace, so it reaches them there.
Each configuration matches only the test's namespace (a namespaceSelector on its name) and
is deleted at the end.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Squarepeg, names, wait_until
from tests.e2e.test_admission import MODES, assert_refused_at_once, timed_run
from tests.localkube import pki

pytestmark = pytest.mark.localkube_only("kubesim calls no admission webhooks")

DENIAL = "squarepeg's test webhook refuses this pod"
# A mesh proxy as the issue met it: it ignores SIGTERM, so only its grace period ends it.
SIDECAR = {"name": "proxy", "image": "busybox",
           "command": ["sh", "-c", "trap '' TERM; while true; do sleep 1; done"]}


def _review(body: dict[str, Any], path: str) -> dict[str, Any]:
    request = body["request"]
    response: dict[str, Any] = {"uid": request["uid"], "allowed": path != "/deny"}
    if path == "/deny":
        response["status"] = {"code": 403, "message": DENIAL}
    elif path == "/inject" and request.get("operation") == "CREATE":
        patch = [{"op": "add", "path": "/spec/containers/-", "value": SIDECAR}]
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": response}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answer = json.dumps(_review(body, self.path.split("?")[0])).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Webhooks:
    """The HTTPS server and the configurations pointing at it."""

    def __init__(self, directory: Path):
        self.pki = pki.create(directory, "10.0.0.1")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.pki.serving_cert, self.pki.serving_key)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.ca_bundle = base64.b64encode(self.pki.ca_cert.read_bytes()).decode()

    def configuration(self, kind: str, namespace: str, url: str) -> dict[str, Any]:
        name = f"{kind.lower()}.squarepeg.test"
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": f"{kind}WebhookConfiguration",
            "metadata": {"name": f"squarepeg-test-{namespace}"},
            "webhooks": [{
                "name": name,
                "clientConfig": {"url": url, "caBundle": self.ca_bundle},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["pods"]}],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
                "timeoutSeconds": 5,
            }],
        }

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def webhooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Webhooks]:
    served = Webhooks(tmp_path_factory.mktemp("webhooks"))
    try:
        yield served
    finally:
        served.stop()


def _install(kubesim: Any, namespace: str, configuration: dict[str, Any],
             effect: str) -> Iterator[None]:
    """The configuration in force (a server-side dry run of a pod shows `effect`) until the
    test's end."""
    kind = configuration["kind"].lower()
    name = configuration["metadata"]["name"]
    made = kubesim.kubectl("create", "-f", "-", input=json.dumps(configuration).encode())
    assert made.returncode == 0, made.stderr
    probe = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"},
                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}}).encode()

    def in_force() -> bool:
        tried = kubesim.kubectl("create", "-n", namespace, "--dry-run=server", "-o", "json",
                                "-f", "-", input=probe)
        return effect in (tried.stdout + tried.stderr).decode()

    try:
        wait_until(in_force, 30, f"the {kind} to be in force")
        yield
    finally:
        kubesim.kubectl("delete", kind, name, "--ignore-not-found")


@pytest.fixture
def denying(webhooks: Webhooks, kubesim: Any, namespace: str) -> Iterator[None]:
    url = f"https://127.0.0.1:{webhooks.port}/deny"
    yield from _install(kubesim, namespace,
                        webhooks.configuration("Validating", namespace, url), DENIAL)


@pytest.fixture
def unreachable(webhooks: Webhooks, kubesim: Any, namespace: str) -> Iterator[None]:
    # A port nothing listens on: the API server's call is refused, and failurePolicy Fail
    # refuses the pod.
    yield from _install(kubesim, namespace,
                        webhooks.configuration("Validating", namespace,
                                               "https://127.0.0.1:1/deny"),
                        "failed calling webhook")


@pytest.fixture
def injecting(webhooks: Webhooks, kubesim: Any, namespace: str) -> Iterator[None]:
    url = f"https://127.0.0.1:{webhooks.port}/inject"
    yield from _install(kubesim, namespace,
                        webhooks.configuration("Mutating", namespace, url), '"proxy"')


@MODES
def test_a_webhook_that_denies_the_pod_is_said_at_once(
    denying: None, squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    done, seconds = timed_run(squarepeg, mode, "alpine", "true")
    assert_refused_at_once(done, seconds, "denied the request", DENIAL)
    wait_until(lambda: names(kubesim, namespace) == [], 30, "nothing left")


@MODES
def test_a_webhook_the_api_server_cannot_reach_is_said_at_once(
    unreachable: None, squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    done, seconds = timed_run(squarepeg, mode, "alpine", "true")
    assert_refused_at_once(done, seconds, "failed calling webhook")
    assert done.has_line("admins"), done.lines  # nothing in the run can fix it
    wait_until(lambda: names(kubesim, namespace) == [], 30, "nothing left")


@MODES
def test_an_injected_sidecar_that_ignores_sigterm_holds_neither_output_nor_exit_code(
    injecting: None, squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str
) -> None:
    began = time.monotonic()
    done = squarepeg("run", "--mode", mode, "--stop-timeout", "2", "alpine", "sh", "-c",
                     "echo from main; exit 3")
    assert (done.code, done.stdout) == (3, b"from main\n"), done.lines
    # The pod goes with the run's grace (--stop-timeout 2), not a sidecar's own time.
    wait_until(lambda: names(kubesim, namespace) == [], 2 + 10, "the pod to be gone")
    assert time.monotonic() - began < 60, done.lines


@MODES
@pytest.mark.parametrize("stop_timeout", [None, 2])
def test_an_injected_sidecar_with_files_in_and_out_goes_with_the_runs_grace(
    injecting: None, squarepeg: Squarepeg, kubesim: Any, namespace: str, mode: str,
    stop_timeout: int | None, tmp_path: Path
) -> None:
    """A rw mount raises the pod's grace to the copy-back's 300 s; once the copy is done the
    run's delete gives it back (Kubernetes' 30 s, or --stop-timeout): a sidecar that ignores
    SIGTERM no longer holds the pod for five minutes (plan/filehelpers.py)."""
    (tmp_path / "out").mkdir()
    helper = tmp_path / "helper.yaml"  # the node's busybox, as tests/e2e/test_files.py's
    helper.write_text("files_helper_image: busybox\n")
    grace = ["--stop-timeout", str(stop_timeout)] if stop_timeout is not None else []
    began = time.monotonic()
    done = squarepeg("run", "--mode", mode, "--config", str(helper), *grace,
                     "-v", f"{tmp_path / 'out'}:/out", "alpine", "sh", "-c",
                     "echo made > /out/file; echo from main; exit 3")
    returned = time.monotonic() - began
    assert (done.code, done.stdout) == (3, b"from main\n"), done.lines
    assert (tmp_path / "out" / "file").read_text() == "made\n"
    bound = (stop_timeout if stop_timeout is not None else 30) + 10
    wait_until(lambda: names(kubesim, namespace) == [], bound, "the pod to be gone")
    assert returned < 60, done.lines
