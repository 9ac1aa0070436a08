"""`attach` to a detached run (issue 35; decisions 0161, 0391) through the installed command,
the real kubectl and the cluster's `pods/attach`: piped stdin reaches a `run -d -i`
container, a detach (Ctrl-C without a terminal, Ctrl-P Ctrl-Q with one) leaves it running
with its stdin still open for the next attach, `-dit` in a pty with a resize, the
container's end is the attach's exit code, and the bad names are one line and exit 125."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Kubesim
from tests.e2e.conftest import BIN, Finished, Squarepeg, isolated_env, names
from tests.e2e.test_interactive import Terminal, attach_needed, attach_served
from tests.helpers import stop_process, wait_for_terminal_size, wait_until

SECONDS = 90
__all__ = ["attach_served"]  # the fixture behind attach_needed, imported to be found
TWO_LINES = 'read a; echo "got $a"; read b; echo "got $b"; exit 4'


@pytest.fixture(autouse=True)
def nothing_left(kubesim: Kubesim, namespace: str) -> Iterator[None]:
    yield
    if names(kubesim, namespace):
        kubesim.kubectl("delete", "pods,jobs", "--all", "-n", namespace, "--wait=false",
                        "--cascade=background")
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the leftovers to be gone")


def _status(squarepeg: Squarepeg, name: str) -> str:
    import json

    done = squarepeg("ps", "-a", "--format", "json")
    assert done.code == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.decode().splitlines()]
    return next((str(row["Status"]) for row in rows if row["Names"] == name), "")


def _fed(squarepeg: Squarepeg, data: bytes, *args: str) -> Finished:
    process = squarepeg.start(*args, stdin=subprocess.PIPE)
    out, err = process.communicate(input=data, timeout=SECONDS)
    return Finished(process.returncode, out, err.decode("utf-8", "replace"))


def _logs(squarepeg: Squarepeg, name: str) -> bytes:
    return squarepeg("logs", name).stdout


@attach_needed
def test_attach_to_run_d_i_reaches_stdin_and_a_detach_leaves_it_running(
        squarepeg: Squarepeg) -> None:
    started = squarepeg("run", "-d", "-i", "--name", "att-i", "alpine", "sh", "-c", TWO_LINES)
    assert (started.code, started.stdout) == (0, b"att-i\n"), started.stderr
    assert "attach att-i" in started.stderr  # the way back is named

    first = squarepeg.start("attach", "att-i", stdin=subprocess.PIPE)
    try:
        assert first.stdin is not None
        first.stdin.write(b"one\n")
        first.stdin.close()  # the end of our input is not the end of the container's
        first.stdin = None
        wait_until(lambda: b"got one\n" in _logs(squarepeg, "att-i"), SECONDS,
                   "the container to read the first line")
        assert first.poll() is None  # still attached: the container runs on
        first.send_signal(signal.SIGINT)  # without a terminal, Ctrl-C detaches
        out, err = first.communicate(timeout=SECONDS)
    finally:
        stop_process(first)
    assert first.returncode == 0, err
    assert b"got one\n" in out  # the attach shows what the container wrote after it joined
    assert b"detached from pod/att-i" in err
    assert _status(squarepeg, "att-i").startswith("Up ")

    # Its stdin is still open (not stdinOnce): a second attach feeds the next line, and
    # the container's end is the attach's exit code, as docker's.
    second = _fed(squarepeg, b"two\n", "attach", "att-i")
    assert second.code == 4, second.stderr
    assert second.stdout == b"got two\n"
    assert _logs(squarepeg, "att-i") == b"got one\ngot two\n"
    assert _status(squarepeg, "att-i").startswith("Exited (4)")
    assert squarepeg("rm", "att-i").code == 0


@attach_needed
def test_attach_dit_in_a_terminal_with_resize_and_ctrl_p_ctrl_q(
        squarepeg: Squarepeg) -> None:
    started = squarepeg("run", "-dit", "--name", "att-t", "alpine", "sh")
    assert started.code == 0, started.stderr
    terms: list[Terminal] = []
    try:
        term = Terminal(squarepeg, "attach", "att-t", rows=40, columns=100)
        terms.append(term)
        term.wait_for(b"Ctrl-P Ctrl-Q detaches")
        wait_for_terminal_size(term, 40, 100)
        term.resize(30, 120)
        wait_for_terminal_size(term, 30, 120)
        term.type(b"echo typed $((6*7)) > /tmp/mark; cat /tmp/mark\r")
        term.wait_for(b"typed 42\r\n")
        term.type(b"\x10\x11")  # docker's detach keys
        assert term.wait(SECONDS) == 0, term.output
        assert b"detached from pod/att-t" in term.output
        assert _status(squarepeg, "att-t").startswith("Up ")

        again = Terminal(squarepeg, "attach", "att-t")
        terms.append(again)
        again.wait_for(b"Ctrl-P Ctrl-Q detaches")
        # The same shell: what the first attach's command wrote is there.
        again.type(b"cat /tmp/mark; exit $((2+3))\r")
        again.wait_for(b"typed 42\r\n")
        assert again.wait(SECONDS) == 5, again.output
    finally:
        for each in terms:
            each.close()
    assert _status(squarepeg, "att-t").startswith("Exited (5)")


@attach_needed
def test_attach_to_a_terminal_run_needs_a_terminal(squarepeg: Squarepeg) -> None:
    started = squarepeg("run", "-dit", "--stop-timeout", "1", "--name", "att-nt", "alpine",
                        "sh")
    assert started.code == 0, started.stderr
    done = _fed(squarepeg, b"exit 3\n", "attach", "att-nt")
    assert done.code == 125
    [line] = done.stderr.splitlines()
    assert line.startswith("squarepeg: error: the input device is not a TTY")
    assert _status(squarepeg, "att-nt").startswith("Up ")


def test_attach_to_no_run_or_a_finished_one_is_one_line(
        squarepeg: Squarepeg, kubesim: Any, namespace: str) -> None:
    missing = squarepeg("attach", "att-none")
    assert missing.code == 125
    assert missing.stderr.splitlines() == [
        f"squarepeg: error: no squarepeg run named att-none in namespace {namespace}; "
        "`kubectl squarepeg ps -a` lists your runs (-n picks another namespace)"]
    assert squarepeg("run", "-d", "--name", "att-done", "alpine", "true").code == 0
    wait_until(lambda: _status(squarepeg, "att-done").startswith("Exited (0)"), SECONDS,
               "the run to end")
    ended = squarepeg("attach", "att-done")
    assert ended.code == 125
    [line] = ended.stderr.splitlines()
    assert line.startswith("squarepeg: error: pod/att-done is not running (Exited (0)")
    bad = squarepeg("attach", "Not_A_Name")
    assert bad.code == 125 and len(bad.stderr.splitlines()) == 1, bad.stderr


def test_attach_and_port_complete_your_run_names_and_refuse_anothers(
        squarepeg: Squarepeg, kubesim: Any, namespace: str) -> None:
    someone = {"USER": "someone-else", "LOGNAME": "someone-else"}
    assert squarepeg("run", "-d", "-i", "--stop-timeout", "1", "--name", "att-mine", "alpine",
                     "cat").code == 0
    theirs = squarepeg("run", "-d", "-i", "--stop-timeout", "1", "--name", "att-theirs",
                       "alpine", "cat", env=someone)
    assert theirs.code == 0, theirs.stderr
    for verb in ("attach", "port"):
        done = subprocess.run(
            [str(BIN / "kubectl_complete-squarepeg"), verb, "-n", namespace, "att-"],
            env=isolated_env(kubesim, squarepeg.home), capture_output=True, timeout=30,
        )
        assert done.stdout.decode().splitlines() == ["att-mine", ":4"], (verb, done)
        refused = squarepeg(verb, "att-theirs")
        assert refused.code == 125
        [line] = refused.stderr.splitlines()
        assert line.startswith(f"squarepeg: error: pod/att-theirs in namespace {namespace} is "
                               "a run of someone-else, not yours"), line
    assert squarepeg("rm", "-f", "att-mine").code == 0
    assert squarepeg("rm", "-f", "att-theirs", env=someone).code == 0
