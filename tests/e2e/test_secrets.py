"""What a user's secrets meet: values given with `-e` and `--env-file` appear in the manifest
where the user asked to see it (`--dry-run`) and nowhere in squarepeg's own stderr (status
lines, warnings, errors, hints); and no process's argv ever holds the manifest or a secret
(read from /proc/*/cmdline while runs are in flight: kubectl gets the manifest on stdin)."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

from tests.e2e.conftest import Squarepeg, wait_until
from tests.helpers import processes

SCAN_SECONDS = 0.01


def _secret() -> str:
    return f"s3cr3t-{uuid.uuid4().hex}"


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "squarepeg.yaml"
    path.write_text(text)
    return str(path)


def test_env_values_reach_the_manifest_and_never_squarepegs_stderr(
        squarepeg: Squarepeg, tmp_path: Path) -> None:
    flag, in_file, bad = _secret(), _secret(), _secret()
    env_file = tmp_path / "vars.env"
    env_file.write_text(f"FROM_FILE={in_file}\n")
    # A config patch that the -e flag overrides: one warning line, naming the entry.
    config = _config(tmp_path, "kubernetes:\n  patches:\n  - {op: add, path: "
                               "/spec/containers/0/env/0/value, value: other}\n")
    given = ("-e", f"TOKEN={flag}", "--env-file", str(env_file), "--config", config)
    runs = {
        "dry run": squarepeg("run", "--dry-run", *given, "alpine", "true"),
        "server dry run": squarepeg("run", "--dry-run-server", *given, "alpine", "true"),
        "a run": squarepeg("run", *given, "alpine", "sh", "-c", "exit 3"),
        "an image that does not exist": squarepeg("run", "--timeout", "20", *given,
                                                  "no-such-image-zz", "true"),
        "a bad -e after a good one": squarepeg("run", "--dry-run", *given, "-e",
                                               f"BAD NAME={bad}", "alpine"),
    }
    assert runs["dry run"].code == 0
    manifest = runs["dry run"].stdout.decode()
    assert flag in manifest and in_file in manifest  # where the user asked to see them
    assert runs["a run"].code == 3
    assert runs["an image that does not exist"].code == 125
    assert runs["a bad -e after a good one"].code == 125
    assert runs["a bad -e after a good one"].has_line("BAD NAME=...")
    assert any("warning" in line for line in runs["a run"].lines)  # the patch was skipped
    for what, done in runs.items():
        for secret in (flag, in_file, bad):
            assert secret not in done.stderr, f"{what}: {secret} in stderr:\n{done.stderr}"


def _argv_of_marked(mark: bytes, skip: set[int]) -> list[bytes]:
    """The argv of every process whose environment holds `mark` (what squarepeg started,
    and what those started: kubectl, the containers), but the `skip` ones."""
    # A child between fork and exec still shows squarepeg's own argv.
    return [argv for pid, (environ, argv) in processes("environ", "cmdline")
            if pid not in skip and mark in environ.split(b"\0")
            and b"kubectl-squarepeg\0run\0" not in argv]


def test_no_process_argv_holds_the_manifest_or_a_secret(
        squarepeg: Squarepeg, tmp_path: Path) -> None:
    """The secrets are in squarepeg's own argv (the user typed them there); they and the
    manifest must be in no argv squarepeg makes."""
    secret, mark = _secret(), f"SECRETS_TEST_MARK={uuid.uuid4().hex}"
    env_file = tmp_path / "vars.env"
    env_file.write_text(f"FILE_SECRET={secret}-file\n")
    seen: dict[str, Any] = {"leaks": [], "creates": 0, "scans": 0}
    own: set[int] = set()
    stop = threading.Event()

    def scan() -> None:
        while not stop.is_set():
            for line in _argv_of_marked(mark.encode(), own):
                if b"kubectl" in line and b"create" in line:
                    seen["creates"] += 1
                if secret.encode() in line or b"apiVersion" in line or b'"containers"' in line:
                    seen["leaks"].append(line.replace(b"\0", b" ")[:300])
            seen["scans"] += 1
            stop.wait(SCAN_SECONDS)

    scanner = threading.Thread(target=scan, daemon=True)
    name, value = mark.split("=")
    try:
        started = []
        for i in range(4):
            process = squarepeg.start("run", "-e", f"FLAG_SECRET={secret}", "--env-file",
                                      str(env_file), "alpine", "sh", "-c",
                                      f"sleep 1; exit {i}", env={name: value})
            own.add(process.pid)
            started.append(process)
        scanner.start()
        finished = [squarepeg.finish(process) for process in started]
    finally:
        stop.set()
        if scanner.is_alive():
            scanner.join(10)
    assert [done.code for done in finished] == [0, 1, 2, 3]
    wait_until(lambda: seen["scans"] > 10, 5, "the scanner to have looked")
    assert seen["creates"] > 0, "the scanner never saw a `kubectl create` in flight"
    assert seen["leaks"] == [], seen["leaks"]
    for done in finished:
        assert secret not in done.stderr
