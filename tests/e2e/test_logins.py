"""The logins users have, each checked by the real API server, and the least privilege a run needs.

On localkube only: kubesim takes any bearer token and has no RBAC. Every test here writes a
kubeconfig of its own whose only credential is the login under test (never the admin's
token), so a run that works proves kubectl logged in that way and squarepeg inherited it:

- an exec credential plugin (a shell script printing an `ExecCredential` with the static
  token of localkube's plain user, pki.PLAIN_USER), one that fails (kubectl's own error,
  exit 125, no traceback) and one that takes 3 s (squarepeg waits for it: kubectl runs the
  plugin once per process, so every kubectl call of the run waits);
- a client certificate signed by localkube's CA (the API server's --client-ca-file), CN the
  plain user;
- `tokenFile` in the kubeconfig's user;
- `proxy-url` through a CONNECT proxy of the test's own on 127.0.0.1, which counts the
  tunnels it made;
- impersonation: the admin with `--as USER --as-group GROUP`, where only GROUP is granted
  the Role: the run works, every kubectl call carried both flags, the banner says so.

The Role is the one docs/permissions.md prints (read from it by tests/permissions_doc.py, so
the page is what is tested), bound to the plain user in the test's namespace; the user has
nothing cluster-wide. Without its `events` and `pods/attach` rules a run still works; without
one of the others, the message names the verb and resource with the `kubectl auth can-i`
command that checks it.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Finished, Squarepeg, counting_kubectl, names, wait_until
from tests.localkube import launcher, pki
from tests.permissions_doc import documented_role

pytestmark = pytest.mark.localkube_only(
    "the real API server authenticates each login and RBAC authorizes it; kubesim takes any "
    "token and has no RBAC")

SLOW_PLUGIN_SECONDS = 3
EXEC_API = "client.authentication.k8s.io/v1"


# -- the cluster's material ------------------------------------------------------------------


def pki_dir(cluster: Any) -> Path:
    return pki.directory_of(launcher.control_path(Path(cluster.kubeconfig)))


def admin_cluster_entry(cluster: Any) -> dict[str, Any]:
    config = yaml.safe_load(Path(cluster.kubeconfig).read_text(encoding="utf-8"))
    entry: dict[str, Any] = config["clusters"][0]["cluster"]
    return {k: v for k, v in entry.items() if k != "extensions"}


def write_login(path: Path, cluster: Any, namespace: str, user: dict[str, Any],
                proxy_url: str | None = None) -> dict[str, str]:
    """A kubeconfig whose one user logs in by `user`; the env that points KUBECONFIG at it."""
    entry = admin_cluster_entry(cluster)
    if proxy_url is not None:
        entry["proxy-url"] = proxy_url
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "login",
        "clusters": [{"name": "localkube", "cluster": entry}],
        "users": [{"name": "login", "user": user}],
        "contexts": [{"name": "login", "context": {
            "cluster": "localkube", "user": "login", "namespace": namespace}}],
    }), encoding="utf-8")
    path.chmod(0o600)
    return {"KUBECONFIG": str(path)}


def without(role: dict[str, Any], *dropped: tuple[str, str]) -> dict[str, Any]:
    """`role` without the (resource, verb) pairs in `dropped`."""
    rules = []
    for rule in role["rules"]:
        for resource in rule["resources"]:
            verbs = [v for v in rule["verbs"] if (resource, v) not in dropped]
            if verbs:
                rules.append({**rule, "resources": [resource], "verbs": verbs})
    return {**role, "rules": rules}


def grant(cluster: Any, namespace: str, role: dict[str, Any], subject: dict[str, str]) -> None:
    """Apply `role` in the namespace (as `squarepeg`) and bind it to `subject`."""
    role = {**role, "metadata": {"name": "squarepeg", "namespace": namespace}}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "squarepeg", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                    "name": "squarepeg"},
        # A ServiceAccount subject has no API group; a User or Group has RBAC's.
        "subjects": [{**({} if subject["kind"] == "ServiceAccount"
                         else {"apiGroup": "rbac.authorization.k8s.io"}), **subject}]}
    done = cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([role, binding]).encode())
    assert done.returncode == 0, done.stderr


def plain_user() -> dict[str, str]:
    return {"kind": "User", "name": pki.PLAIN_USER}


def assert_ran(done: Finished) -> None:
    """The run's container (echo hi; exit 3) ran, its output and exit code came back."""
    assert (done.code, done.stdout) == (3, b"hi\n"), done.lines
    assert "Traceback" not in done.stderr
    assert not done.has_line("warning"), done.lines


RUN = ("run", "alpine", "sh", "-c", "echo hi; exit 3")


# -- exec plugins ----------------------------------------------------------------------------


def exec_plugin(path: Path, body: str) -> dict[str, Any]:
    """A kubeconfig user whose credential comes from the shell script `body`."""
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(0o755)
    return {"exec": {"apiVersion": EXEC_API, "command": str(path), "interactiveMode": "Never"}}


def credential_script(token: str, delay: int = 0) -> str:
    pause = f"sleep {delay}\n" if delay else ""
    return (pause + "cat <<'EOF'\n"
            f'{{"apiVersion": "{EXEC_API}", "kind": "ExecCredential", '
            f'"status": {{"token": "{token}"}}}}\nEOF\n')


# -- a CONNECT proxy -------------------------------------------------------------------------


class ConnectProxy:
    """An HTTP CONNECT proxy on 127.0.0.1 that tunnels to 127.0.0.1 only and counts tunnels."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.tunnels: list[str] = []
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="connect-proxy").start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        with self._lock:
            self._open.append(client)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        method, target, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
        host, _, port = target.rpartition(":")
        if method != "CONNECT" or host != "127.0.0.1":
            client.sendall(b"HTTP/1.1 403 Forbidden\r\n\r\n")
            client.close()
            return
        upstream = socket.create_connection((host, int(port)))
        with self._lock:
            self._open.append(upstream)
            self.tunnels.append(target)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        rest = head.split(b"\r\n\r\n", 1)[1]
        if rest:
            upstream.sendall(rest)
        threading.Thread(target=self._copy, args=(upstream, client), daemon=True).start()
        self._copy(client, upstream)

    @staticmethod
    def _copy(source: socket.socket, target: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                target.sendall(data)
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.close()


@pytest.fixture
def proxy() -> Iterator[ConnectProxy]:
    running = ConnectProxy()
    try:
        yield running
    finally:
        running.close()


# -- logins ----------------------------------------------------------------------------------


@pytest.mark.parametrize("login", ["exec-plugin", "client-certificate", "token-file", "proxy"])
def test_each_login_runs_a_pod(login: str, squarepeg: Squarepeg, kubesim: Any, namespace: str,
                               tmp_path: Path, proxy: ConnectProxy) -> None:
    grant(kubesim, namespace, documented_role(), plain_user())
    token = pki.token_of(pki_dir(kubesim), pki.PLAIN_USER)
    proxy_url = None
    if login == "exec-plugin":
        user = exec_plugin(tmp_path / "plugin", credential_script(token))
    elif login == "client-certificate":
        cert, key = pki.client_certificate(pki_dir(kubesim), pki.PLAIN_USER)
        user = {"client-certificate-data": base64.b64encode(cert).decode(),
                "client-key-data": base64.b64encode(key).decode()}
    elif login == "token-file":
        (tmp_path / "token").write_text(token + "\n", encoding="utf-8")
        user = {"tokenFile": str(tmp_path / "token")}
    else:
        user, proxy_url = {"token": token}, proxy.url
    env = write_login(tmp_path / "kubeconfig", kubesim, namespace, user, proxy_url)
    assert_ran(squarepeg(*RUN, env=env))
    assert done_with(kubesim, namespace)
    if login == "proxy":
        server_port = admin_cluster_entry(kubesim)["server"].rsplit(":", 1)[1]
        assert proxy.tunnels and set(proxy.tunnels) == {f"127.0.0.1:{server_port}"}


def done_with(cluster: Any, namespace: str) -> bool:
    """Nothing of the run left in the namespace (squarepeg deleted it as that user)."""
    wait_until(lambda: not names(cluster, namespace), 30, "the run's pod to be deleted")
    return True


def test_a_failing_exec_plugin_is_kubectls_own_error(squarepeg: Squarepeg, kubesim: Any,
                                                      namespace: str, tmp_path: Path) -> None:
    user = exec_plugin(tmp_path / "plugin", "echo 'sso: token service unavailable' >&2\nexit 7\n")
    env = write_login(tmp_path / "kubeconfig", kubesim, namespace, user)
    done = squarepeg(*RUN, env=env)
    assert done.code == 125, done.lines
    assert done.stdout == b""
    assert "Traceback" not in done.stderr
    # kubectl's words: the plugin's exit, and the plugin's own stderr, which kubectl passes on.
    assert done.has_line("error:", "getting credentials", "exit code 7"), done.lines
    assert done.stderr.count("sso: token service unavailable") == 1, done.lines
    assert done.has_line("credential plugin failed", "`kubectl auth whoami --context=login`")
    assert names(kubesim, namespace) == []


def test_a_slow_exec_plugin_is_waited_for(squarepeg: Squarepeg, kubesim: Any, namespace: str,
                                          tmp_path: Path) -> None:
    grant(kubesim, namespace, documented_role(), plain_user())
    token = pki.token_of(pki_dir(kubesim), pki.PLAIN_USER)
    user = exec_plugin(tmp_path / "plugin", credential_script(token, SLOW_PLUGIN_SECONDS))
    env = write_login(tmp_path / "kubeconfig", kubesim, namespace, user)
    assert_ran(squarepeg(*RUN, env=env))
    assert done_with(kubesim, namespace)


def test_impersonation_is_on_every_kubectl_call(squarepeg: Squarepeg, kubesim: Any,
                                                namespace: str, tmp_path: Path) -> None:
    """The admin acts as `alice` in group `squarepeg-testers`, to which alone the Role is
    bound: without --as-group the create is refused (so --as really reached the server)."""
    grant(kubesim, namespace, documented_role(), {"kind": "Group", "name": "squarepeg-testers"})
    env, log = counting_kubectl(tmp_path)
    refused = squarepeg("run", "--as", "alice", "alpine", "true", env=env)
    assert refused.code == 125
    assert refused.has_line("error:", 'User "alice" cannot create resource "pods"'), refused.lines
    done = squarepeg("run", "--as", "alice", "--as-group", "squarepeg-testers", *RUN[1:], env=env)
    assert_ran(done)
    assert done.has_line("using context", namespace, "as alice (groups squarepeg-testers)")
    calls = [line for line in log.read_text().splitlines() if not line.startswith("config ")]
    assert calls, "no kubectl call talked to the cluster"
    assert all("--as=alice" in call for call in calls), calls
    later = calls[len(calls) // 2:]  # the second run's (the first run's lack the group)
    assert any("--as-group=squarepeg-testers" in call for call in later), later
    assert done_with(kubesim, namespace)


def test_as_group_without_as_is_refused(squarepeg: Squarepeg, kubesim: Any) -> None:
    done = squarepeg("run", "--as-group", "squarepeg-testers", "alpine", "true")
    assert done.code == 125
    assert done.lines == ["squarepeg: error: --as-group squarepeg-testers without --as; "
                          "Kubernetes impersonates groups only with a user: add --as USER"]


# -- least privilege -------------------------------------------------------------------------


def test_the_role_without_events_and_attach_is_enough(squarepeg: Squarepeg, kubesim: Any,
                                                      namespace: str, tmp_path: Path) -> None:
    """No events permission, no pods/attach (no -i), nothing cluster-wide: the run and its
    sweep work, without a warning."""
    role = without(documented_role(), ("events", "list"), ("pods/attach", "create"),
                   ("pods/attach", "get"))
    grant(kubesim, namespace, role, plain_user())
    token = pki.token_of(pki_dir(kubesim), pki.PLAIN_USER)
    env = write_login(tmp_path / "kubeconfig", kubesim, namespace, {"token": token})
    cluster_wide = kubesim.kubectl("auth", "can-i", "list", "pods", "--all-namespaces",
                                   "--as", pki.PLAIN_USER)
    assert cluster_wide.stdout.strip() == b"no"
    assert_ran(squarepeg(*RUN, env=env))
    assert_ran(squarepeg("run", "--mode", "job", *RUN[1:], env=env))
    assert done_with(kubesim, namespace)


MISSING = {
    # (resource, verb): (the run's arguments, exit code, the words of the message)
    ("pods", "list"): (RUN, 3, "warning: orphan sweep incomplete"),
    ("pods/log", "get"): (RUN, 125, "warning: lost the log stream"),
    # -i with input on a pipe: the one run that attaches. Its `get` goes too: kubectl's
    # WebSocket attach is a GET, which the API server authorizes as `get` as well.
    ("pods/attach", "create"): (("run", "-i", "alpine", "cat"), 125, "error: cannot attach"),
}


@pytest.mark.parametrize("missing", list(MISSING), ids=lambda m: f"{m[1]}-{m[0]}")
def test_a_missing_permission_is_named_with_its_check(
    missing: tuple[str, str], squarepeg: Squarepeg, kubesim: Any, namespace: str,
    tmp_path: Path,
) -> None:
    resource, verb = missing
    args, code, words = MISSING[missing]
    dropped = [missing] + ([(resource, "get")] if resource == "pods/attach" else [])
    grant(kubesim, namespace, without(documented_role(), *dropped), plain_user())
    token = pki.token_of(pki_dir(kubesim), pki.PLAIN_USER)
    env = write_login(tmp_path / "kubeconfig", kubesim, namespace, {"token": token})
    process = squarepeg.start(*args, env=env, stdin=subprocess.PIPE)
    out, err = process.communicate(b"hi\n", timeout=120)
    done = Finished(process.returncode, out, err.decode("utf-8", "replace"))
    assert done.code == code, done.lines
    assert "Traceback" not in done.stderr
    check = f"kubectl auth can-i {verb} {resource} --context=login --namespace={namespace}"
    assert done.has_line(words, f'cannot {verb} resource "{resource}"', check), done.lines
    # A pod kept for its unread output is the user's to delete, here the test's; and `cat`,
    # as PID 1, ignores the SIGTERM of the deletion squarepeg began: no grace period.
    kubesim.kubectl("delete", "pods", "--all", "-n", namespace, "--wait=false",
                    "--grace-period=0", "--force")
