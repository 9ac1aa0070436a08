"""The node's log files through the API server's node proxy (nodelogs.py, logbook.py):
`kubectl get --raw /api/v1/nodes/NODE/proxy/logs/pods/NS_POD_UID/CONTAINER/[FILE]` against
an in-process kubesim with its cluster half. Go FileServer's listing, redirect and 404; a
file's CRI entries against the log API's lines and timestamps; rotated files' names, gzip
and the five-file cap; the RBAC check; the files going with the pod; and the scenario's
late first read that loses a head to a rotated file. The naming and content rules that
depend on exact times are also checked on a LogBook alone, with timestamps of the test's.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import wait_until
from tests.kubesim.cluster_testkit import live_groups
from tests.kubesim.inprocess import InProcess, running
from tests.kubesim.logbook import LogBook

NODE = "kubesim-node"
WAIT_SECONDS = 30.0
PLAIN: dict[str, Any] = {
    "options": {"crash_backoff_seconds": 0.3},
    "tokens": {
        # May do what a run needs, but not read the node's files.
        "carol-token": {"user": "carol", "rules": [
            {"verbs": ["*"], "resources": ["pods", "pods/log"]}]},
        # May read the node's files and nothing else.
        "nora-token": {"user": "nora", "rules": [
            {"verbs": ["get"], "resources": ["nodes/proxy"]}]},
    },
}
ROTATING: dict[str, Any] = {"options": {"log_rotate_bytes": 1, "log_rotate_seconds": 0}}
DELAY = 2.0
HEAD_ROTATED: dict[str, Any] = {"options": {"log_rotate_bytes": 1, "log_rotate_seconds": 0,
                                            "log_first_read_delay_seconds": DELAY}}
ENTRY = re.compile(rb"(\S+) (stdout|stderr) ([FP]) (.*)", re.DOTALL)
# Go's RFC3339Nano: no trailing zero in the fraction, no fraction at all when it is zero.
GO_NANO = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z")
ROTATED = re.compile(r"0\.log\.(\d{8}-\d{6})(\.gz)?")


# --- helpers --------------------------------------------------------------------------------


@contextlib.contextmanager
def simulator(workdir: Path, scenario: dict[str, Any]) -> Iterator[InProcess]:
    """An in-process kubesim with its cluster half; fails if a container process outlives
    it."""
    with running(workdir, scenario, with_cluster=True) as k:
        try:
            yield k
        finally:
            started = set(k.sim.cluster.kubelet.registry.started)
    if started:
        wait_until(lambda: not live_groups(started), 10, "no container process left")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    with simulator(tmp_path_factory.mktemp("plain"), PLAIN) as k:
        yield k


@pytest.fixture(scope="module")
def rotating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    with simulator(tmp_path_factory.mktemp("rotating"), ROTATING) as k:
        yield k


def pod(name: str, command: list[str], *, containers: tuple[str, ...] = ("main",),
        image: str = "alpine", restart: str = "Never") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": restart, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": c, "image": image, "command": command}
                                    for c in containers]}}


def ok(done: subprocess.CompletedProcess[bytes]) -> bytes:
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


def create(k: InProcess, obj: dict[str, Any]) -> None:
    ok(k.kubectl("create", "-f", "-", input=json.dumps(obj).encode()))


def stored(k: InProcess, name: str) -> dict[str, Any] | None:
    found = k.sim.store.get_raw("pods", "default", name)
    return json.loads(json.dumps(found)) if found is not None else None


def wait_phase(k: InProcess, name: str, phase: str) -> dict[str, Any]:
    def reached() -> dict[str, Any]:
        found = stored(k, name) or {}
        return found if (found.get("status") or {}).get("phase") == phase else {}
    return wait_until(reached, WAIT_SECONDS, f"pod {name} to be {phase}")


def delete(k: InProcess, name: str) -> None:
    k.request("DELETE", f"/api/v1/namespaces/default/pods/{name}?gracePeriodSeconds=0")
    wait_until(lambda: stored(k, name) is None, WAIT_SECONDS, f"pod {name} to be gone")


def directory(obj: dict[str, Any], rest: str = "") -> str:
    meta = obj["metadata"]
    return (f"/api/v1/nodes/{obj['spec']['nodeName']}/proxy/logs/pods/"
            f"{meta['namespace']}_{meta['name']}_{meta['uid']}/{rest}")


def listing(*names: str) -> bytes:
    """What Go's FileServer answers for a directory holding `names` (plain ones)."""
    lines = [f'<a href="{n}">{n}</a>\n' for n in names]
    return ('<!doctype html>\n<meta name="viewport" content="width=device-width">\n<pre>\n'
            + "".join(lines) + "</pre>\n").encode()


def names_in(page: bytes) -> list[str]:
    return re.findall(r'<a href="([^"]*)">', page.decode())


def entries(data: bytes) -> list[tuple[bytes, str, str, bytes]]:
    """A CRI log file's entries: (timestamp, stream, tag, content)."""
    assert data.endswith(b"\n") or not data, data[-100:]
    found = []
    for line in data.split(b"\n")[:-1]:
        match = ENTRY.fullmatch(line)
        assert match is not None, line[:200]
        found.append((match.group(1), match.group(2).decode(), match.group(3).decode(),
                      match.group(4)))
    return found


def log_api_stamp(stamp: bytes) -> bytes:
    """A file's timestamp as the log API writes the same instant: 9 fractional digits (so
    two compare as text as they do in time)."""
    head, _, fraction = stamp[:-1].partition(b".")
    return head + b"." + fraction.ljust(9, b"0") + b"Z"


def as_log_api(data: bytes) -> bytes:
    """What `kubectl logs --timestamps` shows of a CRI file: each line once, the stamp of
    the entry it begins with in front (a `P` entry's line goes on in the next entry)."""
    out = []
    at_line_start = True
    for stamp, _stream, tag, content in entries(data):
        if at_line_start:
            out.append(log_api_stamp(stamp) + b" ")
        out.append(content + (b"\n" if tag == "F" else b""))
        at_line_start = tag == "F"
    return b"".join(out)


def second_of(stamp: bytes) -> int:
    text = stamp.decode()[:19]
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=timezone.utc).timestamp())


def name_second(name: str) -> int:
    match = ROTATED.fullmatch(name)
    assert match is not None, name
    return int(datetime.strptime(match.group(1), "%Y%m%d-%H%M%S").replace(
        tzinfo=timezone.utc).timestamp())


def read_file(k: InProcess, path: str) -> bytes:
    data = ok(k.kubectl("get", "--raw", path))
    return gzip.decompress(data) if path.endswith(".gz") else data


# --- the listing ------------------------------------------------------------------------------


def test_directories_are_listed_as_go_fileserver_lists_them(plain: InProcess) -> None:
    create(plain, pod("lister", ["sh", "-c", "echo hi"], containers=("main", "side")))
    obj = wait_phase(plain, "lister", "Succeeded")
    uid_dir = f"default_lister_{obj['metadata']['uid']}/"

    code, headers, body = plain.request("GET", f"/api/v1/nodes/{NODE}/proxy/logs/pods/")
    assert (code, headers["Content-Type"]) == (200, "text/html; charset=utf-8"), body
    assert f'<a href="{uid_dir}">{uid_dir}</a>\n'.encode() in body
    assert body.startswith(listing()[:-len("</pre>\n")]) and body.endswith(b"</pre>\n")

    assert ok(plain.kubectl("get", "--raw", directory(obj))) == listing("main/", "side/")
    code, headers, body = plain.request("GET", directory(obj, "main/"))
    assert (code, headers["Content-Type"]) == (200, "text/html; charset=utf-8")
    assert body == listing("0.log")
    # Go's FileServer sends a directory asked without its slash to the path with it, and a
    # file asked with one to the path without.
    code, headers, body = plain.request("GET", directory(obj, "main"))
    assert (code, headers.get("Location"), body) == (301, "main/", b"")
    code, headers, _ = plain.request("GET", directory(obj, "main/0.log/"))
    assert (code, headers.get("Location")) == (301, "../0.log")
    assert ok(plain.kubectl("get", "--raw", directory(obj, "side"))) == listing("0.log")
    delete(plain, "lister")


def test_a_file_holds_the_log_apis_lines_and_timestamps_as_cri_entries(
        plain: InProcess) -> None:
    script = (
        "import sys, time\n"
        "def out(stream, data):\n"
        "    stream.buffer.write(data); stream.buffer.flush(); time.sleep(0.2)\n"
        "out(sys.stdout, b'first line\\n')\n"
        "out(sys.stderr, b'to stderr\\n')\n"
        "out(sys.stdout, b'L' * 40000 + b'\\n')\n"  # longer than 16 KiB: P, P, F
        "out(sys.stdout, b'no newline at exit')\n"
    )
    create(plain, pod("cri", ["python3", "-c", script], image="python"))
    obj = wait_phase(plain, "cri", "Succeeded")
    assert names_in(ok(plain.kubectl("get", "--raw", directory(obj, "main/")))) == ["0.log"]
    code, headers, data = plain.request("GET", directory(obj, "main/0.log"))
    assert (code, headers["Content-Type"]) == (200, "text/plain; charset=utf-8")
    assert ok(plain.kubectl("get", "--raw", directory(obj, "main/0.log"))) == data

    found = entries(data)
    assert [(stream, tag) for _, stream, tag, _ in found] == [
        ("stdout", "F"), ("stderr", "F"), ("stdout", "P"), ("stdout", "P"), ("stdout", "F"),
        ("stdout", "P")]
    assert [content for *_, content in found] == [
        b"first line", b"to stderr", b"L" * 16384, b"L" * 16384, b"L" * 7232,
        b"no newline at exit"]
    assert all(GO_NANO.fullmatch(stamp) for stamp, *_ in found), found
    # The log API's lines, each with the same instant to the nanosecond.
    served = ok(plain.kubectl("logs", "cri", "--timestamps"))
    assert as_log_api(data) == served
    delete(plain, "cri")


def test_a_restarted_containers_file_is_numbered_by_its_restart_count(
        plain: InProcess, tmp_path: Path) -> None:
    marker = tmp_path / "ran-once"
    script = (f"if [ -e {marker} ]; then echo second; sleep 60; "
              f"else touch {marker}; echo first; exit 1; fi")
    create(plain, pod("again", ["sh", "-c", script], restart="OnFailure"))

    def restarted_and_written() -> dict[str, Any]:
        obj = stored(plain, "again") or {}
        statuses = (obj.get("status") or {}).get("containerStatuses") or [{}]
        if statuses[0].get("restartCount") != 1:
            return {}
        return obj if plain.sim.logbook.has_records("default", "again", "main") else {}

    obj = wait_until(restarted_and_written, WAIT_SECONDS, "the container's second run")
    assert ok(plain.kubectl("get", "--raw", directory(obj, "main/"))) == listing("1.log")
    assert [content for *_, content in entries(read_file(plain, directory(obj, "main/1.log")))
            ] == [b"second"]
    delete(plain, "again")


# --- who may read them, and for how long ------------------------------------------------------


def test_reading_the_files_needs_get_on_nodes_proxy(plain: InProcess) -> None:
    create(plain, pod("guarded", ["sh", "-c", "echo secret"]))
    obj = wait_phase(plain, "guarded", "Succeeded")
    path = directory(obj, "main/0.log")
    refused = plain.kubectl("--context", "kubesim-carol", "get", "--raw", path)
    assert (refused.returncode, refused.stdout) == (1, b"")
    assert refused.stderr.decode() == (
        f'Error from server (Forbidden): nodes "{NODE}" is forbidden: User "carol" cannot get '
        'resource "nodes/proxy" in API group "" at the cluster scope\n')
    allowed = ok(plain.kubectl("--context", "kubesim-nora", "get", "--raw", path))
    assert [content for *_, content in entries(allowed)] == [b"secret"]
    missing = plain.kubectl("get", "--raw", "/api/v1/nodes/no-such-node/proxy/logs/pods/")
    assert (missing.returncode, missing.stderr) == (
        1, b'Error from server (NotFound): nodes "no-such-node" not found\n')
    delete(plain, "guarded")


def test_the_files_stay_after_the_container_ended_and_go_with_the_pod(
        plain: InProcess) -> None:
    create(plain, pod("brief", ["sh", "-c", "echo bye"]))
    obj = wait_phase(plain, "brief", "Succeeded")
    assert [c for *_, c in entries(read_file(plain, directory(obj, "main/0.log")))] == [b"bye"]
    not_found = (404, b"404 page not found\n")
    uid = obj["metadata"]["uid"]
    other_uid = dict(obj, metadata={**obj["metadata"], "uid": uid[:-4] + "0000"})
    for wrong in (directory(other_uid, "main/"), directory(obj, "nope/"),
                  directory(obj, "main/1.log"), f"/api/v1/nodes/{NODE}/proxy/logs/messages"):
        code, headers, body = plain.request("GET", wrong)
        assert (code, body) == not_found, wrong
        assert headers["Content-Type"] == "text/plain; charset=utf-8"

    delete(plain, "brief")
    for gone in (directory(obj), directory(obj, "main/"), directory(obj, "main/0.log")):
        code, _, body = plain.request("GET", gone)
        assert (code, body) == not_found, gone
    done = plain.kubectl("get", "--raw", directory(obj, "main/0.log"))
    assert (done.returncode, done.stderr) == (
        1, b"Error from server (NotFound): the server could not find the requested resource\n")


# --- rotation ---------------------------------------------------------------------------------


def test_rotated_files_are_named_by_time_gzipped_but_the_newest_and_five_at_most(
        rotating: InProcess) -> None:
    lines = 8
    # Every write is a record of its own (0.3 s apart), each rotating the file before it.
    create(rotating, pod("rotor", ["sh", "-c",
                                   f"for i in $(seq 1 {lines}); do echo line$i; sleep 0.3; done"]))
    obj = wait_phase(rotating, "rotor", "Succeeded")
    assert rotating.sim.logbook.rotation_count("default", "rotor", "main") >= 5

    page = ok(rotating.kubectl("get", "--raw", directory(obj, "main/")))
    names = names_in(page)
    assert page == listing(*names) and names == sorted(names)
    assert len(names) == 5 and names[0] == "0.log", names  # the cap: the oldest were deleted
    rotated = names[1:]
    assert all(ROTATED.fullmatch(n) for n in rotated), rotated
    assert [n.endswith(".gz") for n in rotated] == [True, True, True, False]

    code, headers, packed = rotating.request("GET", directory(obj, "main/" + rotated[0]))
    assert (code, headers["Content-Type"], packed[:2]) == (200, "application/x-gzip",
                                                           b"\x1f\x8b")
    files = [entries(read_file(rotating, directory(obj, "main/" + n))) for n in names]
    current, olds = files[0], files[1:]
    # Together they are the output's last lines, in order, the current file last.
    contents = [content for file in [*olds, current] for *_, content in file]
    assert contents == [b"line%d" % i for i in range(lines - len(contents) + 1, lines + 1)]
    # A rotated file is named after its rotation: the second the next file's first entry
    # came, unless an earlier rotation took that name (then the next free second).
    for index, name in enumerate(rotated):
        following = [*olds, current][index + 1][0][0]
        expected = second_of(following)
        if index:
            expected = max(expected, name_second(rotated[index - 1]) + 1)
            assert name_second(name) == expected, (name, following)
        else:
            assert name_second(name) >= expected, (name, following)
        assert name_second(name) >= second_of(olds[index][-1][0])
    # The current file is what the log API serves a new reader.
    assert as_log_api(read_file(rotating, directory(obj, "main/0.log"))) == ok(
        rotating.kubectl("logs", "rotor", "--timestamps"))
    delete(rotating, "rotor")


def test_a_rotated_file_holds_what_the_log_api_served_while_it_was_current() -> None:
    book = LogBook()
    book.configure({"log_rotate_bytes": 1, "log_rotate_seconds": 0})
    key = ("ns", "p", "main")
    writes = [  # (content, timestamp, stream)
        (b"one\ntwo\n", "2026-12-06T04:01:15.100000000Z", "stdout"),
        (b"half a ", "2026-12-06T04:01:16.000000000Z", "stderr"),
        (b"line\n", "2026-12-06T04:01:16.250000001Z", "stderr"),
        (b"later\n", "2026-12-06T04:01:16.900000000Z", "stdout"),
        (b"much later\n", "2026-12-06T04:01:20.500000000Z", "stdout"),
    ]
    served = []
    for data, stamp, stream in writes:
        book.append(*key, data, timestamp=stamp, stream=stream)
        served.append(b"".join(book.read(*key, timestamps=True)))
    # Each write rotated the file before it, named after the write's second; two in 16 s:
    # the second one takes 17 s.
    assert book.node_files(*key) == [
        "0.log", "0.log.20261206-040116.gz", "0.log.20261206-040117.gz",
        "0.log.20261206-040118.gz", "0.log.20261206-040120"]
    files = book.node_files(*key) or []
    for name, was_served in zip(files[1:], served, strict=False):
        data = book.node_file(*key, name) or b""
        text = gzip.decompress(data) if name.endswith(".gz") else data
        assert as_log_api(text) == was_served, name
    assert book.node_file(*key, "0.log") == b"2026-12-06T04:01:20.5Z stdout F much later\n"
    assert gzip.decompress(book.node_file(*key, files[1]) or b"") == (
        b"2026-12-06T04:01:15.1Z stdout F one\n2026-12-06T04:01:15.1Z stdout F two\n")
    assert gzip.decompress(book.node_file(*key, files[2]) or b"") == (
        b"2026-12-06T04:01:16Z stderr P half a \n")
    # The next file begins with the rest of that line, under its own timestamp.
    assert gzip.decompress(book.node_file(*key, files[3]) or b"") == (
        b"2026-12-06T04:01:16.250000001Z stderr F line\n")


def test_only_the_newest_four_rotated_files_are_kept() -> None:
    book = LogBook()
    book.configure({"log_rotate_bytes": 1, "log_rotate_seconds": 0})
    for second in range(10, 17):
        book.append("ns", "p", "main", b"at %d\n" % second,
                    timestamp=f"2026-12-06T04:01:{second}.5Z")
    names = book.node_files("ns", "p", "main")
    assert names == ["0.log", "0.log.20261206-040113.gz", "0.log.20261206-040114.gz",
                     "0.log.20261206-040115.gz", "0.log.20261206-040116"]
    assert book.node_file("ns", "p", "main", "0.log.20261206-040112.gz") is None
    assert book.node_file("ns", "p", "main", "0.log.20261206-040115") is None  # it is .gz now
    assert book.node_file("ns", "p", "main", "0.log.20261206-040116") == (
        b"2026-12-06T04:01:15.5Z stdout F at 15\n")
    book.remove("ns", "p")
    assert book.node_files("ns", "p", "main") is None


# --- the late first read ----------------------------------------------------------------------


def test_a_late_first_read_finds_the_head_rotated_away(tmp_path: Path) -> None:
    """log_first_read_delay_seconds with a rotation at every write: `head` is in a rotated
    file before either container's first request reads (a follow for `side`); later
    requests are served at once."""
    script = "echo head; sleep 1; echo tail; sleep 2"
    with simulator(tmp_path, HEAD_ROTATED) as k:
        create(k, pod("late", ["sh", "-c", script], containers=("main", "side")))
        obj = wait_phase(k, "late", "Running")
        follower = k.start_kubectl("logs", "-f", "late", "-c", "side")
        try:
            began = time.monotonic()
            first = ok(k.kubectl("logs", "late", "-c", "main", "--timestamps"))
            waited = time.monotonic() - began
            followed, _ = follower.communicate(timeout=WAIT_SECONDS)
        finally:
            follower.kill()
            follower.wait()
        assert waited >= DELAY, waited
        assert re.fullmatch(rb"\S+Z tail\n", first), first
        assert (follower.returncode, followed) == (0, b"tail\n")

        began = time.monotonic()
        code, _, again = k.request(
            "GET", "/api/v1/namespaces/default/pods/late/log?container=main&timestamps=true")
        assert (code, again) == (200, first)
        assert time.monotonic() - began < DELAY

        for container in ("main", "side"):
            names = names_in(ok(k.kubectl("get", "--raw", directory(obj, container + "/"))))
            assert len(names) == 2 and names[0] == "0.log", names
            assert ROTATED.fullmatch(names[1]) and not names[1].endswith(".gz"), names
            head = read_file(k, directory(obj, f"{container}/{names[1]}"))
            assert re.fullmatch(rb"\S+Z stdout F head\n", head), head
            tail = read_file(k, directory(obj, f"{container}/0.log"))
            assert re.fullmatch(rb"\S+Z stdout F tail\n", tail), tail
        # The head was written before the first line the log API gave: the loss is visible.
        assert log_api_stamp(head.split()[0]) < log_api_stamp(tail.split()[0])
        assert as_log_api(read_file(k, directory(obj, "main/0.log"))) == first
        delete(k, "late")
