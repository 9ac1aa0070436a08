"""The cluster half through the real kubectl and `scripts/kubesim serve`: logs byte for byte,
a pod's life seen by `kubectl get -w`, graceful deletion, scheduling events, a Job, and the
eviction fault."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from tests.helpers import pod_manifest, wait_until

PY = sys.executable

# What the container writes: every byte value, ANSI colours, a carriage-return progress bar,
# a 40 KiB line (three CRI records) and a final line without a newline.
PAYLOAD = (bytes(range(256)) + b"\n\x1b[1;32mgreen\x1b[0m 10%\r55%\r100%\n"
           + b"L" * (40 * 1024) + b"\n" + b"the end, no newline")


def pod(name: str, command: list[str], **spec: Any) -> dict[str, Any]:
    return pod_manifest(name, command, image="alpine:3.20", **spec)


def create(kubesim: Any, namespace: str, obj: dict[str, Any]) -> None:
    done = kubesim.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(obj).encode())
    assert done.returncode == 0, done.stderr.decode(errors="replace")


def get(kubesim: Any, namespace: str, kind: str, name: str) -> dict[str, Any]:
    done = kubesim.kubectl("get", kind, name, "-n", namespace, "-o", "json")
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def phase(kubesim: Any, namespace: str, name: str) -> str:
    return str(get(kubesim, namespace, "pod", name).get("status", {}).get("phase", ""))


def delete(kubesim: Any, namespace: str, *what: str) -> None:
    kubesim.kubectl("delete", *what, "-n", namespace, "--ignore-not-found",
                    "--cascade=background")


def test_kubectl_logs_are_byte_exact(kubesim: Any, namespace: str) -> None:
    script = f"import sys; sys.stdout.buffer.write({PAYLOAD!r})"
    create(kubesim, namespace, pod("bytes", [PY, "-c", script]))
    wait_until(lambda: phase(kubesim, namespace, "bytes") == "Succeeded", 20, "Succeeded")
    done = kubesim.kubectl("logs", "bytes", "-n", namespace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == PAYLOAD
    stamped = kubesim.kubectl("logs", "bytes", "-n", namespace, "--timestamps").stdout
    lines = stamped.split(b"\n")
    assert len(lines) == PAYLOAD.count(b"\n") + 1
    assert all(line[29:31] == b"Z " and line[19:20] == b"." for line in lines)
    assert b"\n".join(line[31:] for line in lines) == PAYLOAD
    delete(kubesim, namespace, "pod", "bytes")


def test_kubectl_get_watch_follows_a_pod_to_its_exit_code(kubesim: Any, namespace: str) -> None:
    create(kubesim, namespace, pod("watched", ["sh", "-c", "sleep 0.5; exit 3"]))
    watcher = subprocess.Popen(
        ["kubectl", "get", "pod", "watched", "-n", namespace, "-w", "-o", "json"],
        env=kubesim.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL)
    objects: list[dict[str, Any]] = []
    buffer = bytearray()

    def read() -> None:
        assert watcher.stdout is not None
        decoder = json.JSONDecoder()
        while True:
            chunk = watcher.stdout.read1(65536)  # type: ignore[attr-defined]
            if not chunk:
                return
            buffer.extend(chunk)
            text = buffer.decode(errors="replace").lstrip()
            while text:
                try:
                    obj, end = decoder.raw_decode(text)
                except ValueError:
                    break
                objects.append(obj)
                text = text[end:].lstrip()
            buffer[:] = text.encode()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(lambda: any(o["status"].get("phase") == "Failed" for o in objects), 20,
                   "the watch to show the pod Failed")
    finally:
        watcher.terminate()
        watcher.wait(10)
        reader.join(5)
    phases = [o["status"].get("phase") for o in objects]
    assert "Running" in phases and phases[-1] == "Failed"
    final = objects[-1]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (final["exitCode"], final["reason"]) == (3, "Error")
    delete(kubesim, namespace, "pod", "watched")


def test_kubectl_delete_stops_the_container_gracefully(kubesim: Any, namespace: str) -> None:
    # It handles SIGTERM: a PID 1 that does not would last its whole grace period (30 s).
    create(kubesim, namespace, pod("sleeper", ["sh", "-c", "trap 'exit 143' TERM; echo ready; "
                                                "while :; do sleep 0.1; done"]))
    wait_until(lambda: kubesim.kubectl("logs", "sleeper", "-n", namespace).stdout == b"ready\n",
               20, "the handler to be in place")
    started = time.monotonic()
    done = kubesim.kubectl("delete", "pod", "sleeper", "-n", namespace)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 10
    assert kubesim.kubectl("get", "pod", "sleeper", "-n", namespace).returncode == 1


def test_kubectl_shows_failed_scheduling_events(kubesim: Any, namespace: str) -> None:
    body = pod("huge", ["true"])
    body["spec"]["containers"][0]["resources"] = {"requests": {"memory": "100Gi"}}
    create(kubesim, namespace, body)

    def message() -> str:
        done = kubesim.kubectl("get", "events", "-n", namespace, "--field-selector",
                               "involvedObject.name=huge", "-o", "json")
        return " ".join(e["message"] for e in json.loads(done.stdout)["items"]
                        if e["reason"] == "FailedScheduling")

    text = wait_until(message, 20, "a FailedScheduling event")
    assert "0/1 nodes are available: 1 Insufficient memory." in text
    assert phase(kubesim, namespace, "huge") == "Pending"
    delete(kubesim, namespace, "pod", "huge")


def test_kubectl_job_completes_and_its_logs_are_readable(kubesim: Any, namespace: str) -> None:
    template = {"spec": pod("unused", ["sh", "-c", "echo from the job"])["spec"]}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
           "spec": {"backoffLimit": 0, "template": template}}
    create(kubesim, namespace, job)
    done = kubesim.kubectl("wait", "--for=condition=complete", "job/once", "-n", namespace,
                           "--timeout=30s")
    assert done.returncode == 0, done.stderr
    logs = kubesim.kubectl("logs", "job/once", "-n", namespace)
    assert logs.stdout == b"from the job\n", logs.stderr
    status = get(kubesim, namespace, "job", "once")["status"]
    assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    delete(kubesim, namespace, "job", "once")
    wait_until(lambda: not kubesim.kubectl("get", "pods", "-n", namespace, "-o",
                                           "name").stdout.strip(), 20, "the job's pod deleted")


def test_eviction_fault_through_the_control_api(kubesim: Any, namespace: str) -> None:
    create(kubesim, namespace, pod("victim", ["sleep", "300"]))
    wait_until(lambda: phase(kubesim, namespace, "victim") == "Running", 20, "Running")
    kubesim.ctl("evict", f"{namespace}/victim")
    wait_until(lambda: phase(kubesim, namespace, "victim") == "Failed", 20, "Failed")
    status = get(kubesim, namespace, "pod", "victim")["status"]
    assert status["reason"] == "Evicted"
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "ContainerStatusUnknown")
    delete(kubesim, namespace, "pod", "victim")


@pytest.mark.parametrize("code", [0, 3, 255])
def test_exit_codes_through_the_api(kubesim: Any, namespace: str, code: int) -> None:
    create(kubesim, namespace, pod("exits", ["sh", "-c", f"exit {code}"]))
    wait_until(lambda: phase(kubesim, namespace, "exits") in ("Succeeded", "Failed"), 20,
               "the pod to finish")
    state = get(kubesim, namespace, "pod", "exits")["status"]["containerStatuses"][0]["state"]
    assert state["terminated"]["exitCode"] == code
    delete(kubesim, namespace, "pod", "exits")
