"""`kubectl squarepeg run` end to end: the installed command, the real kubectl, kubesim.

Each test asserts what a user sees (stdout bytes, stderr lines, the exit code) and, through
the `namespace` fixture, that nothing is left in the namespace afterwards.
"""

from __future__ import annotations

import base64
import hashlib
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import (
    CLIENT_SIDE_LOG_DROP,
    Squarepeg,
    names,
    needs_the_node_agent,
    wait_until,
)

SH = ("alpine", "sh", "-c")


def pod_phase(kubesim: Any, namespace: str, name: str) -> str:
    done = kubesim.kubectl("get", "pod", name, "-n", namespace, "-o", "jsonpath={.status.phase}")
    return done.stdout.decode() if done.returncode == 0 else ""


@pytest.mark.smoke("exit codes")
def test_exit_codes_come_back_verbatim(squarepeg: Squarepeg) -> None:
    for code in (0, 3, 255):
        done = squarepeg("run", *SH, f"echo out-{code}; echo err-{code} >&2; exit {code}")
        assert done.code == code, done.stderr
        # The node merges the container's stdout and stderr into one log: two lines written
        # in the same instant to the two streams come in either order on a real kubelet
        # (err-0 first in 2 of 3 runs there), so only the lines are compared.
        assert sorted(done.stdout.splitlines()) == [f"err-{code}".encode(), f"out-{code}".encode()]
        # stderr holds squarepeg's own lines only, each prefixed
        assert all(line.startswith("squarepeg: ") for line in done.lines), done.lines


def test_banner_names_context_and_namespace_unless_quiet(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    loud = squarepeg("run", "alpine", "true")
    assert loud.code == 0
    assert loud.has_line(kubesim.context, namespace), loud.lines
    quiet = squarepeg("run", "-q", "alpine", "true")
    assert quiet.code == 0
    assert quiet.lines == []


@pytest.mark.smoke("output bytes")
def test_binary_and_carriage_returns_are_captured_byte_for_byte(
    squarepeg: Squarepeg, tmp_path: Path
) -> None:
    script = (
        r"printf 'progress 10%%\rprogress 99%%\r\033[32mdone\033[0m\n';"
        r"printf '\000\001\377\376 raw\n';"
        r"printf 'no newline at the end'"
    )
    out = tmp_path / "out.bin"
    with out.open("wb") as handle:
        done = squarepeg("run", *SH, script, stdout=handle)
    assert done.code == 0, done.stderr
    assert out.read_bytes() == (
        b"progress 10%\rprogress 99%\r\x1b[32mdone\x1b[0m\n"
        b"\x00\x01\xff\xfe raw\n"
        b"no newline at the end"
    )


def test_five_megabytes_of_output_arrive_whole(squarepeg: Squarepeg, tmp_path: Path) -> None:
    # 5 MiB of seeded pseudo-random base64 lines, made by the container, checked by hash.
    # The `python` image: alpine has no python3 (localkube's kubelet node builds `python:3`
    # from the machine's Debian python3.11, with busybox's sh).
    script = (
        "python3 -c \"import base64,random,sys;r=random.Random(7);"
        "[sys.stdout.write(base64.b64encode(r.randbytes(96)).decode()+'\\n') "
        "for _ in range(40960)]\""
    )
    out = tmp_path / "big.out"
    with out.open("wb") as handle:
        done = squarepeg("run", "python:3", "sh", "-c", script, stdout=handle)
    assert done.code == 0, done.stderr
    import random

    rng = random.Random(7)
    expected = b"".join(base64.b64encode(rng.randbytes(96)) + b"\n" for _ in range(40960))
    data = out.read_bytes()
    assert len(data) == len(expected) == 40960 * 129
    assert hashlib.sha256(data).hexdigest() == hashlib.sha256(expected).hexdigest()


@pytest.mark.smoke("job mode")
def test_job_mode_runs_and_returns_the_code(squarepeg: Squarepeg) -> None:
    done = squarepeg("run", "--mode", "job", *SH, "echo from a job; exit 4")
    assert done.code == 4, done.stderr
    assert done.stdout == b"from a job\n"


@pytest.mark.smoke("fail fast")
def test_an_unknown_image_fails_fast_with_the_reason(squarepeg: Squarepeg) -> None:
    began = time.monotonic()
    done = squarepeg("run", "--timeout", "120", "no-such-image-xyz:1.0", "true")
    elapsed = time.monotonic() - began
    assert done.code == 125
    assert done.has_line("error:", "ErrImagePull") or done.has_line("error:", "ImagePullBackOff")
    assert done.stdout == b""
    assert elapsed < 30, f"took {elapsed:.1f}s: it waited instead of failing fast"


def test_an_unschedulable_pod_shows_why_then_times_out(squarepeg: Squarepeg) -> None:
    done = squarepeg("run", "--timeout", "4s", "-m", "900g", "alpine", "true")
    assert done.code == 125
    assert done.has_line("FailedScheduling", "Insufficient memory"), done.lines
    assert done.has_line("error:", "did not start within", "4s", "events:",
                         "FailedScheduling"), done.lines  # the message carries them too
    warnings = [line for line in done.lines if line.startswith("squarepeg: warning:")]
    assert sum("FailedScheduling" in line for line in warnings) == 1  # once each


def test_oom_kill_is_137_with_the_reason(squarepeg: Squarepeg) -> None:
    hog = "python3 -c \"import time; b = bytearray(300 * 1024 * 1024); time.sleep(30)\""
    done = squarepeg("run", "-m", "64m", "python:3", "sh", "-c", hog)  # alpine has no python3
    assert done.code == 137, done.stderr
    assert done.has_line("OOMKilled"), done.lines


@needs_the_node_agent("ctl evict: a node-pressure eviction, which only the node agent makes "
                      "on demand (the real kubelet evicts only under real pressure)")
def test_an_evicted_pod_is_125(squarepeg: Squarepeg, kubesim: Any, namespace: str) -> None:
    running = squarepeg.start("run", "--name", "evict-me", *SH, "echo started; sleep 60")
    wait_until(lambda: pod_phase(kubesim, namespace, "evict-me") == "Running", 30, "Running")
    kubesim.ctl("evict", f"{namespace}/evict-me")
    done = squarepeg.finish(running, timeout=60)
    assert done.code == 125, done.stderr
    assert done.has_line("error:", "evicted"), done.lines
    assert done.stdout == b"started\n"


def test_a_pod_deleted_by_someone_else_is_125(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    running = squarepeg.start("run", "--name", "delete-me", *SH, "sleep 60")
    wait_until(lambda: pod_phase(kubesim, namespace, "delete-me") == "Running", 30, "Running")
    deleted = kubesim.kubectl("delete", "pod", "delete-me", "-n", namespace, "--wait=false")
    assert deleted.returncode == 0, deleted.stderr
    done = squarepeg.finish(running, timeout=90)
    assert done.code == 125, done.stderr
    assert done.has_line("error:", "delete-me", "deleted"), done.lines


COUNTED = (
    'i=0; while [ $i -lt 400 ]; do printf "line %04d \\033[1mx\\033[0m\\r\\n" "$i"; '
    "i=$((i+1)); sleep 0.01; done; printf tail"
)


def as_logged(cluster: Any, written: bytes) -> bytes:
    """What the node's log keeps of `written`: containerd reads the container's output line
    by line and drops the `\\r` of a `\\r\\n` (docs/decisions/0144), so on the kubelet node a
    program's `\\r\\n` comes back `\\n`; kubesim and the node agent keep the bytes."""
    if getattr(cluster, "node", None) == "kubelet":
        return written.replace(b"\r\n", b"\n")
    return written


def counted_output() -> bytes:
    return b"".join(b"line %04d \x1b[1mx\x1b[0m\r\n" % i for i in range(400)) + b"tail"


@pytest.mark.kubesim_only(CLIENT_SIDE_LOG_DROP)
@pytest.mark.smoke("dropped stream")
def test_log_streams_dropped_twice_lose_and_repeat_nothing(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        running = squarepeg.start("run", "--name", "drops", *SH, COUNTED,
                                  stdout=stdout, stderr=stderr)

    def retries() -> int:
        return err.read_text().count("will retry")

    def written() -> int:
        return out.stat().st_size

    wait_until(lambda: written() > 0, 30, "the first output")
    kubesim.ctl("drop-logs", "--after-bytes", "500")  # cuts mid-line
    wait_until(lambda: retries() == 1, 30, "the first drop")
    seen = written()
    wait_until(lambda: written() > seen + 200, 30, "output after the reconnect")
    kubesim.ctl("drop-logs")
    wait_until(lambda: retries() == 2, 30, "the second drop")
    done = squarepeg.finish(running)
    assert done.code == 0, err.read_text()
    assert out.read_bytes() == counted_output()


def test_an_api_server_restart_mid_run_keeps_output_and_code(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    script = COUNTED + "; exit 9"
    running = squarepeg.start("run", "--name", "restarts", *SH, script)
    wait_until(lambda: pod_phase(kubesim, namespace, "restarts") == "Running", 30, "Running")
    kubesim.ctl("restart", "--down", "2")
    done = squarepeg.finish(running)
    assert done.code == 9, done.stderr
    assert done.stdout == as_logged(kubesim, counted_output()), done.stdout[-200:]


def test_keep_leaves_the_pod_and_says_how_to_inspect_it(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    done = squarepeg("run", "--keep", "--name", "kept", *SH, "echo kept; exit 2")
    try:
        assert done.code == 2, done.stderr
        assert names(kubesim, namespace) == ["pod/kept"]
        assert done.has_line("kubectl describe pod kept", f"--namespace={namespace}"), done.lines
        assert done.has_line("kubectl logs kept -c main"), done.lines
        labels = yaml.safe_load(
            kubesim.kubectl("get", "pod", "kept", "-n", namespace, "-o", "yaml").stdout
        )["metadata"]["labels"]
        assert labels["squarepeg.io/keep"] == "true"
    finally:
        kubesim.kubectl("delete", "pod", "kept", "-n", namespace, "--wait=false")


def test_nothing_is_left_after_a_run_in_either_mode(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    for mode in ("pod", "job"):
        done = squarepeg("run", "--mode", mode, "alpine", "true")
        assert done.code == 0, done.stderr
    wait_until(lambda: names(kubesim, namespace) == [], 20, "the namespace to be empty")


def test_an_explicit_context_that_does_not_exist_never_falls_back(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    serviceaccount = in_cluster_dir(kubesim, tmp_path, namespace)
    done = squarepeg(
        "run", "--context", "nope", "alpine", "true",
        env={"SQUAREPEG_SERVICEACCOUNT_DIR": str(serviceaccount),
             **in_cluster_env(kubesim)},
    )
    assert done.code == 125
    assert done.has_line("error:", "--context nope"), done.lines
    assert not done.has_line("in-cluster")
    assert names(kubesim, namespace) == []


def in_cluster_dir(kubesim: Any, tmp_path: Path, namespace: str) -> Path:
    """A service account folder as a pod would have it: token, CA, namespace."""
    config = yaml.safe_load(Path(kubesim.kubeconfig).read_text())
    directory = tmp_path / "serviceaccount"
    directory.mkdir()
    (directory / "token").write_text(kubesim.token)
    ca = config["clusters"][0]["cluster"]["certificate-authority-data"]
    (directory / "ca.crt").write_bytes(base64.b64decode(ca))
    (directory / "namespace").write_text(namespace)
    return directory


def in_cluster_env(kubesim: Any) -> dict[str, str]:
    host_port = str(kubesim.url).removeprefix("https://")
    host, _, port = host_port.rpartition(":")
    return {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}


def test_in_cluster_fallback_when_there_is_no_kubeconfig(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    serviceaccount = in_cluster_dir(kubesim, tmp_path, namespace)
    done = squarepeg(
        "run", *SH, "echo inside; exit 6",
        namespaced=False,
        env={
            "KUBECONFIG": "",  # unset, as in a pod; HOME has no ~/.kube/config
            "HOME": str(tmp_path),
            "SQUAREPEG_SERVICEACCOUNT_DIR": str(serviceaccount),
            **in_cluster_env(kubesim),
        },
    )
    assert done.code == 6, done.stderr
    assert done.stdout == b"inside\n"
    assert done.has_line("in-cluster", namespace), done.lines
