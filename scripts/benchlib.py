"""What the `bench-*` scripts share: a cluster of their own (kubesim, or localkube's real
control plane and kubelet node), a dry run's offline home, timing, and a counting kubectl.

Not a test helper: benchmarks print numbers measured in one run; they assert nothing. Each
starts its own cluster in a temporary folder and stops it (and every container it ran)
however the benchmark ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
SQUAREPEG = str(VENV_BIN / "kubectl-squarepeg")
READY_SECONDS = 30.0
# The first start on a machine builds nothing here (scripts/localkube build does), but
# the node pulls its images into containerd.
LOCALKUBE_READY_SECONDS = 180.0


# A dry run's kubeconfig: its server (port 1) refuses at once, and a dry run never needs it.
OFFLINE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: bench
  user: {token: bench}
contexts:
- name: bench
  context: {cluster: bench, user: bench, namespace: bench-ns}
current-context: bench
"""


def offline_home(work: Path) -> dict[str, str]:
    """The environment of a dry run in `work`: OFFLINE_KUBECONFIG, last changed an hour ago
    (before this session, so squarepeg's view cache may be trusted), and a HOME, XDG folders
    and kubectl cache of its own there, so no config file of the user's is read. Bytecode is
    cached, as in any normal install."""
    kubeconfig = work / "kubeconfig"
    kubeconfig.write_text(OFFLINE_KUBECONFIG)
    an_hour_ago = time.time() - 3600
    os.utime(kubeconfig, (an_hour_ago, an_hour_ago))
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONDONTWRITEBYTECODE", "SQUAREPEG_CONFIG")}
    return env | {
        "KUBECONFIG": str(kubeconfig),
        "KUBECACHEDIR": str(work / "kube-cache"),
        "HOME": str(work),
        "XDG_CONFIG_HOME": str(work / "config"),
        "XDG_CACHE_HOME": str(work / "cache"),
    }


@dataclass(frozen=True)
class Sim:
    """A running simulator: its folder and the environment that points kubectl at it."""

    work: Path
    env: dict[str, str]

    def kubectl(self, *args: str, stdin: bytes | None = None) -> bytes:
        done = subprocess.run(["kubectl", *args], env=self.env, input=stdin,
                              capture_output=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args[:3])} failed: {done.stderr.decode()}")
        return done.stdout


@contextlib.contextmanager
def kubesim(scenario: str | None = None, *, latency_ms: int = 0) -> Iterator[Sim]:
    """Start `scripts/kubesim serve` in a temporary folder; stop it on the way out.
    `latency_ms` stands for a remote API server's round trip (kubesim's --latency)."""
    with tempfile.TemporaryDirectory(prefix="squarepeg-bench-") as tmp:
        work = Path(tmp)
        options = ["--latency", str(latency_ms)]
        if scenario is not None:
            (work / "scenario.yaml").write_text(scenario)
            options += ["--scenario", str(work / "scenario.yaml")]
        with _served("kubesim", work, options, READY_SECONDS) as sim:
            yield sim


@contextlib.contextmanager
def localkube() -> Iterator[Sim]:
    """Start `scripts/localkube serve` (the real control plane and the kubelet node, built
    once and cached) in a temporary folder; stop it, and every container, on the way out."""
    with (tempfile.TemporaryDirectory(prefix="squarepeg-bench-") as tmp,
          _served("localkube", Path(tmp), ["--node", "kubelet"], LOCALKUBE_READY_SECONDS) as sim):
        yield sim


def localkube_state(sim: Sim) -> Path | None:
    """The state folder of the localkube `sim` runs (its logs are under `logs/`), as its
    serve said it; None for kubesim."""
    out = sim.work / "localkube.out"
    if not out.exists():
        return None
    found = re.findall(r"state in (\S+)", out.read_text(errors="replace"))
    return Path(found[-1]) if found else None


@contextlib.contextmanager
def _served(kind: str, work: Path, options: list[str], ready_seconds: float) -> Iterator[Sim]:
    """`scripts/KIND serve` with `options`, once it has said `ready`."""
    # A benchmark stopped with SIGTERM (`timeout`, `kill`) still stops its cluster: Python
    # runs no `finally` for a signal it does not handle, and a localkube left running keeps
    # a kubelet, containerd and their pods.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    kubeconfig = work / "kubeconfig"
    out = work / f"{kind}.out"
    with out.open("wb") as sink:
        process = subprocess.Popen(
            [str(ROOT / "scripts" / kind), "serve", "--kubeconfig", str(kubeconfig), *options],
            stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
    try:
        deadline = time.monotonic() + ready_seconds
        while b"ready" not in out.read_bytes() or not kubeconfig.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"bench: {kind} did not start:\n"
                                 f"{out.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)
        # As installed for real: bytecode cached (this machine's environment turns that
        # off, which would make every Python start recompile what changed).
        base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env = {
            **base,
            "KUBECONFIG": str(kubeconfig),
            "KUBECACHEDIR": str(work / "cache"),
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}",
        }
        yield Sim(work, env)
    finally:
        _stop(process)


def _stop(sim: subprocess.Popen[bytes]) -> None:
    if sim.poll() is not None:
        return
    os.killpg(sim.pid, signal.SIGTERM)
    try:
        sim.wait(60)  # localkube stops its node's containers first
    except subprocess.TimeoutExpired:
        os.killpg(sim.pid, signal.SIGKILL)
        sim.wait()


def timed(argv: list[str], env: dict[str, str], *, ok_codes: tuple[int, ...] = (0,)) -> float:
    """Seconds one command took, start to exit; its output is thrown away."""
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    elapsed = time.perf_counter() - began
    if done.returncode not in ok_codes:
        raise SystemExit(f"bench: {argv[0]} failed ({done.returncode}): {done.stderr!r}")
    return elapsed


def counting_path(work: Path) -> tuple[str, Path]:
    """A PATH whose first `kubectl` appends each call to a log, then runs the real one."""
    real = shutil.which("kubectl")
    if real is None:
        raise SystemExit("bench: kubectl is not on PATH")
    shim_dir = work / "shim"
    shim_dir.mkdir(exist_ok=True)
    log = work / "kubectl-calls.log"
    log.write_text("")
    shim = shim_dir / "kubectl"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    return f"{shim_dir}{os.pathsep}{os.environ['PATH']}", log
