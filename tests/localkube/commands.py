"""Running a short command to its end, for localkube and its tests: the one way they do it.

Owns `run` (captured output, no stdin: a command that would read the terminal fails instead
of hanging a test), `run_checked` (its stdout, or the caller's error type naming what failed
and how, as the launcher's node and network code want it), `ip_json` (the machine's view of
its links, addresses and routes, as the tests that look for leftovers read it) and
`squarepeg` (the installed `kubectl-squarepeg` against a cluster, by its environment).
Long-lived processes (the control plane, the node) are started elsewhere: processes.py,
kubelet_node.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# The venv's script, not SQUAREPEG_TEST_BINARY: these tests are of the node, not the release.
SQUAREPEG = str(Path(sys.executable).parent / "kubectl-squarepeg")


def run(argv: list[str], *, env: Mapping[str, str] | None = None,
        timeout: float | None = None, check: bool = False,
        ) -> subprocess.CompletedProcess[bytes]:
    """`argv` to its end, stdout and stderr as bytes, stdin /dev/null."""
    return subprocess.run(argv, env=env, capture_output=True, stdin=subprocess.DEVNULL,
                          timeout=timeout, check=check)


def run_checked(argv: list[str], what: str, error: Callable[[str], Exception],
                timeout: float) -> str:
    """`argv`'s stdout as text; `error("WHAT failed (exit N): ARGV\\nITS OUTPUT")` when it
    exits other than 0."""
    done = run(argv, timeout=timeout)
    if done.returncode != 0:
        output = done.stderr.decode(errors="replace") or done.stdout.decode(errors="replace")
        raise error(f"{what} failed (exit {done.returncode}): {' '.join(argv)}\n"
                    f"{output.strip()}")
    return done.stdout.decode(errors="replace")


def ip_json(*argv: str) -> Any:
    """`ip -j ARGV` in this process's network namespace, parsed ([] for no output)."""
    return json.loads(run(["ip", "-j", *argv], check=True).stdout or b"[]")


def squarepeg(env: Mapping[str, str], *args: str,
              timeout: float) -> subprocess.CompletedProcess[bytes]:
    """`kubectl-squarepeg ARGS` with the cluster's environment (its KUBECONFIG)."""
    return run([SQUAREPEG, *args], env=env, timeout=timeout)
