"""`pods/attach` as clients nobody here wrote use it: the real kubectl (WebSocket v5, its
SPDY fallback's refusals, a pty where a terminal matters) and the official Python client's
`stream()` helper; the stdin pipe that stays open until the first attach, the terminal
whose size follows resize messages, and every refusal an attach can meet."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.stream import stream

from tests.conftest import Kubesim
from tests.helpers import wait_for_terminal_size, wait_until
from tests.kubesim.test_kubectl_cluster import create, field, ok, wait_phase

ATTACH_SECONDS = 60.0


@pytest.fixture
def namespace(namespace: str, kubesim: Kubesim) -> Iterator[str]:
    """The shared fixture's namespace, whose finished pods this module deletes after each
    test (attached pods end by themselves, and end in it)."""
    yield namespace
    kubesim.kubectl("delete", "pods", "--all", "-n", namespace, "--wait=false")


def interactive_pod(name: str, command: list[str], *, tty: bool = False,
                    stdin_once: bool = True, image: str = "alpine") -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": image, "command": command,
                                 "stdin": True, "stdinOnce": stdin_once}
    if tty:
        container["tty"] = True
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 2,
                     "containers": [container]}}


def exit_code(kubesim: Kubesim, namespace: str, name: str) -> str:
    return field(kubesim, namespace, f"pod/{name}",
                 "{.status.containerStatuses[0].state.terminated.exitCode}")


def attach(kubesim: Kubesim, namespace: str, name: str, data: bytes,
           *args: str) -> subprocess.CompletedProcess[bytes]:
    return kubesim.kubectl("attach", "-i", "-q", name, "-c", "main", "-n", namespace, *args,
                           input=data, timeout=ATTACH_SECONDS)


def logs(kubesim: Kubesim, namespace: str, name: str) -> bytes:
    return kubesim.kubectl("logs", name, "-n", namespace, "-c", "main").stdout


# --- kubectl attach -i --------------------------------------------------------------------


def test_piped_stdin_reaches_the_container_and_its_end_closes_stdin(
        kubesim: Kubesim, namespace: str) -> None:
    create(kubesim, namespace, interactive_pod("count", ["wc", "-l"]))
    wait_phase(kubesim, namespace, "count", "Running")
    done = attach(kubesim, namespace, "count", b"a\nb\nc\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == b"3"
    wait_phase(kubesim, namespace, "count", "Succeeded")
    assert logs(kubesim, namespace, "count").strip() == b"3"


def test_a_megabyte_of_binary_stdin_arrives_intact(kubesim: Kubesim, namespace: str) -> None:
    data = os.urandom(1 << 20)
    create(kubesim, namespace, interactive_pod("digest", ["sha256sum"]))
    wait_phase(kubesim, namespace, "digest", "Running")
    done = attach(kubesim, namespace, "digest", data)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0].decode() == hashlib.sha256(data).hexdigest()


def test_stdin_waits_for_the_first_attach_and_attach_sees_only_later_output(
        kubesim: Kubesim, namespace: str) -> None:
    script = "echo before; read line; echo got $line; echo err >&2"
    create(kubesim, namespace, interactive_pod("late", ["sh", "-c", script]))
    wait_until(lambda: logs(kubesim, namespace, "late") == b"before\n", 30,
               "the output before the attach")
    # The container blocks on its stdin, held open for the attach that has not come yet.
    assert wait_phase(kubesim, namespace, "late", "Running") == "Running"
    done = attach(kubesim, namespace, "late", b"hello\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"got hello\n" and done.stderr == b"err\n"
    wait_phase(kubesim, namespace, "late", "Succeeded")
    assert logs(kubesim, namespace, "late") == b"before\ngot hello\nerr\n"


def test_stdin_once_closes_stdin_when_the_first_attach_ends(
        kubesim: Kubesim, namespace: str) -> None:
    create(kubesim, namespace, interactive_pod("once", ["cat"]))
    wait_phase(kubesim, namespace, "once", "Running")
    done = attach(kubesim, namespace, "once", b"")  # an empty stdin: EOF at once
    assert done.returncode == 0, done.stderr
    wait_phase(kubesim, namespace, "once", "Succeeded")
    assert exit_code(kubesim, namespace, "once") == "0"


# --- kubectl attach -it on a pty ------------------------------------------------------------


class Terminal:
    """A command on a pty of a given size, read as it goes."""

    def __init__(self, argv: list[str], env: dict[str, str], rows: int, columns: int):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # pragma: no cover - the child
            try:
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        self.resize(rows, columns)
        self.output = b""
        self.status: int | None = None

    def resize(self, rows: int, columns: int) -> None:
        fcntl_ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGWINCH)

    def type(self, text: bytes) -> None:
        os.write(self.fd, text)

    def _read(self) -> bool:
        readable, _, _ = select.select([self.fd], [], [], 0.05)
        if readable:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                chunk = b""
            self.output += chunk
            return bool(chunk)
        return True

    def wait_for(self, text: bytes, seconds: float = 30.0) -> None:
        def seen() -> bool:
            self._read()
            return text in self.output
        wait_until(seen, seconds, f"{text!r} on the terminal; got {self.output[-300:]!r}")

    def wait_exit(self, seconds: float = 30.0) -> int:
        def ended() -> bool:
            self._read()
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
            return pid != 0
        wait_until(ended, seconds, "the command on the terminal to exit")
        with contextlib.suppress(OSError):
            while self._read() and select.select([self.fd], [], [], 0)[0]:
                pass
        os.close(self.fd)
        assert self.status is not None
        return self.status

    def kill(self) -> None:
        if self.status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            with contextlib.suppress(OSError):
                os.close(self.fd)


def fcntl_ioctl(fd: int, request: int, arg: bytes) -> None:
    import fcntl
    fcntl.ioctl(fd, request, arg)


@pytest.fixture
def terminal() -> Iterator[Callable[..., Terminal]]:
    started: list[Terminal] = []

    def start(argv: list[str], env: dict[str, str], rows: int = 24,
              columns: int = 80) -> Terminal:
        term = Terminal(argv, env, rows, columns)
        started.append(term)
        return term

    yield start
    for term in started:
        term.kill()


def test_a_tty_container_follows_the_terminal(kubesim: Kubesim, namespace: str,
                                              terminal: Callable[..., Terminal]) -> None:
    create(kubesim, namespace, interactive_pod("shell", ["sh"], tty=True))
    wait_phase(kubesim, namespace, "shell", "Running")
    term = terminal(["kubectl", "attach", "-it", "-q", "shell", "-c", "main", "-n", namespace],
                    kubesim.env, rows=40, columns=100)
    term.type(b"stty size\r")
    term.wait_for(b"40 100")
    term.resize(30, 120)
    wait_for_terminal_size(term, 30, 120)
    # Ctrl-C reaches the container's foreground process through its terminal.
    term.type(b"sh -c 'echo sleeping; exec sleep 30' && echo slept\r")
    term.wait_for(b"sleeping\r\n")
    term.type(b"\x03")
    term.wait_for(b"^C")
    term.type(b"echo after $((6*7))\r")
    term.wait_for(b"after 42")
    assert b"\nslept\r\n" not in term.output
    term.type(b"exit 7\r")
    assert term.wait_exit() == 0  # kubectl attach itself succeeds
    wait_phase(kubesim, namespace, "shell", "Failed")
    assert exit_code(kubesim, namespace, "shell") == "7"
    # The log holds what the terminal showed, prompt included, with the terminal's CRLF.
    # Logged by lines, as containerd does: the terminal's `\r\n` is `\n` in the log.
    assert b"after 42\n" in logs(kubesim, namespace, "shell")


# --- the Python client ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def core(kubesim: Kubesim) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(config_file=str(kubesim.kubeconfig))
    try:
        yield client.CoreV1Api(api_client)
    finally:
        api_client.close()


def test_python_client_stream_attach(kubesim: Kubesim, core: client.CoreV1Api,
                                     namespace: str) -> None:
    create(kubesim, namespace, interactive_pod("py", ["sh", "-c", "read a; echo out $a; "
                                                      "echo err $a >&2; exit 4"]))
    wait_phase(kubesim, namespace, "py", "Running")
    session = stream(core.connect_get_namespaced_pod_attach, "py", namespace, container="main",
                     stdin=True, stdout=True, stderr=True, tty=False, _preload_content=False)
    try:
        assert session.subprotocol == "v5.channel.k8s.io"
        session.write_stdin("hi\n")
        session.close_channel(0)
        session.run_forever(timeout=ATTACH_SECONDS)
        assert session.read_stdout() == "out hi\n"
        assert session.read_stderr() == "err hi\n"
        assert json.loads(session.read_channel(3)) == {"metadata": {}, "status": "Success"}
    finally:
        session.close()
    wait_phase(kubesim, namespace, "py", "Failed")
    assert exit_code(kubesim, namespace, "py") == "4"


def test_python_client_resize_and_tty(kubesim: Kubesim, core: client.CoreV1Api,
                                      namespace: str) -> None:
    create(kubesim, namespace, interactive_pod("pytty", ["sh"], tty=True))
    wait_phase(kubesim, namespace, "pytty", "Running")
    session = stream(core.connect_get_namespaced_pod_attach, "pytty", namespace,
                     container="main", stdin=True, stdout=True, stderr=False, tty=True,
                     _preload_content=False)
    try:
        session.write_channel(4, json.dumps({"Width": 77, "Height": 33}))
        session.write_stdin("stty size; exit 0\n")
        session.run_forever(timeout=ATTACH_SECONDS)
        assert "33 77" in session.read_stdout()
    finally:
        session.close()
    wait_phase(kubesim, namespace, "pytty", "Succeeded")


def test_python_client_refused_without_permission(
        kubesim_factory: Callable[[dict[str, Any] | None], Kubesim]) -> None:
    sim = kubesim_factory({"tokens": {"bob-token": {"user": "bob", "rules": [
        {"verbs": ["*"], "resources": ["pods", "pods/log"]}]}}})
    create(sim, "default", interactive_pod("guarded", ["cat"]))
    wait_phase(sim, "default", "guarded", "Running")
    api_client = config.new_client_from_config(config_file=str(sim.kubeconfig),
                                               context="kubesim-bob")
    try:
        with pytest.raises(ApiException) as refused:
            stream(client.CoreV1Api(api_client).connect_get_namespaced_pod_attach, "guarded",
                   "default", container="main", stdin=True, stdout=True,
                   _preload_content=False)
        assert "403" in str(refused.value.reason)
    finally:
        api_client.close()
    # kubectl falls back to SPDY after the WebSocket 403 and prints the POST's refusal.
    done = sim.kubectl("--context", "kubesim-bob", "attach", "-i", "-q", "guarded", "-c", "main",
                       input=b"x")
    assert done.returncode == 1
    assert done.stderr.decode().strip().splitlines()[-1] == (
        'Error from server (Forbidden): pods "guarded" is forbidden: User "bob" cannot '
        'create resource "pods/attach" in API group "" in the namespace "default"')
    ok(sim.kubectl("delete", "pod", "guarded", "--wait=false"))


# --- refusals -------------------------------------------------------------------------------


def test_a_proxy_that_refuses_upgrades(
        kubesim_factory: Callable[[dict[str, Any] | None], Kubesim]) -> None:
    sim = kubesim_factory({"options": {"refuse_upgrades": True}})
    create(sim, "default", interactive_pod("behind", ["cat"]))
    wait_phase(sim, "default", "behind", "Running")
    done = sim.kubectl("attach", "-i", "-q", "behind", "-c", "main", input=b"x")
    assert done.returncode == 1
    assert done.stderr.decode().strip().splitlines()[-1] == \
        "Error from server (BadRequest): Upgrade request required"
    ok(sim.kubectl("delete", "pod", "behind", "--wait=false"))


def test_a_container_that_is_not_running(kubesim: Kubesim, namespace: str) -> None:
    create(kubesim, namespace, interactive_pod("unpulled", ["cat"], image="no-such-image"))
    wait_until(lambda: "ImagePullBackOff" in field(
        kubesim, namespace, "pod/unpulled", "{.status.containerStatuses[0].state.waiting.reason}"),
        30, "the pull to back off")
    done = attach(kubesim, namespace, "unpulled", b"x")
    assert done.returncode == 1
    assert done.stderr.decode().strip().splitlines()[-1] == \
        'error: unable to upgrade connection: container not found ("main")'
    ok(kubesim.kubectl("delete", "pod", "unpulled", "-n", namespace, "--wait=false"))
    # A finished pod: kubectl refuses before any request.
    create(kubesim, namespace, interactive_pod("finished", ["true"]))
    wait_phase(kubesim, namespace, "finished", "Succeeded")
    done = attach(kubesim, namespace, "finished", b"")
    assert done.returncode == 1 and b"cannot attach a container in a completed pod" in \
        done.stderr
    ok(kubesim.kubectl("delete", "pod", "finished", "-n", namespace, "--wait=false"))
