"""Small helpers shared by the tests: deadline polling instead of sleeps (`wait_until`), the
one factory of pod manifests a test creates by hand (`pod_manifest`), and stopping a
squarepeg a test left running."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

T = TypeVar("T")

POLL_SECONDS = 0.05
# squarepeg stopped by a signal exits once its delete is accepted (decision 0140).
STOP_SECONDS = 10.0


def wait_until(condition: Callable[[], T], seconds: float, what: str,
               interval: float = POLL_SECONDS) -> T:
    """Poll `condition` until it returns something true and return that; fail with
    `timed out after Ns waiting for WHAT` once `seconds` have passed."""
    deadline = time.monotonic() + seconds
    pause = threading.Event()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what}")
        pause.wait(interval)


def pod_manifest(name: str, command: list[str] | None = None, *, image: str = "alpine",
                 args: list[str] | None = None, labels: dict[str, str] | None = None,
                 metadata: dict[str, Any] | None = None, restart_policy: str | None = "Never",
                 grace: int | None = None, **spec: Any) -> dict[str, Any]:
    """A pod as a test hands it to `kubectl create`: one container `main` of `image`, with
    `command` and `args` where given; `restartPolicy` Never unless `restart_policy` says
    otherwise (None: the API server's default), `terminationGracePeriodSeconds` where
    `grace` is given; `metadata` adds to (or replaces) the name and labels, `spec` to the
    spec. Only what is given is written, so the server defaults the rest as it would."""
    container: dict[str, Any] = {"name": "main", "image": image}
    if command is not None:
        container["command"] = command
    if args is not None:
        container["args"] = args
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    meta.update(metadata or {})
    body: dict[str, Any] = {}
    if restart_policy is not None:
        body["restartPolicy"] = restart_policy
    if grace is not None:
        body["terminationGracePeriodSeconds"] = grace
    body["containers"] = [container]
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body}


class ShellTerminal(Protocol):
    """A shell on a pty the test holds: what it showed, what to type, waiting for text."""

    output: bytes

    def type(self, text: bytes) -> None: ...
    def wait_for(self, text: bytes, seconds: float = ...) -> None: ...


def wait_for_terminal_size(term: ShellTerminal, rows: int, columns: int,
                           seconds: float = 30) -> None:
    """Ask the shell on `term` for its terminal's size (`stty size`) until it answers
    `rows columns`: a resize travels as a signal, so the first answers may still be the old
    size. Each question ends with a marker the shell computes, so its answer is complete
    (and no echo of what was typed) when the marker shows."""
    asked = [0]

    def answered() -> bool:
        asked[0] += 1
        term.type(b"stty size; echo asked $((%d+1000))\r" % asked[0])
        term.wait_for(b"asked %d\r\n" % (asked[0] + 1000))
        return b"%d %d\r\n" % (rows, columns) in term.output

    wait_until(answered, seconds, f"the terminal's size to become {rows}x{columns}")


def json_stream(text: str) -> list[Any]:
    """Concatenated JSON documents, as `kubectl get -w -o json` prints them."""
    decoder, i = json.JSONDecoder(), 0
    out: list[Any] = []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        value, i = decoder.raw_decode(text, i)
        out.append(value)


def processes(*files: str) -> Iterator[tuple[int, tuple[bytes, ...]]]:
    """(pid, the contents of its /proc/PID/FILE for each of `files`: `cmdline`, `environ`,
    `stat`...) of every process now running whose files this user may read; one that ends
    meanwhile or is another user's is passed over. For the tests that look for what a run
    left behind (a kubectl, a port-forward) or what it showed (an argv)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            contents = tuple((entry / name).read_bytes() for name in files)
        except OSError:
            continue
        yield int(entry.name), contents


def kill_leftover(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL a helper process a test started (a kubectl watch or follow, a script) if it
    still runs, and reap it, its pipes drained: the `finally` that keeps a failed test from
    leaving it behind. A squarepeg wants `stop_process`, which lets it delete its pod."""
    if process.poll() is None:
        process.kill()
        process.communicate()


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """End a squarepeg a test left running (it failed before its end): SIGTERM first, so
    that squarepeg deletes its pod as a user's `kill` would have it do, and only then
    SIGKILL, which would leave the pod to its grace period and the next test's teardown."""
    if process.poll() is None:
        process.terminate()
        try:
            process.communicate(timeout=STOP_SECONDS)  # its pipes, if any, drained meanwhile
            return
        except subprocess.TimeoutExpired:
            process.kill()
    process.communicate()
