"""`run -i`, `-t` and `-it` through the installed command, the real kubectl and kubesim's
`pods/attach`; a pty wherever a terminal is involved. After each: no pod, no kubectl."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import select
import signal
import struct
import subprocess
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Kubesim, Localkube
from tests.e2e.conftest import Finished, Squarepeg, names, wait_until
from tests.e2e.test_interrupt_e2e import (
    _make_controlling_terminal,
    kubectl_children_of,
    slow_deletes,
)
from tests.helpers import stop_process, wait_for_terminal_size

RUN_SECONDS = 120
# A container's command is PID 1, which ignores a SIGTERM it has no handler for (`cat`, a
# shell): a run deleted before its end lasts its grace period, kept short here.
STOP_TIMEOUT = ("--stop-timeout", "2")
# localkube's node agent serves the kubelet's containerLogs only; the real API server sends
# an attach to the kubelet as SPDY (its WebSocket-to-SPDY stream translator), which the agent
# does not speak. The real kubelet node (`--node kubelet`) does: there they all run.
NO_ATTACH = ("attach: localkube's node agent does not serve the kubelet's /attach (SPDY "
             "from the API server's stream translator); the kubelet node does")
_AGENT_NODES: dict[str, bool] = {}


def _agent_node(cluster: Kubesim) -> bool:
    """Whether a localkube cluster's node is the agent (kubesim's kubelet half, whose Node
    says `osImage: kubesim`) rather than the real kubelet; asked once per cluster."""
    key = str(cluster.kubeconfig)
    if key not in _AGENT_NODES:
        done = cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.osImage}")
        _AGENT_NODES[key] = done.stdout.decode().split() == ["kubesim"]
    return _AGENT_NODES[key]


@pytest.fixture
def attach_served(kubesim: Kubesim) -> None:
    if isinstance(kubesim, Localkube) and _agent_node(kubesim):
        pytest.skip(NO_ATTACH)


attach_needed = pytest.mark.usefixtures("attach_served")


def run_with_input(squarepeg: Squarepeg, data: bytes, *args: str) -> Finished:
    process = squarepeg.start("run", *args, stdin=subprocess.PIPE)
    out, err = process.communicate(input=data, timeout=RUN_SECONDS)
    return Finished(process.returncode, out, err.decode("utf-8", "replace"))


def jsonpath(sim: Kubesim, namespace: str, ref: str, path: str) -> str:
    """The field at `path` of `ref`; empty while `ref` does not exist."""
    done = sim.kubectl("get", ref, "-n", namespace, "-o", f"jsonpath={path}")
    return str(done.stdout.decode()) if done.returncode == 0 else ""


def assert_nothing_left(sim: Kubesim, namespace: str) -> None:
    """No pod or Job in the namespace, no kubectl of this simulator (within a deadline)."""
    wait_until(lambda: names(sim, namespace) == [], 30, "nothing left in the namespace")
    wait_until(lambda: not kubectl_children_of(str(sim.kubeconfig)), 10,
               "no kubectl process left")


@pytest.fixture
def nothing_left(kubesim: Kubesim, namespace: str) -> Iterator[None]:
    """After each test, on the shared simulator (tests with one of their own check it)."""
    yield
    assert_nothing_left(kubesim, namespace)


pytestmark = pytest.mark.usefixtures("nothing_left")


@attach_needed
def test_piped_lines_are_counted(squarepeg: Squarepeg) -> None:
    done = run_with_input(squarepeg, b"a\nb\nc\n", "-i", "alpine", "wc", "-l")
    assert (done.code, done.stdout.strip()) == (0, b"3"), done.stderr


@attach_needed
def test_a_megabyte_of_random_bytes_keeps_its_digest(squarepeg: Squarepeg) -> None:
    data = os.urandom(1 << 20)
    done = run_with_input(squarepeg, data, "-q", "-i", "alpine", "sha256sum")
    assert done.code == 0, done.stderr
    assert done.stdout.split()[0].decode() == hashlib.sha256(data).hexdigest()


@attach_needed
@pytest.mark.smoke("-i")
def test_cat_returns_its_input_byte_for_byte(squarepeg: Squarepeg) -> None:
    data = bytes(range(256)) * 64 + b"no newline at the end \r\x00"
    done = run_with_input(squarepeg, data, "-q", "-i", "alpine", "cat")
    assert (done.code, done.stdout) == (0, data), done.stderr


@attach_needed
def test_output_before_reading_stdin_is_not_lost(squarepeg: Squarepeg) -> None:
    done = run_with_input(squarepeg, b"last\n", "-q", "-i", "alpine", "sh", "-c",
                          "seq 3000; cat; exit 3")
    assert done.code == 3, done.stderr
    assert done.stdout == b"".join(b"%d\n" % n for n in range(1, 3001)) + b"last\n"


@attach_needed
def test_job_mode(squarepeg: Squarepeg, kubesim: Kubesim, namespace: str) -> None:
    process = squarepeg.start("run", "-q", "--mode", "job", "-i", "--name", "piped", "alpine",
                              "cat", stdin=subprocess.PIPE)
    # `cat` waits for its input: meanwhile the run is a Job whose pod holds its stdin open.
    wait_until(lambda: "job/piped" in names(kubesim, namespace), 60, "the Job")
    assert jsonpath(kubesim, namespace, "job/piped",
                    "{.spec.template.spec.containers[0].stdin}") == "true"
    out, err = process.communicate(input=b"from the job\n", timeout=RUN_SECONDS)
    assert (process.returncode, out) == (0, b"from the job\n"), err


def test_tty_alone_gives_a_terminal_and_lines_ending_in_newline(squarepeg: Squarepeg) -> None:
    # The output is the container's log, whose lines end in `\n` on containerd (it drops
    # the terminal's `\r`) and, whatever the runtime kept, from squarepeg: one promise on
    # every cluster (docs/decisions/0144-tty-line-ends.md). A `\r` inside a line stays.
    done = squarepeg("run", "-q", "-t", "alpine", "sh", "-c", "test -t 0 && test -t 1 && "
                     "echo terminal && printf '50%%\\r100%%\\n'")
    assert (done.code, done.stdout) == (0, b"terminal\n50%\r100%\n"), done.stderr


@attach_needed
def test_it_with_piped_stdin_warns_once_and_runs_as_i(squarepeg: Squarepeg) -> None:
    done = run_with_input(squarepeg, b"x\ny\n", "-it", "alpine", "sh", "-c",
                          "test -t 0 || echo no terminal; cat")
    assert (done.code, done.stdout) == (0, b"no terminal\nx\ny\n"), done.stderr
    warnings = [line for line in done.lines if "warning:" in line]
    assert len(warnings) == 1 and "not a terminal" in warnings[0], done.lines


@attach_needed
def test_a_container_that_never_reads_its_input_reports_its_own_exit_code(
        squarepeg: Squarepeg) -> None:
    # It may end before the attach connects (kubectl then fails): not a refused attach.
    done = run_with_input(squarepeg, b"never read\n" * 1000, "-i", "alpine", "sh", "-c",
                          "echo bye; exit 4")
    assert (done.code, done.stdout) == (4, b"bye\n"), done.stderr
    assert not [line for line in done.lines if "error:" in line or "warning:" in line]


@attach_needed
def test_one_ctrl_c_during_i_deletes_the_pod_and_exits_130(
        squarepeg: Squarepeg, kubesim: Kubesim, namespace: str) -> None:
    # As a terminal sends it to the whole pipeline `producer | squarepeg run -i ...`.
    process = squarepeg.start("run", "-i", "--name", "reader", *STOP_TIMEOUT, "alpine", "cat",
                              stdin=subprocess.PIPE, start_new_session=True)
    wait_until(lambda: jsonpath(kubesim, namespace, "pod/reader", "{.status.phase}")
               == "Running", 60, "the container to run")
    wait_until(lambda: len(kubectl_children_of(str(kubesim.kubeconfig))) >= 2, 30,
               "the log stream's and the attach's kubectl")
    os.killpg(process.pid, signal.SIGINT)
    # The producer lives on (it ignores SIGINT, or is a terminal): communicate() would close
    # squarepeg's stdin at once, and cat, ended by that EOF, could be seen finished before
    # the signal is handled; the pod then has nothing left to terminate and no line says so.
    process.wait(timeout=RUN_SECONDS)
    assert process.stdout and process.stderr  # stdin: closed at teardown
    out, err = process.stdout.read(), process.stderr.read()
    assert process.returncode == 130, err
    said = err.decode().splitlines()
    assert "squarepeg: warning: interrupted (SIGINT): stopping and deleting pod/reader" in said
    assert any(line.startswith("squarepeg: pod/reader is terminating") for line in said), said
    assert "again" not in err.decode() and out == b""  # no hint: it had exited at once
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")


# bob may do all a run needs but attach.
NO_ATTACH_RIGHT = {"tokens": {"bob-token": {"user": "bob", "rules": [
    {"verbs": ["*"], "resources": ["pods", "pods/log", "events", "jobs"],
     "api_groups": ["", "batch"]}]}}}


@attach_needed
def test_refused_attach_exits_125_and_leaves_nothing(
        kubesim_factory: Any, tmp_path: Path) -> None:
    sim = kubesim_factory(NO_ATTACH_RIGHT)
    runner = Squarepeg(sim, "default", tmp_path)
    try:
        process = runner.start("run", "--context", "kubesim-bob", "-i", *STOP_TIMEOUT,
                               "alpine", "cat", stdin=subprocess.PIPE)
        out, err = process.communicate(input=b"never read\n", timeout=RUN_SECONDS)
    finally:
        runner.close()
    lines = err.decode().splitlines()
    assert process.returncode == 125, lines
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1 and "you may not attach to pods" in errors[0], lines
    assert "`create` on `pods/attach`" in errors[0] and out == b""
    # The check it names points at the run's cluster, not at the current context.
    assert "`kubectl auth can-i create pods/attach --context=kubesim-bob --namespace=default`" \
        in errors[0], errors[0]
    assert_nothing_left(sim, "default")


@pytest.mark.kubesim_only(
    "refuse_upgrades is kubesim's stand-in for a proxy that refuses the connection upgrade; "
    "on localkube the option starts a cluster of the test's own with the node agent, which "
    "serves no attach at all")
def test_refused_upgrade_names_the_proxy(kubesim_factory: Any, tmp_path: Path) -> None:
    sim = kubesim_factory({"options": {"refuse_upgrades": True}})
    runner = Squarepeg(sim, "default", tmp_path)
    try:
        process = runner.start("run", "-i", *STOP_TIMEOUT, "alpine", "cat", stdin=subprocess.PIPE)
        _, err = process.communicate(input=b"x", timeout=RUN_SECONDS)
    finally:
        runner.close()
    lines = err.decode().splitlines()
    assert process.returncode == 125, lines
    assert any("upgrade" in line and "proxy" in line for line in lines), lines
    assert_nothing_left(sim, "default")


# --- -it on a terminal ----------------------------------------------------------------------


class Terminal:
    """squarepeg on a pty of its own (stdin, stdout and stderr), as in a user's shell."""

    def __init__(self, squarepeg: Squarepeg, *args: str, rows: int = 24,
                 columns: int = 80, env: dict[str, str] | None = None) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.process = squarepeg.start(
            *args, env=env, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
            preexec_fn=_make_controlling_terminal,
        )
        os.close(slave)
        self.output = b""

    def resize(self, rows: int, columns: int) -> None:
        """As a terminal window does: the new size, and SIGWINCH to its foreground."""
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    def type(self, text: bytes) -> None:
        os.write(self.master, text)

    def _read(self) -> None:
        if select.select([self.master], [], [], 0.05)[0]:
            with contextlib.suppress(OSError):  # EIO: the terminal's last process ended
                self.output += os.read(self.master, 65536)

    def wait_for(self, text: bytes, seconds: float = 60) -> None:
        def seen() -> bool:
            self._read()
            return text in self.output
        wait_until(seen, seconds, f"{text!r} on the terminal; it shows {self.output[-400:]!r}")

    def wait(self, seconds: float = 60) -> int:
        def ended() -> bool:
            self._read()
            return self.process.poll() is not None
        wait_until(ended, seconds, f"squarepeg to exit; the terminal shows {self.output!r}")
        return self.process.returncode

    def close(self) -> None:
        """Once: a second close could hit an fd number that meanwhile is another's."""
        stop_process(self.process)
        if self.master >= 0:
            os.close(self.master)
            self.master = -1


@pytest.fixture
def terminal(squarepeg: Squarepeg) -> Iterator[list[Terminal]]:
    started: list[Terminal] = []
    yield started
    for term in started:
        term.close()


# Lines written before, while and after the attach connects (it takes 0.3 to 1 s): the log
# shows the first ones, the attach the rest, and some both.
ACROSS_THE_ATTACH = "for i in $(seq 1 12); do echo line $i; sleep 0.1; done; exit 3"
ACROSS_RUNS = 20


@attach_needed
def test_it_output_around_the_attach_is_shown_once_with_a_raw_terminals_line_ends(
        squarepeg: Squarepeg, terminal: list[Terminal]) -> None:
    # On the real node the log's lines end in `\n` (containerd drops the terminal's `\r`):
    # shown as they were on the raw terminal they staircased (5 runs of 5), and the line
    # both streams had was shown twice (`after\nafter\r\n`, 2 of 5).
    expected = [b"line %d" % i for i in range(1, 13)]
    for attempt in range(ACROSS_RUNS):
        term = Terminal(squarepeg, "run", "-q", "-it", "alpine", "sh", "-c", ACROSS_THE_ATTACH)
        terminal.append(term)
        assert term.wait() == 3, (attempt, term.output)
        assert re.findall(rb"line \d+", term.output) == expected, (attempt, term.output)
        assert re.search(rb"(?<!\r)\n", term.output) is None, (attempt, term.output)
        term.close()


@attach_needed
@pytest.mark.smoke("-it")
def test_it_shell_on_a_terminal(squarepeg: Squarepeg, terminal: list[Terminal]) -> None:
    term = Terminal(squarepeg, "run", "-q", "-it", "alpine", "sh", "-c",
                    "echo printed before the attach; exec sh", rows=40, columns=100)
    terminal.append(term)
    term.wait_for(b"printed before the attach\r\n")  # from the log: the attach came later
    wait_for_terminal_size(term, 40, 100)  # see the SPDY test: the size can settle late
    # A resize of the user's terminal reaches the container's (SIGWINCH, passed on).
    term.resize(30, 120)
    wait_for_terminal_size(term, 30, 120)
    term.type(b"echo typed $((6*7))\r")
    term.wait_for(b"typed 42\r\n")
    # Ctrl-C goes to the container: it ends the sleep, not squarepeg.
    term.type(b"sh -c 'echo sleeping; exec sleep 60' && echo slept\r")
    term.wait_for(b"sleeping\r\n")
    term.type(b"\x03")
    # Computed by the shell, so not the terminal's echo of what was typed: the shell runs
    # again, and the sleep it waited for was ended by SIGINT (128 + 2).
    term.type(b"echo status $?\r")
    term.wait_for(b"status 130\r\n")
    assert b"\nslept\r\n" not in term.output and term.process.poll() is None
    term.type(b"exit 5\r")
    assert term.wait() == 5, term.output
    # What came before the attach, shown once: not lost, not doubled.
    assert term.output.count(b"printed before the attach") == 1, term.output


@attach_needed
def test_it_sh_takes_what_was_typed_while_the_pod_started(
        squarepeg: Squarepeg, terminal: list[Terminal]) -> None:
    # `run -it alpine sh` as typed: its first prompt is in no log (no newline yet), so what
    # the user types at once, before the attach is there, is what must reach the shell.
    term = Terminal(squarepeg, "run", "-q", "-it", "alpine", "sh", rows=40, columns=100)
    terminal.append(term)
    # kubectl attach sends the size plus one, then the size, to make the shell redraw (seen:
    # a line typed this early ran in between and read 41 101). So the line waits, up to 5 s,
    # for the size to settle; the sizes are computed so that the echo cannot match them.
    term.type(b'i=0; until [ "$(stty size)" = "$((39+1)) $((99+1))" ] || [ $i -gt 50 ]; '
              b"do i=$((i+1)); sleep 0.1; done; stty size; exit $((1+2))\r")
    assert term.wait() == 3, term.output
    assert b"40 100\r\n" in term.output


@attach_needed
def test_it_in_job_mode_on_a_terminal(squarepeg: Squarepeg, kubesim: Kubesim, namespace: str,
                                      terminal: list[Terminal]) -> None:
    term = Terminal(squarepeg, "run", "-q", "-it", "--mode", "job", "--name", "jobshell",
                    "alpine", "sh", "-c", "echo job shell; exec sh")
    terminal.append(term)
    term.wait_for(b"job shell\r\n")
    assert names(kubesim, namespace, "jobs") == ["job/jobshell"]
    term.type(b"test -t 0 && echo in $((2+3))\r")
    term.wait_for(b"in 5\r\n")
    term.type(b"exit 6\r")
    assert term.wait() == 6, term.output


# --- the status line while the pod starts ---------------------------------------------------

# Longer than podevents.CREATING_GRACE_SECONDS, after which the pod's events are looked at.
SLOW_PULL = {"images": {"slowpull": {"cmd": ["sh", "-c", "echo pulled"], "pull_seconds": 4}}}


def test_the_status_line_rewrites_itself_on_a_terminal(
        kubesim_factory: Any, tmp_path: Path) -> None:
    sim = kubesim_factory(SLOW_PULL)
    runner = Squarepeg(sim, "default", tmp_path)
    term = Terminal(runner, "run", "slowpull")
    try:
        assert term.wait() == 0, term.output
    finally:
        term.close()
        runner.close()
    shown = term.output
    status = b"\r\x1b[Ksquarepeg: waiting for the pod: Pending, ContainerCreating ("
    assert shown.count(status) >= 2, shown  # rewritten in place, at least once
    # Once the events have been looked at, the kubelet's own words for what it waits on.
    assert b'\r\x1b[Ksquarepeg: waiting for the pod: Pending, Pulling image "slowpull" (' \
        in shown, shown
    # Erased before the container's output starts, and never ended with a newline.
    after = shown.rpartition(b"\r\x1b[Ksquarepeg: waiting for the pod: ")[2]
    assert after.split(b"\r\x1b[K", 1)[1].lstrip(b"\r\n").startswith(b"pulled"), shown
    assert b"s)\r\n" not in shown
    assert_nothing_left(sim, "default")


def test_no_status_line_in_a_pipe(kubesim_factory: Any, tmp_path: Path) -> None:
    sim = kubesim_factory(SLOW_PULL)
    done = Squarepeg(sim, "default", tmp_path)("run", "slowpull")
    assert (done.code, done.stdout) == (0, b"pulled\n"), done.stderr
    assert "waiting for the pod" not in done.stderr and "\x1b" not in done.stderr
    assert_nothing_left(sim, "default")


@attach_needed
def test_sigterm_during_it_keeps_its_two_stage_meaning(
        squarepeg: Squarepeg, terminal: list[Terminal], kubesim: Kubesim,
        namespace: str) -> None:
    term = Terminal(squarepeg, "run", "-it", "--name", "term", *STOP_TIMEOUT, "alpine", "sh",
                    "-c", "echo attached-shell; exec sh")
    terminal.append(term)
    term.wait_for(b"attached-shell\r\n")
    term.type(b"echo typed\r")
    term.wait_for(b"typed\r\n")
    before = termios.tcgetattr(term.master)
    assert not before[3] & termios.ECHO  # kubectl holds the terminal in raw mode
    term.process.send_signal(signal.SIGTERM)
    assert term.wait() == 130, term.output
    assert b"SIGTERM" in term.output
    # Written while the terminal was raw (no output processing): each of squarepeg's lines
    # still ends with a carriage return, so none starts mid-screen.
    for line in term.output.split(b"\n")[:-1]:
        if b"squarepeg:" in line:
            assert line.endswith(b"\r"), term.output
    # The terminal is given back as it was: line editing and echo on again.
    after = termios.tcgetattr(term.master)
    assert after[3] & termios.ECHO and after[3] & termios.ICANON
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")


@attach_needed
def test_a_second_sigterm_during_it_leaves_the_pod_and_names_it(
        squarepeg: Squarepeg, terminal: list[Terminal], kubesim: Kubesim, namespace: str,
        tmp_path: Path) -> None:
    term = Terminal(squarepeg, "run", "-it", "--name", "left", *STOP_TIMEOUT, "alpine", "sh", "-c",
                    "echo attached-shell; exec sh", env=slow_deletes(tmp_path))
    terminal.append(term)
    term.wait_for(b"attached-shell\r\n")
    try:
        term.process.send_signal(signal.SIGTERM)
        term.wait_for(b"press Ctrl-C again")  # the delete is on its way (held up 30 s)
        term.process.send_signal(signal.SIGTERM)
        assert term.wait() == 130, term.output
        assert b"kubectl delete pod left" in term.output
        after = termios.tcgetattr(term.master)
        assert after[3] & termios.ECHO and after[3] & termios.ICANON
    finally:
        kubesim.kubectl("delete", "pod", "left", "-n", namespace, "--wait=false")


@attach_needed
def test_refused_attach_on_a_terminal_exits_125_and_gives_the_terminal_back(
        kubesim_factory: Any, tmp_path: Path) -> None:
    sim = kubesim_factory(NO_ATTACH_RIGHT)
    runner = Squarepeg(sim, "default", tmp_path)
    term = Terminal(runner, "run", "-q", "--context", "kubesim-bob", "-it", *STOP_TIMEOUT,
                    "alpine", "cat")
    try:
        assert term.wait() == 125, term.output
        settings = termios.tcgetattr(term.master)
    finally:
        term.close()
        runner.close()
    errors = [line for line in term.output.splitlines() if b"error:" in line]
    assert len(errors) == 1 and b"`create` on `pods/attach`" in errors[0], term.output
    assert b"run without -it" in errors[0]
    assert settings[3] & termios.ECHO and settings[3] & termios.ICANON
    assert_nothing_left(sim, "default")


# --- the attach's two protocols -------------------------------------------------------------

# kubectl attaches over WebSocket and falls back to SPDY; with this it speaks SPDY alone, as
# kubectl before 1.31 did and as a proxy that strips WebSocket upgrades leaves it.
SPDY_ONLY = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"}


@pytest.fixture
def spdy_served(kubesim: Kubesim) -> None:
    if not isinstance(kubesim, Localkube) or _agent_node(kubesim):
        pytest.skip("SPDY attach: kubesim's attach speaks WebSocket only (README, "
                    "differences); the kubelet node's API server speaks both")


@pytest.mark.usefixtures("spdy_served")
def test_i_over_spdy_keeps_every_byte(squarepeg: Squarepeg) -> None:
    data = bytes(range(256)) * 64 + b"no newline at the end"
    process = squarepeg.start("run", "-q", "-i", "alpine", "cat", env=SPDY_ONLY,
                              stdin=subprocess.PIPE)
    out, err = process.communicate(input=data, timeout=RUN_SECONDS)
    assert (process.returncode, out) == (0, data), err


@pytest.mark.usefixtures("spdy_served")
def test_it_over_spdy_on_a_terminal(squarepeg: Squarepeg, terminal: list[Terminal]) -> None:
    term = Terminal(squarepeg, "run", "-q", "-it", "alpine", "sh", "-c",
                    "echo printed before the attach; exec sh", rows=40, columns=100,
                    env=SPDY_ONLY)
    terminal.append(term)
    term.wait_for(b"printed before the attach\r\n")
    term.type(b"echo typed $((6*7))\r")
    term.wait_for(b"typed 42\r\n")
    # kubectl attach sends the size plus one, then the size (a redraw). Over SPDY the resize
    # and stdin are separate streams, so a line typed early can run between the two (CI on
    # the kubelet node: `stty size` said 41 101): the size is asked until it has settled.
    wait_for_terminal_size(term, 40, 100)
    term.type(b"exit 6\r")
    assert term.wait() == 6, term.output
    assert term.output.count(b"printed before the attach") == 1, term.output
