"""Running the installed `kubectl-squarepeg` as a process against a cluster, for e2e tests.

The cluster is the selected one (tests/conftest.py: `--cluster` or SQUAREPEG_TEST_CLUSTER):
here the `kubesim` fixture is kubesim, or the session's localkube, under the same name and
with the same attributes, so every e2e test runs on either. `kubesim_factory` on localkube
starts a localkube of the test's own when the scenario only sets the node's images and
options, and skips the test (kubesim only) when it needs scenario objects that localkube
makes with real objects instead (quotas, admission rules, tokens, nodes).

The `squarepeg` fixture runs the command in a scratch working directory with its own empty
config home, so no config file of the machine or of the developer takes part, and with the
simulator's kubeconfig in the environment. It returns what a user would see: the exit code,
stdout as bytes, stderr as lines.

localkube's node is the real kubelet (in the session's cluster and in a `kubesim_factory(None)`
cluster); a scenario's images and options are the node agent's, so a factory cluster with a
scenario runs the node agent. A test that needs a fault only the node agent makes (`ctl
evict`, `ctl drop-logs`) is decorated with `needs_the_node_agent(reason)`: its `kubesim` is
then, on localkube with the kubelet node, a localkube of the module's own with the node agent
(started once for the module's such tests), and the selected cluster otherwise.

A module whose tests need several real nodes (one lost, drained or cordoned) makes
`several_nodes` its `kubesim`: a localkube of its own with 2 kubelet nodes and a node grace
of 8 s, on `--cluster localkube` only (skipped on kubesim, which has one simulated node).

kubectl 1.27 to 1.29 attach over SPDY/3.1 only (WebSocket from 1.30), which kubesim does not
speak (tests/kubesim/README.md, differences): with such a kubectl (`--kubectl 1.27`) the tests
that attach (those using test_interactive.py's `attach_served`) are skipped on kubesim, and
CI runs the smoke set with that kubectl on localkube too, whose real API server takes SPDY.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from tests.conftest import (
    Kubesim,
    Localkube,
    clusters,
    kubectl_minor,
    kubesim_alone,
    localkube_default_node,
    selected_cluster,
    serving,
    start_kubesim,
)
from tests.helpers import stop_process, wait_until

# Why the tests that count reconnect messages run on kubesim only.
CLIENT_SIDE_LOG_DROP = (
    "needs kubesim's cut of kubectl's own connection (kubectl: unexpected EOF); the real API "
    "server ends a log stream cleanly when its kubelet connection breaks, and squarepeg "
    "reconnects without a message: test_cluster_faults.py covers that on both"
)

__all__ = [
    "CLIENT_SIDE_LOG_DROP", "NODE_AGENT", "SEVERAL_NODES", "Finished", "Squarepeg",
    "age_the_finish", "counting_kubectl", "names", "needs_the_node_agent", "several_nodes",
    "skip_where_the_kubelet_owns_pod_status", "wait_until", "watched_pod",
]

T = TypeVar("T")
NODE_AGENT = "node-agent"


def needs_the_node_agent(reason: str) -> Callable[[T], T]:
    """For a test whose fault only the node agent (or kubesim) makes: its `kubesim` is a
    cluster with the node agent (see the module docstring); `reason` names the fault."""
    parametrize = pytest.mark.parametrize(
        "kubesim", [pytest.param(NODE_AGENT, id=NODE_AGENT)], indirect=True)
    marker = pytest.mark.needs_the_node_agent(reason)

    def decorate(test: T) -> T:
        return cast(T, marker(parametrize(test)))

    return decorate

BIN = Path(sys.executable).parent
# The executable under test: the venv's console script, or the link the real krew made
# (scripts/test's smoke cell through krew: tests/krew/smoke_install.py).
SQUAREPEG = os.environ.get("SQUAREPEG_TEST_BINARY") or str(BIN / "kubectl-squarepeg")


@dataclass(frozen=True)
class Finished:
    """One finished `kubectl-squarepeg` process."""

    code: int
    stdout: bytes
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stderr.splitlines()

    def has_line(self, *fragments: str) -> bool:
        """Whether one stderr line holds every fragment."""
        return any(all(f in line for f in fragments) for line in self.lines)


def isolated_env(
    kubesim: Any, home: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    env = {k: v for k, v in kubesim.env.items() if k != "SQUAREPEG_CONFIG"}
    env["XDG_CONFIG_HOME"] = str(home / "xdg")
    # The kubeconfig view cache lives beside the simulator's kubeconfig: shared by the runs
    # of one module, as a user's repeated runs share theirs, and never the machine's own.
    env["XDG_CACHE_HOME"] = str(Path(kubesim.kubeconfig).parent / "cache-home")
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["USER"] = env["LOGNAME"] = "tester"  # the created-by label of every test run
    env.update(extra or {})
    return env


def stop_signals_as(
    ignoring: Sequence[int], *, then: Callable[[], object] | None
) -> Callable[[], None]:
    """A pre-exec hook: the stop signals at their defaults but those in `ignoring`, which
    are ignored; then `then`."""

    def hook() -> None:
        for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
            signal.signal(signum, signal.SIG_IGN if signum in ignoring else signal.SIG_DFL)
        if then is not None:
            then()

    return hook


class Squarepeg:
    """Runs `kubectl-squarepeg SUBCOMMAND -n NS ARGS...` the way a user's shell would."""

    def __init__(self, kubesim: Any, namespace: str, home: Path) -> None:
        self.kubesim = kubesim
        self.namespace = namespace
        self.home = home
        self.cwd = home / "cwd"
        self.cwd.mkdir(exist_ok=True)
        self._started: list[subprocess.Popen[bytes]] = []

    def argv(self, args: tuple[str, ...], namespaced: bool) -> list[str]:
        argv: list[str] = [SQUAREPEG, args[0]]
        if namespaced:
            argv += ["-n", self.namespace]
        return argv + list(args[1:])

    def __call__(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        stdout: Any = subprocess.PIPE,
        namespaced: bool = True,
        timeout: float = 120,
    ) -> Finished:
        """Run to the end. `stdout` may be an open file (to check `> file` capture), and
        `namespaced=False` leaves out `-n NS` (for `--context` and in-cluster tests)."""
        done = subprocess.run(
            self.argv(args, namespaced),
            env=isolated_env(self.kubesim, self.home, env),
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=timeout,
        )
        return Finished(done.returncode, done.stdout or b"", done.stderr.decode("utf-8", "replace"))

    def start(self, *args: str, env: Mapping[str, str] | None = None,
              ignoring: Sequence[int] = (), **popen: Any) -> subprocess.Popen[bytes]:
        """Start in the background (stdout and stderr piped unless given); ended at teardown.

        The stop signals are at their defaults, as a shell leaves them for a job in the
        foreground (this suite may itself run as a script's `&` job, which ignores SIGINT),
        except those in `ignoring`, as `nohup` or `&` leave them."""
        popen["preexec_fn"] = stop_signals_as(ignoring, then=popen.get("preexec_fn"))
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        popen.setdefault("stdin", subprocess.DEVNULL)
        process = subprocess.Popen(
            self.argv(args, True), env=isolated_env(self.kubesim, self.home, env),
            cwd=self.cwd, **popen,
        )
        self._started.append(process)
        return process

    def finish(self, process: subprocess.Popen[bytes], timeout: float = 120) -> Finished:
        out, err = process.communicate(timeout=timeout)
        return Finished(process.returncode, out or b"", (err or b"").decode("utf-8", "replace"))

    def close(self) -> None:
        for process in self._started:
            stop_process(process)


LOCALKUBE_SCENARIO_KEYS = frozenset({"images", "options"})

# The first kubectl whose attach speaks WebSocket (v5.channel.k8s.io) unasked; 1.29 has it
# behind KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true, 1.27 and 1.28 not at all (tried on kubesim).
WEBSOCKET_ATTACH_MINOR = 30


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if selected_cluster(config) != "kubesim":
        return
    attaching = [item for item in items if "attach_served" in getattr(item, "fixturenames", ())]
    if not attaching:
        return
    minor = kubectl_minor(config)
    if 0 < minor < WEBSOCKET_ATTACH_MINOR:
        skip = pytest.mark.skip(reason=f"kubectl 1.{minor} attaches over SPDY/3.1 only, which "
                                "kubesim does not speak (its README, differences); the smoke "
                                "cell on localkube runs it")
        for item in attaching:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def kubesim(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubesim]:
    """The selected cluster, shared by the module's tests (see the module docstring); for
    the tests `needs_the_node_agent` marks, one with the node agent."""
    wants_the_agent = getattr(request, "param", None) == NODE_AGENT
    if selected_cluster(request.config) != "localkube":
        yield from kubesim_alone(tmp_path_factory)
    elif not wants_the_agent or localkube_default_node() == "agent":
        yield from serving(request.getfixturevalue("localkube_session"))
    else:
        cluster = Localkube(tmp_path_factory.mktemp("localkube-agent"), node="agent")
        try:
            yield from serving(cluster)
        finally:
            cluster.stop()


# Why the tests of several nodes need localkube: kubesim has one simulated node, whose loss,
# drain or arrival it does not model.
SEVERAL_NODES = ("several real nodes (lost, drained, cordoned): localkube's kubelet nodes "
                 "only; kubesim has one simulated node and no node controller")


def several_nodes(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                  *, nodes: int = 2, node_grace: float | None = 8) -> Iterator[Localkube]:
    """A module's own localkube of `nodes` kubelet nodes whose node controller gives a
    silent node `node_grace` seconds (the release's 50 s would make each node-loss test a
    minute long; None keeps that default), served as `kubesim` is; the module's tests are
    skipped on kubesim and on the node agent. Use it as the module's `kubesim` fixture:
    `yield from several_nodes(request, tmp_path_factory)`."""
    if selected_cluster(request.config) != "localkube":
        pytest.skip(SEVERAL_NODES)
    if localkube_default_node() != "kubelet":
        pytest.skip("several nodes are kubelet nodes (LOCALKUBE_NODE=agent)")
    cluster = Localkube(tmp_path_factory.mktemp("localkube-nodes"), node="kubelet",
                        nodes=nodes, node_grace=node_grace)
    try:
        yield from serving(cluster)
    finally:
        cluster.stop()


@pytest.fixture
def kubesim_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[dict[str, Any] | None], Kubesim]]:
    on_localkube = selected_cluster(request.config) == "localkube"

    def make(scenario: dict[str, Any] | None) -> Kubesim:
        if not on_localkube:
            return start_kubesim(tmp_path_factory, scenario)
        extra = sorted(set(scenario or {}) - LOCALKUBE_SCENARIO_KEYS)
        if extra:
            pytest.skip(f"kubesim only: the scenario's {', '.join(extra)} are kubesim's own "
                        "rules (localkube tests make them with real objects)")
        # With a scenario (the node agent's images and options) its node is the agent.
        return Localkube(tmp_path_factory.mktemp("localkube"), scenario)

    yield from clusters(make)


@pytest.fixture
def squarepeg(kubesim: Any, namespace: str, tmp_path: Path) -> Iterator[Squarepeg]:
    runner = Squarepeg(kubesim, namespace, tmp_path)
    try:
        yield runner
    finally:
        runner.close()


@contextlib.contextmanager
def own_runner(sim: Any, home: Path) -> Iterator[Squarepeg]:
    """A runner in `default` of a cluster of the test's own (`kubesim_factory`); after the
    test, its runs stopped and `default` empty within 30 s (the cluster's stop alone would
    not see a pod squarepeg left)."""
    runner = Squarepeg(sim, "default", home)
    try:
        yield runner
    finally:
        runner.close()
        wait_until(lambda: names(sim, "default") == [], 30, "default to be empty")


def names(kubesim: Any, namespace: str, kinds: str = "pods,jobs") -> list[str]:
    """`kind/name` of everything of `kinds` in the namespace (kubectl's `-o name`, without
    the API group)."""
    done = kubesim.kubectl("get", kinds, "-n", namespace, "-o", "name")
    assert done.returncode == 0, done.stderr
    return [line.replace(".batch/", "/") for line in done.stdout.decode().split()]


def counting_kubectl(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A PATH whose `kubectl` logs each call, then runs the real one."""
    real = shutil.which("kubectl")
    assert real is not None
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    shim = shim_dir / "kubectl"
    shim.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    return {"PATH": f"{shim_dir}{os.pathsep}{os.environ['PATH']}"}, log


_NAME_SELECTOR = re.compile(r"metadata\.name(?:=|%3D)([a-z0-9.-]+)")


def watched_pod(command_line: str) -> str | None:
    """The pod a kubectl command line watches by a field selector on its name, as squarepeg
    starts a run's first watch (`get --raw` of the watch), or None if it is no such watch."""
    found = _NAME_SELECTOR.search(command_line)
    watching = "--watch" in command_line or "watch=true" in command_line
    return found.group(1) if found and watching else None


def _earlier(stamp: str, seconds: float) -> str:
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ") - timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def skip_where_the_kubelet_owns_pod_status(cluster: Any) -> None:
    """Skip a test that ages a pod's finish (`age_the_finish`) on localkube's real-kubelet
    node (its default): its status manager writes the pod's status as it knows it back
    over the patched one within seconds (seen there: the sweep then still found the pod
    young). kubesim's node and localkube's agent leave a finished pod's status alone. Call
    it before the test creates anything."""
    if isinstance(cluster, Localkube) and cluster.node == "kubelet":
        pytest.skip("the real kubelet writes its own finishedAt back over an aged one")


def age_the_finish(kubesim: Any, namespace: str, ref: str, seconds: float) -> None:
    """Make a finished `pod/NAME` or `job/NAME` look as if it had finished `seconds` earlier.

    The sweep never takes what finished less than orphans.FINISHED_FLOOR_SECONDS ago; a test
    of its deletes makes its orphans that old this way instead of waiting. It writes what the
    node or the Job controller would have written, through the status subresource they use:
    a pod's containers' startedAt and finishedAt, a Job's conditions' lastTransitionTime
    (its startTime and completionTime are immutable on a real API server, and the sweep does
    not read them).
    """
    done = kubesim.kubectl("get", ref, "-n", namespace, "-o", "json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout).get("status") or {}
    if ref.startswith("job"):
        key, changes = "conditions", [
            {**cond, "lastTransitionTime": _earlier(cond["lastTransitionTime"], seconds)}
            for cond in status.get("conditions") or []
        ]
    else:
        key, changes = "containerStatuses", []
        for container in status.get("containerStatuses") or []:
            ended = (container.get("state") or {}).get("terminated")
            assert ended, f"{ref} has a container that has not finished: {container}"
            ended = {**ended, **{k: _earlier(ended[k], seconds)
                                 for k in ("startedAt", "finishedAt") if ended.get(k)}}
            changes.append({**container, "state": {"terminated": ended}})
    assert changes, f"{ref} has not finished: {status}"
    # A merge patch replaces a list whole: the list as read, with the times moved.
    patched = kubesim.kubectl("patch", ref, "-n", namespace, "--subresource=status",
                              "--type=merge", "-p", json.dumps({"status": {key: changes}}))
    assert patched.returncode == 0, patched.stderr
