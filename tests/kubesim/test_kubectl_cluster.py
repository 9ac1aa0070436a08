"""kubesim as tests and people use it: `scripts/kubesim serve` as a process (the `kubesim`
fixture), the cluster half running containers as local processes, the real kubectl.

Covers the commands of kubesim.md against running pods (logs -f --timestamps with --since and
--since-time, byte-exact logs, get -w -o json, delete with each cascade on a running Job,
get pods,jobs -l, get events) and every fault through `scripts/kubesim ctl`."""

from __future__ import annotations

import json
import re
import subprocess
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from tests.conftest import Kubesim
from tests.helpers import json_stream, kill_leftover, pod_manifest, wait_until


def ok(done: subprocess.CompletedProcess[bytes]) -> str:
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout.decode(errors="replace")


def pod(name: str, command: list[str], image: str = "alpine", **extra: Any) -> dict[str, Any]:
    return pod_manifest(name, command, image=image, grace=5, **extra)


def create(kubesim: Kubesim, namespace: str, *docs: dict[str, Any]) -> None:
    """One `kubectl create`, the objects as a stream of JSON documents (a `kind: List` would
    need the OpenAPI v2 document kubesim does not serve)."""
    body = "\n".join(json.dumps(doc) for doc in docs).encode()
    ok(kubesim.kubectl("create", "-n", namespace, "-f", "-", input=body))


def field(kubesim: Kubesim, namespace: str, ref: str, path: str) -> str:
    done = kubesim.kubectl("get", ref, "-n", namespace, "-o", f"jsonpath={path}")
    return done.stdout.decode() if done.returncode == 0 else ""


def phase(kubesim: Kubesim, namespace: str, name: str) -> str:
    return field(kubesim, namespace, f"pod/{name}", "{.status.phase}")


def wait_phase(kubesim: Kubesim, namespace: str, name: str, *phases: str) -> str:
    return wait_until(lambda: phase(kubesim, namespace, name) in phases and
                      phase(kubesim, namespace, name), 60, f"{name} to be {'/'.join(phases)}")


def gone(kubesim: Kubesim, namespace: str, ref: str) -> bool:
    done = kubesim.kubectl("get", ref, "-n", namespace, "--ignore-not-found", "-o", "name")
    return done.returncode == 0 and not done.stdout.strip()


PYTHON_BYTES = (
    "import sys, time\n"
    "out = sys.stdout.buffer\n"
    "out.write(bytes(range(256)) + b'\\n'); out.flush()\n"
    "out.write(b'\\x1b[1;31mred\\x1b[0m 10%\\r50%\\r100%\\n'); out.flush()\n"
    "out.write(b'L' * 40000 + b'\\n'); out.flush()\n"
    "out.write(b'the end, no newline'); out.flush()\n"
)
EXPECTED_BYTES = (bytes(range(256)) + b"\n" + b"\x1b[1;31mred\x1b[0m 10%\r50%\r100%\n"
                  + b"L" * 40000 + b"\n" + b"the end, no newline")


def test_container_output_reaches_kubectl_logs_byte_for_byte(kubesim: Kubesim,
                                                             namespace: str) -> None:
    create(kubesim, namespace, pod("bytes", ["python3", "-c", PYTHON_BYTES], image="python"))
    wait_phase(kubesim, namespace, "bytes", "Succeeded")
    whole = kubesim.kubectl("logs", "bytes", "-n", namespace, "-c", "main")
    assert whole.returncode == 0 and whole.stdout == EXPECTED_BYTES
    stamped = kubesim.kubectl("logs", "bytes", "-n", namespace, "--timestamps").stdout
    # Every line is stamped (byte 10 of range(256) is a newline too); the 40000-byte line
    # was split into 16 KiB records, but only its start is stamped.
    lines = stamped.split(b"\n")
    assert len(lines) == 5
    assert all(re.match(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ", line) for line in lines)
    assert lines[3].split(b" ", 1)[1] == b"L" * 40000
    ok(kubesim.kubectl("delete", "pod", "bytes", "-n", namespace, "--wait=false"))


TICKER = "i=0; while [ $i -lt 30 ]; do echo line-$i; i=$((i+1)); sleep 0.1; done; printf last"


def _stamps(output: bytes) -> list[tuple[datetime, bytes]]:
    out = []
    for line in output.split(b"\n"):
        if line:
            stamp, _, text = line.partition(b" ")
            moment = datetime.strptime(stamp[:26].decode() + "Z", "%Y-%m-%dT%H:%M:%S.%fZ")
            out.append((moment.replace(tzinfo=timezone.utc), text))
    return out


def test_logs_follow_with_timestamps_since_and_since_time(kubesim: Kubesim,
                                                          namespace: str) -> None:
    create(kubesim, namespace, pod("ticker", ["sh", "-c", TICKER]))
    wait_phase(kubesim, namespace, "ticker", "Running", "Succeeded")
    followed = kubesim.kubectl("logs", "-f", "--timestamps", "ticker", "-n", namespace,
                               "-c", "main", timeout=60)
    assert followed.returncode == 0, followed.stderr  # ends cleanly when the container does
    stamped = _stamps(followed.stdout)
    assert [text for _, text in stamped] == [f"line-{i}".encode() for i in range(30)] + \
        [b"last"]
    assert followed.stdout.split(b" ", 1)[0].endswith(b"Z")
    assert len(followed.stdout.split(b" ", 1)[0]) == len("2026-01-01T00:00:00.000000000Z")
    # --since-time: kubectl drops the fraction, so the cut is at a whole second.
    cut = stamped[15][0].replace(microsecond=0)
    since_time = kubesim.kubectl("logs", "-f", "ticker", "-n", namespace, "--timestamps",
                                 f"--since-time={cut.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    assert [t for t, _ in _stamps(since_time.stdout)] == [t for t, _ in stamped if t >= cut]
    everything = kubesim.kubectl("logs", "-f", "ticker", "-n", namespace, "--since=1h")
    assert everything.stdout == b"\n".join(f"line-{i}".encode() for i in range(30)) + \
        b"\nlast"
    wait_until(lambda: datetime.now(timezone.utc).timestamp() - stamped[-1][0].timestamp() > 2,
               10, "two seconds after the last line")
    assert kubesim.kubectl("logs", "ticker", "-n", namespace, "--since=1s").stdout == b""
    ok(kubesim.kubectl("delete", "pod", "ticker", "-n", namespace, "--wait=false"))


def test_logs_of_a_container_that_has_not_started(kubesim: Kubesim, namespace: str) -> None:
    create(kubesim, namespace, pod("unpullable", ["true"], image="no-such-image-anywhere:1"))
    message = wait_until(lambda: kubesim.kubectl("logs", "unpullable", "-n", namespace).stderr
                         .decode(), 30, "a refusal")
    assert message.startswith('Error from server (BadRequest): container "main" in pod '
                              '"unpullable" is waiting to start: ')
    ok(kubesim.kubectl("delete", "pod", "unpullable", "-n", namespace, "--wait=false"))


def test_dropped_log_stream_ends_kubectl_logs_f_with_unexpected_eof(kubesim: Kubesim,
                                                                    namespace: str) -> None:
    create(kubesim, namespace, pod("chatty", ["sh", "-c", "while true; do echo tick; "
                                                          "sleep 0.1; done"]))
    wait_phase(kubesim, namespace, "chatty", "Running")
    follower = subprocess.Popen(["kubectl", "logs", "-f", "chatty", "-n", namespace],
                                env=kubesim.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert follower.stdout is not None
        assert follower.stdout.readline() == b"tick\n"
        answer = json.loads(kubesim.ctl("drop-logs", "--after-bytes", "7"))
        assert answer["dropped"] >= 1
        out, err = follower.communicate(timeout=30)
    finally:
        kill_leftover(follower)
    assert follower.returncode == 1
    assert err.decode().strip() == "error: unexpected EOF"
    assert out.startswith(b"tick\nti") or out == b"tick\nti"
    ok(kubesim.kubectl("delete", "pod", "chatty", "-n", namespace, "--wait=false",
                       "--grace-period=1"))


def test_watch_follows_a_pod_to_completion_and_ends_at_a_drop(kubesim: Kubesim,
                                                              namespace: str) -> None:
    # The watch first, the pod once it is open: a loaded machine may take longer to start
    # kubectl than the pod takes to run, and the pod's Running must be seen.
    open_before = kubesim.stats()["watches"]
    watcher = subprocess.Popen(["kubectl", "get", "pods", "--field-selector",
                                "metadata.name=watched", "-n", namespace, "-w", "-o", "json"],
                               env=kubesim.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: kubesim.stats()["watches"] > open_before, 60, "the watch to open")
        create(kubesim, namespace, pod("watched", ["sh", "-c", "sleep 0.5"]))
        wait_phase(kubesim, namespace, "watched", "Succeeded")
        wait_until(lambda: json.loads(kubesim.ctl("drop-watches"))["dropped"] >= 1 or None,
                   10, "a watch to drop")
        out, err = watcher.communicate(timeout=30)
    finally:
        kill_leftover(watcher)
    assert watcher.returncode == 0, err
    objects = json_stream(out.decode())
    phases = [o["status"].get("phase") for o in objects]
    assert phases[-1] == "Succeeded" and "Running" in phases
    ok(kubesim.kubectl("delete", "pod", "watched", "-n", namespace, "--wait=false"))


def _job(name: str, command: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "terminationGracePeriodSeconds": 2,
                "containers": [{"name": "main", "image": "alpine",
                                "command": ["sh", "-c", command]}]}}}}


def _job_pod(kubesim: Kubesim, namespace: str, job: str) -> str:
    return wait_until(lambda: field(kubesim, namespace, "pods",
                                    "{.items[0].metadata.name}") if field(
        kubesim, namespace, "pods", "{.items[*].metadata.labels.job-name}") == job else "",
        30, f"the pod of {job}")


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_delete_a_running_job_with_each_cascade(kubesim: Kubesim, namespace: str,
                                                cascade: str) -> None:
    name = f"job-{cascade}"
    create(kubesim, namespace, _job(name, "trap 'exit 0' TERM; sleep 60 & wait"))
    child = _job_pod(kubesim, namespace, name)
    assert field(kubesim, namespace, f"pod/{child}", "{.metadata.ownerReferences[0].kind}") \
        == "Job"
    wait_phase(kubesim, namespace, child, "Running")
    args = ["delete", "job", name, "-n", namespace, f"--cascade={cascade}"]
    if cascade != "foreground":
        args.append("--wait=false")
    assert ok(kubesim.kubectl(*args, timeout=60)) == f'job.batch "{name}" deleted\n'
    if cascade == "foreground":
        # kubectl waited for the Job, which waited for its pod.
        assert gone(kubesim, namespace, f"job/{name}") and gone(kubesim, namespace,
                                                                f"pod/{child}")
    elif cascade == "background":
        assert gone(kubesim, namespace, f"job/{name}")
        wait_until(lambda: gone(kubesim, namespace, f"pod/{child}"), 30, "the GC")
    else:
        assert gone(kubesim, namespace, f"job/{name}")
        assert field(kubesim, namespace, f"pod/{child}", "{.metadata.ownerReferences}") == ""
        assert phase(kubesim, namespace, child) == "Running"
        ok(kubesim.kubectl("delete", "pod", child, "-n", namespace, "--wait=false"))


def test_get_pods_and_jobs_by_selector_and_scheduling_events(kubesim: Kubesim,
                                                             namespace: str) -> None:
    labels = {"metadata": {"labels": {"app": "sel", "tier": "a"}}}
    create(kubesim, namespace,
           pod("sel-a", ["true"], **labels),
           pod("sel-b", ["true"], metadata={"labels": {"app": "sel", "skip": "yes"}}),
           {**_job("sel-job", "true"), "metadata": {"name": "sel-job", "labels": {"app": "sel"}}})
    huge = pod("too-big", ["true"])
    huge["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1000"}}
    create(kubesim, namespace, huge)
    listed = json.loads(ok(kubesim.kubectl("get", "pods,jobs", "-n", namespace, "-l",
                                           "app=sel,!skip", "-o", "json")))
    kinds = sorted((i.get("kind", "?"), i["metadata"]["name"]) for i in listed["items"])
    assert kinds == [("Job", "sel-job"), ("Pod", "sel-a")]
    events = wait_until(lambda: json.loads(ok(kubesim.kubectl(
        "get", "events", "-n", namespace, "--field-selector", "involvedObject.name=too-big",
        "-o", "json")))["items"], 30, "a FailedScheduling event")
    assert events[0]["reason"] == "FailedScheduling" and events[0]["type"] == "Warning"
    assert events[0]["message"].startswith("0/1 nodes are available: ")
    assert field(kubesim, namespace, "pod/too-big",
                 '{.status.conditions[?(@.type=="PodScheduled")].reason}') == "Unschedulable"
    ok(kubesim.kubectl("delete", "pods,jobs", "--all", "-n", namespace, "--wait=false",
                       "--cascade=background"))


def test_evict_and_delete_by_another_actor(kubesim: Kubesim, namespace: str) -> None:
    sleeper = ["sh", "-c", "trap 'exit 0' TERM; sleep 60 & wait"]
    create(kubesim, namespace, pod("evict-me", sleeper), pod("delete-me", sleeper))
    for name in ("evict-me", "delete-me"):
        wait_phase(kubesim, namespace, name, "Running")
    kubesim.ctl("evict", f"{namespace}/evict-me")
    wait_phase(kubesim, namespace, "evict-me", "Failed")
    assert field(kubesim, namespace, "pod/evict-me", "{.status.reason}") == "Evicted"
    terminated = json.loads(field(kubesim, namespace, "pod/evict-me",
                                  "{.status.containerStatuses[0].state.terminated}"))
    assert terminated["exitCode"] == 137 and terminated["reason"] == "ContainerStatusUnknown"
    kubesim.ctl("delete-pod", f"{namespace}/delete-me")
    wait_until(lambda: gone(kubesim, namespace, "pod/delete-me"), 30, "the deletion")
    with pytest.raises(Exception, match="not found"):
        kubesim.ctl("evict", f"{namespace}/no-such-pod")
    ok(kubesim.kubectl("delete", "pod", "evict-me", "-n", namespace, "--wait=false"))


def test_restart_refuses_while_down_and_keeps_state(kubesim: Kubesim, namespace: str) -> None:
    create(kubesim, namespace, pod("survivor", ["sh", "-c", "sleep 0.2"]))
    uid = wait_until(lambda: field(kubesim, namespace, "pod/survivor", "{.metadata.uid}"), 10,
                     "the pod")
    began = time.monotonic()
    kubesim.ctl("restart", "--down", "2")
    down = kubesim.kubectl("get", "pods", "-n", namespace)
    assert time.monotonic() - began < 2, "the check ran too late to see the outage"
    assert down.returncode == 1
    assert b"The connection to the server 127.0.0.1:" in down.stderr
    assert b"was refused" in down.stderr
    wait_until(lambda: kubesim.kubectl("get", "ns", namespace).returncode == 0, 30,
               "the server to listen again")
    assert field(kubesim, namespace, "pod/survivor", "{.metadata.uid}") == uid
    wait_phase(kubesim, namespace, "survivor", "Succeeded")  # the cluster kept working
    ok(kubesim.kubectl("delete", "pod", "survivor", "-n", namespace, "--wait=false"))


def test_fifty_pods_run_at_once(kubesim: Kubesim, namespace: str) -> None:
    sleeper = ["sh", "-c", "trap 'exit 0' TERM; sleep 120 & wait"]
    create(kubesim, namespace, *[pod(f"many-{i:02d}", sleeper) for i in range(50)])

    def running() -> int:
        phases = field(kubesim, namespace, "pods", "{.items[*].status.phase}").split()
        return phases.count("Running")

    wait_until(lambda: running() == 50, 120, "50 pods Running")
    assert running() == 50
    ok(kubesim.kubectl("delete", "pods", "--all", "-n", namespace, "--wait=false"))


def _follow_once(sim: Kubesim, name: str, seconds: float) -> tuple[int | None, bytes]:
    """`kubectl logs -f` for at most `seconds`: (its exit code or None if still going, stderr)."""
    follower = subprocess.Popen(["kubectl", "logs", "-f", name, "-n", "default"], env=sim.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = follower.communicate(timeout=seconds)
        return follower.returncode, err
    except subprocess.TimeoutExpired:
        return None, b""
    finally:
        kill_leftover(follower)


def test_standing_faults_cut_each_log_stream_and_watch_so_many_times(
        kubesim_factory: Any) -> None:
    sim = kubesim_factory(None)
    create(sim, "default", pod("chatty", ["sh", "-c", "while true; do echo tick; sleep 0.05; "
                                                      "done"]))
    try:
        wait_phase(sim, "default", "chatty", "Running")
        json.loads(sim.ctl("drop-logs", "--after-bytes", "20", "--times", "2"))
        for _ in range(2):  # each new stream of the container is cut after 20 bytes...
            code, err = _follow_once(sim, "chatty", 30)
            assert (code, err.decode().strip()) == (1, "error: unexpected EOF")
        assert _follow_once(sim, "chatty", 1.5)[0] is None  # ...until it was cut twice
        json.loads(sim.ctl("drop-watches", "--after-seconds", "0.3", "--times", "1"))
        for cuts in ({"1": 1}, {"1": 1}):  # the second watch ends at its own timeout
            subprocess.run(["kubectl", "get", "pod", "chatty", "-n", "default", "-w", "-o",
                            "name", "--request-timeout=2s"], env=sim.env,
                           capture_output=True, timeout=30)
            assert sim.stats()["watchCuts"] == cuts
        assert sim.stats()["logCuts"] == {"2": 1}
    finally:
        ok(sim.kubectl("delete", "pod", "chatty", "-n", "default", "--wait=false",
                       "--grace-period=1"))
