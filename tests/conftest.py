"""Fixtures shared by every test that needs a cluster: kubesim as a process.

- `kubesim` (module scope): `scripts/kubesim serve` in its own process group on a free port,
  with a fresh directory for its kubeconfig and its own KUBECACHEDIR. Yields a `Kubesim`:
  `.kubeconfig` (Path), `.env` (os.environ + KUBECONFIG + KUBECACHEDIR), `.url`, `.token`,
  `.ctl(*args) -> str` (scripts/kubesim ctl; raises on failure) and
  `.kubectl(*args, input=None, check=False) -> CompletedProcess` (the real kubectl, bytes).
  While it is active, KUBECONFIG and KUBECACHEDIR are also set in os.environ (in-process
  code such as kubectl_squarepeg.kubectl.run starts kubectl with os.environ).
- `kubesim_factory` (function scope): `factory(scenario: dict | None = None) -> Kubesim`, a
  simulator of the test's own; every one is stopped at teardown.
- `namespace` (function scope): a fresh namespace; at teardown it waits for no pod and no
  Job to be left in it and fails the test if some are (then force-deletes them).

At teardown a simulator gets SIGTERM, then SIGKILL for its whole group if it has not ended
within the deadline, and the teardown fails if any process started under it is still alive.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import wait_until
from tests.kubesim.launcher import alive, descendants

ROOT = Path(__file__).resolve().parent.parent
KUBESIM = ROOT / "scripts" / "kubesim"
READY_SECONDS = 30.0
STOP_SECONDS = 20.0
NAMESPACE_DRAIN_SECONDS = 15.0
KUBECTL_SECONDS = 60.0


class KubesimError(RuntimeError):
    """kubesim did not start, or a ctl call failed."""


class Kubesim:
    """One running `scripts/kubesim serve` process and how to talk to it."""

    def __init__(self, workdir: Path, scenario: dict[str, Any] | None = None):
        self.workdir = workdir
        self.kubeconfig = workdir / "kubeconfig"
        self.cache = workdir / "kube-cache"
        self.out = workdir / "kubesim.out"
        self.err = workdir / "kubesim.err"
        argv = [str(KUBESIM), "serve", "--kubeconfig", str(self.kubeconfig)]
        if scenario is not None:
            scenario_file = workdir / "scenario.yaml"
            scenario_file.write_text(yaml.safe_dump(scenario), encoding="utf-8")
            argv += ["--scenario", str(scenario_file)]
        self.env = {**os.environ, "KUBECONFIG": str(self.kubeconfig),
                    "KUBECACHEDIR": str(self.cache)}
        with self.out.open("wb") as out, self.err.open("wb") as err:
            self.process = subprocess.Popen(argv, stdout=out, stderr=err,
                                            stdin=subprocess.DEVNULL, start_new_session=True,
                                            cwd=workdir)
        self.url = ""
        self.token = ""
        try:
            self._wait_ready()
        except BaseException:
            self.stop(check=False)
            raise

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_SECONDS
        while time.monotonic() < deadline:
            text = self.out.read_text(encoding="utf-8", errors="replace")
            match = re.search(r"kubesim: ready on (https://\S+)", text)
            if match and self.kubeconfig.exists():
                self.url = match.group(1)
                config = yaml.safe_load(self.kubeconfig.read_text(encoding="utf-8"))
                self.token = config["users"][0]["user"]["token"]
                return
            if self.process.poll() is not None:
                raise KubesimError(f"kubesim exited with {self.process.returncode} before it "
                                   f"was ready:\n{self.err.read_text(errors='replace')}")
            time.sleep(0.02)
        raise KubesimError(f"kubesim was not ready within {READY_SECONDS:g}s:\n"
                           f"{self.err.read_text(errors='replace')}")

    def ctl(self, *args: str) -> str:
        """`scripts/kubesim ctl --kubeconfig K ARGS...`; its stdout, or KubesimError."""
        done = subprocess.run([str(KUBESIM), "ctl", "--kubeconfig", str(self.kubeconfig),
                               *args], env=self.env, capture_output=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise KubesimError(f"kubesim ctl {' '.join(args)} failed ({done.returncode}): "
                               f"{done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode()

    def stats(self) -> dict[str, Any]:
        return json.loads(self.ctl("stats"))  # type: ignore[no-any-return]

    def kubectl(self, *args: str, input: bytes | None = None, check: bool = False,
                timeout: float = KUBECTL_SECONDS) -> subprocess.CompletedProcess[bytes]:
        """The real kubectl against this simulator; stdout and stderr as bytes."""
        return subprocess.run(["kubectl", *args], env=self.env, input=input,
                              stdin=None if input is not None else subprocess.DEVNULL,
                              capture_output=True, check=check, timeout=timeout)

    def stop(self, check: bool = True) -> None:
        """SIGTERM, wait, SIGKILL the group if needed; with `check`, fail when a process
        started under the simulator outlived it or the simulator reported a problem."""
        if self.process.poll() is not None and not check:
            return
        started = descendants(self.process.pid)
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self._kill_group()
            code = self.process.wait(10)
            if check:
                raise KubesimError(f"kubesim did not stop within {STOP_SECONDS:g}s of "
                                   "SIGTERM; its process group was killed") from None
        left = alive(started)
        deadline = time.monotonic() + 5
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = alive(left)
        for pid, _ in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if check:
            assert not left, f"processes started under kubesim outlived it: {sorted(left)}"
            assert code == 0, f"kubesim exited {code}:\n{self.err.read_text(errors='replace')}"

    def _kill_group(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)


def _start(tmp_path_factory: pytest.TempPathFactory,
           scenario: dict[str, Any] | None) -> Kubesim:
    return Kubesim(tmp_path_factory.mktemp("kubesim"), scenario)


@pytest.fixture(scope="module")
def kubesim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubesim]:
    sim = _start(tmp_path_factory, None)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("KUBECONFIG", str(sim.kubeconfig))
            patch.setenv("KUBECACHEDIR", str(sim.cache))
            yield sim
    finally:
        sim.stop()


@pytest.fixture
def kubesim_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[dict[str, Any] | None], Kubesim]]:
    started: list[Kubesim] = []
    with pytest.MonkeyPatch.context() as patch:

        def factory(scenario: dict[str, Any] | None = None) -> Kubesim:
            sim = _start(tmp_path_factory, scenario)
            started.append(sim)
            patch.setenv("KUBECONFIG", str(sim.kubeconfig))
            patch.setenv("KUBECACHEDIR", str(sim.cache))
            return sim

        try:
            yield factory
        finally:
            problems = []
            for sim in started:
                try:
                    sim.stop()
                except (AssertionError, KubesimError) as exc:
                    problems.append(str(exc))
            assert not problems, "\n".join(problems)


def _leftovers(sim: Kubesim, namespace: str) -> list[str]:
    done = sim.kubectl("get", "pods,jobs", "-n", namespace, "-o", "name")
    if done.returncode != 0:
        return [f"(kubectl get failed: {done.stderr.decode(errors='replace').strip()})"]
    return done.stdout.decode().split()


@pytest.fixture
def namespace(kubesim: Kubesim, request: pytest.FixtureRequest) -> Iterator[str]:
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"t-{slug}-{uuid.uuid4().hex[:6]}"
    created = kubesim.kubectl("create", "namespace", name)
    assert created.returncode == 0, created.stderr.decode(errors="replace")
    yield name
    left: list[str] = []
    try:
        wait_until(lambda: not _leftovers(kubesim, name), NAMESPACE_DRAIN_SECONDS,
                   f"namespace {name} to have no pods or jobs left")
    except AssertionError:
        left = _leftovers(kubesim, name)
        kubesim.kubectl("delete", "pods,jobs", "--all", "-n", name, "--grace-period=0",
                        "--force", "--wait=false", "--cascade=background")
    kubesim.kubectl("delete", "namespace", name, "--wait=false")
    if left:
        pytest.fail(f"the test left these in namespace {name}: {' '.join(left)}")
