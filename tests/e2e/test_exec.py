"""`exec` end to end (issue 35): the installed `kubectl-squarepeg` with the real kubectl
against the selected cluster, in a `run -d`'s container. Exit codes are the command's (0, 3)
or docker's for a command that cannot run (127 not found, 126 not executable); stdout and
stderr byte-exact, with kubectl's own `command terminated with exit code N` kept off them;
piped stdin byte-exact; `-it` on a pty: a prompt, a typed command, a resize, Ctrl-C to the
command; a wrong name, a finished run: one line, 125. After each: no pod, no kubectl."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import BIN, Squarepeg, isolated_env, names
from tests.e2e.test_interactive import (  # noqa: F401 (fixtures)
    Terminal,
    attach_needed,
    attach_served,
    terminal,
)
from tests.helpers import wait_for_terminal_size, wait_until

# Long enough for every test's execs under CI's load; stop/rm ends it sooner.
SERVE = ("sh", "-c", "echo serving; exec sleep 600")
STOP_TIMEOUT = ("--stop-timeout", "2")  # `sleep` as PID 1 ignores SIGTERM: rm -f waits this


@pytest.fixture
def running(squarepeg: Squarepeg, kubesim: Any, namespace: str) -> Iterator[str]:
    """A detached run serving execs; removed (and waited gone) after the test."""
    started = squarepeg("run", "-d", "-q", "--name", "ex", *STOP_TIMEOUT, "alpine", *SERVE)
    assert started.code == 0, started.stderr
    yield "ex"
    squarepeg("rm", "-f", "ex")
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the run to be gone")


def test_exit_codes_are_the_commands(squarepeg: Squarepeg, running: str) -> None:
    done = squarepeg("exec", running, "true")
    assert (done.code, done.stdout, done.stderr) == (0, b"", "")
    done = squarepeg("exec", running, "sh", "-c", "printf 'out\\001'; printf 'err\\n' >&2; exit 3")
    # kubectl's own "command terminated with exit code 3" is not the command's stderr.
    assert (done.code, done.stdout, done.stderr) == (3, b"out\x01", "err\n")
    done = squarepeg("exec", running, "sh", "-c", "printf partial >&2; exit 4")
    assert (done.code, done.stderr) == (4, "partial")


def test_a_command_that_cannot_run_is_127_or_126(squarepeg: Squarepeg, running: str) -> None:
    done = squarepeg("exec", running, "no-such-command-here")
    assert done.code == 127, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("squarepeg: error: ")
    assert "no-such-command-here: executable file not found" in done.stderr
    done = squarepeg("exec", running, "/etc/passwd")
    assert done.code == 126, done.stderr
    assert done.stderr.count("\n") == 1 and "/etc/passwd: permission denied" in done.stderr


def test_piped_stdin_is_byte_exact(squarepeg: Squarepeg, running: str) -> None:
    data = os.urandom(300 * 1024)
    process = squarepeg.start("exec", "-i", running, "cat", stdin=subprocess.PIPE)
    out, err = process.communicate(data, timeout=120)
    assert process.returncode == 0, err
    assert hashlib.sha256(out).hexdigest() == hashlib.sha256(data).hexdigest()
    # Without -i the command's stdin is empty: cat ends at once.
    process = squarepeg.start("exec", running, "cat", stdin=subprocess.PIPE)
    out, _ = process.communicate(b"not read", timeout=120)
    assert (process.returncode, out) == (0, b"")


def test_wrong_name_and_finished_run_are_one_line_125(
        squarepeg: Squarepeg, kubesim: Any, namespace: str) -> None:
    done = squarepeg("exec", "no-such-run", "true")
    assert done.code == 125 and done.stderr.count("\n") == 1, done.stderr
    assert "no squarepeg run named no-such-run" in done.stderr
    assert squarepeg("run", "-d", "-q", "--name", "ex-done", "alpine", "true").code == 0
    assert squarepeg("wait", "ex-done").stdout == b"0\n"
    done = squarepeg("exec", "ex-done", "true")
    assert done.code == 125 and done.stderr.count("\n") == 1, done.stderr
    assert "pod/ex-done is not running (Exited (0)" in done.stderr
    assert squarepeg("rm", "ex-done").code == 0
    done = squarepeg("exec", "-t", "ex-done", "true")  # -t without -i: refused before anything
    assert done.code == 125 and "use -it" in done.stderr, done.stderr
    wait_until(lambda: names(kubesim, namespace) == [], 60, "the run to be gone")


@attach_needed
def test_it_on_a_terminal(
        squarepeg: Squarepeg, running: str, terminal: list[Terminal],  # noqa: F811
) -> None:
    term = Terminal(squarepeg, "exec", "-it", running, "sh", rows=40, columns=100)
    terminal.append(term)
    term.type(b"PS1='prompt> '\r")
    term.wait_for(b"prompt> ")
    wait_for_terminal_size(term, 40, 100)
    term.resize(30, 120)  # SIGWINCH goes to squarepeg, which passes it on to kubectl
    wait_for_terminal_size(term, 30, 120)
    term.type(b"echo typed $((6*7))\r")
    term.wait_for(b"typed 42\r\n")
    # Ctrl-C is a byte for the command's terminal: it ends the sleep, not squarepeg.
    term.type(b"sh -c 'echo sleeping; exec sleep 60' && echo slept\r")
    term.wait_for(b"sleeping\r\n")
    term.type(b"\x03")
    term.type(b"echo status $?\r")
    term.wait_for(b"status 130\r\n")
    assert b"\nslept\r\n" not in term.output and term.process.poll() is None
    term.type(b"exit 5\r")
    assert term.wait() == 5, term.output
    # kubectl's own "command terminated with exit code 5" is not shown.
    assert b"command terminated" not in term.output, term.output


def test_run_names_complete_for_exec_and_stop(squarepeg: Squarepeg, running: str) -> None:
    for verb in ("exec", "stop"):
        done = subprocess.run(
            [str(BIN / "kubectl_complete-squarepeg"), verb, "-n", squarepeg.namespace, "e"],
            env=isolated_env(squarepeg.kubesim, squarepeg.home), capture_output=True,
            timeout=30,
        )
        assert done.stdout.decode().splitlines() == [running, ":4"], (verb, done)
