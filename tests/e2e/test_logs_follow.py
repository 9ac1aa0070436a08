"""The log follower through the real kubectl against kubesim: streams dropped mid-run and an
API server restart, and the output still equals the container's log byte for byte."""

from __future__ import annotations

import io
import json
import os
import threading
from typing import Any

import pytest

from kubectl_squarepeg.cluster import kubectl, verbs
from kubectl_squarepeg.run.logs import LogFollower
from kubectl_squarepeg.terminal.console import Console
from tests.e2e.conftest import CLIENT_SIDE_LOG_DROP
from tests.helpers import pod_manifest, wait_until

LINES = 600
# Numbered lines, several per second (so the resume point counts lines within a second), a
# `\r` and an ANSI code in each, and a final line without a newline.
SCRIPT = (
    f'i=0; while [ $i -lt {LINES} ]; do printf "line %05d \\033[1mbold\\033[0m 50%%\\r100%%\\n" '
    '"$i"; i=$((i+1)); sleep 0.01; done; printf "the end"'
)


class Collected(io.RawIOBase):
    """`out` for the follower: what it wrote, readable while it writes (on another thread)."""

    def __init__(self) -> None:
        super().__init__()
        self._data = bytearray()
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        with self._lock:
            self._data += data
        return len(data)

    def value(self) -> bytes:
        with self._lock:
            return bytes(self._data)


def target_of(kubesim: Any, namespace: str) -> kubectl.Target:
    kubeconfig = getattr(kubesim, "kubeconfig", None) or os.environ.get("KUBECONFIG")
    return kubectl.Target(kubeconfig=str(kubeconfig) if kubeconfig else None, namespace=namespace)


def create_pod(target: kubectl.Target, name: str) -> None:
    manifest = pod_manifest(name, ["sh", "-c", SCRIPT])
    result = kubectl.run(["create", "-f", "-"], target, stdin=json.dumps(manifest).encode())
    assert result.ok, result.stderr
    wait_until(lambda: phase(target, name) in ("Running", "Succeeded"), 60, f"{name} to run")


def phase(target: kubectl.Target, name: str) -> str:
    result = kubectl.run(["get", "pod", name, "-o", "jsonpath={.status.phase}"], target)
    return result.stdout.decode()


def expected_log() -> bytes:
    lines = b"".join(
        b"line %05d \x1b[1mbold\x1b[0m 50%%\r100%%\n" % i for i in range(LINES)
    )
    return lines + b"the end"


@pytest.fixture
def follow(kubesim: Any, namespace: str) -> Any:
    """Start a pod and a follower of it; yields (target, pod, follower, out, stderr)."""
    target = target_of(kubesim, namespace)
    name = "follow-me"
    create_pod(target, name)
    out, err = Collected(), io.StringIO()
    follower = LogFollower(target, name, "main", out, Console(err))  # type: ignore[arg-type]
    follower.start()
    try:
        yield target, name, follower, out, err
    finally:
        follower.stop()
        assert follower.join(10)
        kubectl.run(["delete", "pod", name, "--wait=false", "--ignore-not-found"], target)


def finish_and_compare(target: kubectl.Target, name: str, follower: LogFollower,
                       out: Collected) -> None:
    wait_until(lambda: phase(target, name) == "Succeeded", 60, f"{name} to finish")
    assert follower.finish(30) is True
    whole = verbs.logs(target, name, "main")
    assert whole.ok, whole.stderr
    assert whole.stdout == expected_log()
    assert out.value() == whole.stdout


@pytest.mark.kubesim_only(CLIENT_SIDE_LOG_DROP)
def test_two_dropped_streams_lose_and_repeat_nothing(kubesim: Any, follow: Any) -> None:
    target, name, follower, out, err = follow
    wait_until(lambda: len(out.value()) > 2000, 30, "the first output")
    kubesim.ctl("drop-logs", "--after-bytes", "777")  # cut mid-line, a little later
    wait_until(lambda: "dropped" in err.getvalue(), 30, "the first drop")
    seen = len(out.value())
    wait_until(lambda: len(out.value()) > seen + 2000, 30, "output after the reconnect")
    kubesim.ctl("drop-logs")
    wait_until(lambda: err.getvalue().count("dropped") == 2, 30, "the second drop")
    finish_and_compare(target, name, follower, out)
    assert follower.gave_up is False
    assert err.getvalue().count("will retry") == 2


def test_api_server_restart_mid_stream(kubesim: Any, follow: Any) -> None:
    target, name, follower, out, err = follow
    wait_until(lambda: len(out.value()) > 2000, 30, "the first output")
    kubesim.ctl("restart", "--down", "2")
    finish_and_compare(target, name, follower, out)
    assert follower.gave_up is False
    assert "will retry" in err.getvalue()  # the reconnects while it was down
