"""Fixtures shared by every test that needs a cluster: kubesim or localkube as a process.

Which cluster the e2e tests use: `--cluster kubesim|localkube` or the environment variable
SQUAREPEG_TEST_CLUSTER (default kubesim). Tests outside tests/e2e always use kubesim.

- `kubesim` (module scope): `scripts/kubesim serve` in its own process group on a free port,
  with a fresh directory for its kubeconfig and its own KUBECACHEDIR. Yields a `Kubesim`:
  `.kubeconfig` (Path), `.env` (os.environ + KUBECONFIG + KUBECACHEDIR), `.url`, `.token`,
  `.context` (the kubeconfig's context name), `.ctl(*args) -> str` (scripts/kubesim ctl;
  raises on failure) and `.kubectl(*args, input=None, check=False) -> CompletedProcess` (the
  real kubectl, bytes). While it is active, KUBECONFIG and KUBECACHEDIR are also set in
  os.environ (in-process code such as kubectl_squarepeg.cluster.kubectl.run starts kubectl with
  os.environ). tests/e2e/conftest.py overrides it with the selected cluster.
- `localkube_session` (session scope): one `scripts/localkube serve` for the whole run (the
  real control plane takes seconds to start, not milliseconds), with localkube's default
  node, the real kubelet (LOCALKUBE_NODE=agent picks the node agent), at the Kubernetes
  release `--localkube-release MINOR` names (or LOCALKUBE_RELEASE; default localkube's
  first, 1.34: the option sets LOCALKUBE_RELEASE for the session, which every
  `scripts/localkube` the tests start reads); a `Localkube` has the
  same attributes plus `.node` ("kubelet" or "agent"), its `ctl` runs `scripts/localkube
  ctl` (restart, delete-pod; evict and drop-logs on the agent node only).
- `kubesim_factory` (function scope): `factory(scenario: dict | None = None) -> Kubesim`, a
  simulator of the test's own; every one is stopped at teardown.
- `namespace` (function scope): a fresh namespace (on localkube: once its `default` service
  account exists, as pods are refused before); at teardown it waits for no pod and no Job to
  be left in it and fails the test if some are (then force-deletes them).
- Markers: `kubesim_only(reason)` skips a test on localkube, `localkube_only(reason)` on
  kubesim; the reason names the fault or object only one cluster has. `smoke(concern)` marks
  the dozen e2e tests CI runs with each other kubectl (`-m smoke`), one per concern.
- `--quick` (scripts/test --quick, the inner loop): of tests/e2e only the smoke set, nothing
  of tests/kubesim or tests/localkube, the unit and property tests but the property grids
  (QUICK_LEAVES_OUT: every key and flag with every tricky value, minutes of CPU; CI runs
  them).
- Under pytest-xdist (`-n N --dist loadfile --no-loadscope-reorder`, scripts/test's kubesim
  phase) a test file runs whole on one worker, so a module's `kubesim` starts once, as
  without xdist. Every worker has its own basetemp, so the clusters' directories, kubeconfigs,
  KUBECACHEDIR and the e2e runs' XDG config and cache homes (tests/e2e/conftest.py)
  are its own; kubesim listens on a port the kernel picks; no test writes to ~/.kube or to
  squarepeg's own places in HOME. The one place outside the temporary directories, the
  release wheel cache (build/release-cache/), is written by test_packaging.py alone on
  kubesim (test_in_cluster.py builds only on the kubelet node, whose phase runs in one
  process). The slowest files are handed out first (SLOW_FIRST), so that none starts last.
  The files of TIMING_SENSITIVE are marked `timing_sensitive`: scripts/test runs them in one
  process once the workers are done (`-m "not timing_sensitive"` with `-n`, then `-m
  timing_sensitive` without).
  (`--dist loadgroup` would be the tool for files that must share a worker: with pytest 9.2
  and xdist 3.8 it does not group, as xdist renames item._nodeid, which pytest no longer
  reads.)
- Which kubectl: `--kubectl VERSION|PATH` or SQUAREPEG_TEST_KUBECTL (default: the first on
  PATH). `1.27` is `kubectl.1.27` beside (or on) PATH, as the machine's dispatcher keeps them;
  a path is that binary. It is put first on os.environ's PATH, as `kubectl`, for the whole
  session, so the clusters' fixtures, kubesim's ctl and every product run use it; the report
  header names its version. `kubectl_minor(config)` is that version's minor number.

At teardown a cluster gets SIGTERM, then SIGKILL for its whole group if it has not ended
within the deadline, and the teardown fails if any process started under it is still alive.
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
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import wait_until
from tests.kubesim.launcher import alive, descendants
from tests.localkube import build
from tests.localkube.private_registry import PrivateRegistry

ROOT = Path(__file__).resolve().parent.parent
KUBESIM = ROOT / "scripts" / "kubesim"
LOCALKUBE = ROOT / "scripts" / "localkube"
CLUSTERS = ("kubesim", "localkube")
READY_SECONDS = 30.0
LOCALKUBE_READY_SECONDS = 180.0
LOCALKUBE_BUILD_SECONDS = 3600.0
STOP_SECONDS = 20.0
NAMESPACE_DRAIN_SECONDS = 15.0
KUBECTL_SECONDS = 60.0


class KubesimError(RuntimeError):
    """A cluster did not start, or a ctl call failed."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--cluster", choices=CLUSTERS, default=None,
                     help="the cluster of the e2e tests (default: $SQUAREPEG_TEST_CLUSTER, "
                          "else kubesim)")
    parser.addoption("--kubectl", default=None, metavar="VERSION|PATH",
                     help="the kubectl of the tests: a version (1.27 = kubectl.1.27 beside "
                          "the kubectl on PATH) or a path (default: $SQUAREPEG_TEST_KUBECTL, "
                          "else the kubectl on PATH)")
    parser.addoption("--quick", action="store_true",
                     help="the inner loop (scripts/test --quick): of tests/e2e only the smoke "
                          "set, nothing of tests/kubesim or tests/localkube, no property grids")
    parser.addoption("--localkube-release", default=None, metavar="MINOR",
                     help="the Kubernetes release of localkube (--cluster localkube): 1.34 "
                          "or 1.37 (default: $LOCALKUBE_RELEASE, else 1.34)")
    parser.addoption("--cluster-tests-only", action="store_true",
                     help="leave out the e2e tests that talk to no cluster (they asked for "
                          "none of CLUSTER_FIXTURES and are not localkube_only): scripts/test's "
                          "localkube phase, whose kubesim phase ran them already")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kubesim_only(reason): needs what only kubesim has")
    config.addinivalue_line("markers", "localkube_only(reason): needs the real control plane")
    config.addinivalue_line("markers", "needs_the_node_agent(reason): a fault only the node "
                            "agent makes (tests/e2e/conftest.py's needs_the_node_agent)")
    config.addinivalue_line("markers", "smoke(concern): one of the dozen e2e tests run with "
                            "each other kubectl (`-m smoke --kubectl 1.27`)")
    config.addinivalue_line("markers", "timing_sensitive: a file of TIMING_SENSITIVE "
                            "(tests/conftest.py), run in one process beside no xdist worker")
    config.addinivalue_line("markers", "waits_long: takes minutes by itself (a node "
                            "controller's grace, a soak, twenty long runs in a row); "
                            "scripts/test runs these as a cell beside the localkube workers")
    release = config.getoption("--localkube-release")
    try:
        # Every scripts/localkube the session starts (and tests that read the release's
        # binaries) follow LOCALKUBE_RELEASE.
        os.environ[build.RELEASE_VARIABLE] = build.selected(release).version
    except build.UnknownRelease as exc:
        raise pytest.UsageError(str(exc)) from None
    chosen = config.getoption("--kubectl") or os.environ.get("SQUAREPEG_TEST_KUBECTL")
    if chosen:
        _put_kubectl_first(config, find_kubectl(chosen))


def find_kubectl(chosen: str) -> Path:
    """The binary `--kubectl` names: a path, or `kubectl.VERSION` on PATH or beside the
    kubectl on PATH (the dispatcher's folder holds kubectl.1.27 ... kubectl.1.33)."""
    if os.sep in chosen or not re.fullmatch(r"\d+\.\d+", chosen):
        path = Path(chosen).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise pytest.UsageError(f"--kubectl {chosen}: no executable file there; give a "
                                    "version such as 1.27 or a kubectl's path")
        return path.resolve()
    name = f"kubectl.{chosen}"
    found = shutil.which(name)
    dispatcher = shutil.which("kubectl")
    if found is None and dispatcher is not None:
        beside = Path(dispatcher).resolve().parent / name
        found = str(beside) if os.access(beside, os.X_OK) else None
    if found is None:
        raise pytest.UsageError(f"--kubectl {chosen}: no {name} on PATH or beside the kubectl "
                                "on PATH; give the kubectl's path instead")
    return Path(found).resolve()


def _put_kubectl_first(config: pytest.Config, binary: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="squarepeg-kubectl-"))
    (folder / "kubectl").symlink_to(binary)
    os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


def kubectl_version() -> str:
    """gitVersion of the kubectl first on PATH (`v1.27.16`), or "" when it cannot say."""
    try:
        done = subprocess.run(["kubectl", "version", "--client", "-o", "json"],
                              capture_output=True, timeout=KUBECTL_SECONDS,
                              stdin=subprocess.DEVNULL)
        return str(json.loads(done.stdout)["clientVersion"]["gitVersion"])
    except (OSError, ValueError, KeyError, TypeError, subprocess.TimeoutExpired):
        return ""


def kubectl_minor(config: pytest.Config) -> int:
    """The minor version of the session's kubectl (27 for v1.27.16); 0 if unknown."""
    cached = config.stash.get(_KUBECTL_VERSION, None)
    if cached is None:
        cached = kubectl_version()
        config.stash[_KUBECTL_VERSION] = cached
    match = re.match(r"v?1\.(\d+)", cached)
    return int(match.group(1)) if match else 0


_KUBECTL_VERSION = pytest.StashKey[str]()


def pytest_report_header(config: pytest.Config) -> str:
    kubectl_minor(config)
    cluster = selected_cluster(config)
    if cluster == "localkube":
        cluster += f" {build.selected().version}"
    return (f"kubectl: {config.stash[_KUBECTL_VERSION] or 'version unknown'} "
            f"({shutil.which('kubectl')}); cluster: {cluster}")


def selected_cluster(config: pytest.Config) -> str:
    chosen = config.getoption("--cluster") or os.environ.get("SQUAREPEG_TEST_CLUSTER") \
        or "kubesim"
    if chosen not in CLUSTERS:
        raise pytest.UsageError(f"SQUAREPEG_TEST_CLUSTER={chosen!r}: use one of {CLUSTERS}")
    return str(chosen)


def _test_folder(item: pytest.Item) -> str:
    """The folder under tests/ that holds the test (e2e, kubesim, localkube, unit, ...)."""
    try:
        return Path(item.path).resolve().relative_to(ROOT / "tests").parts[0]
    except (ValueError, IndexError):
        return ""


# The files that take longest (docs/ci-time.md, 2026-12-07), handed out first to
# pytest-xdist's workers; the others keep their order.
SLOW_FIRST = (
    "e2e/test_output_complete_kubelet.py",  # the localkube phase's: 20 + 10 runs, 600-900 s
    "e2e/test_detached.py",
    "property/test_grids.py",
    "e2e/test_failure_paths.py",
    "property/test_no_traceback.py",
    "e2e/test_cli_dry_run.py",
    "e2e/test_run.py",
)
# Files whose tests hold a cluster's faults to seconds (an API server down 2 s, a Killing
# event within 5 s), a pty, signals, or 20 runs at once: marked `timing_sensitive`, which
# scripts/test runs in one process after the xdist workers (`-m timing_sensitive`), as the
# first four failed beside two other workers at a median load of 15.6 (docs/ci-time.md).
TIMING_SENSITIVE = (
    "e2e/test_soak.py",
    "e2e/test_sweep_live_runs.py",
    "kubesim/test_cluster_kubelet.py",
    "kubesim/test_kubectl_cluster.py",
    "e2e/test_interrupt_e2e.py",
    "e2e/test_interactive.py",
)


def _test_file(item: pytest.Item) -> str:
    """The test's file under tests/ (`e2e/test_run.py`)."""
    try:
        return Path(item.path).resolve().relative_to(ROOT / "tests").as_posix()
    except ValueError:
        return str(item.path)


# What `--quick` leaves out of the unit and property tests: 170 s of CPU in one process
# (docs/ci-time.md), more than the inner loop's whole budget.
QUICK_LEAVES_OUT = ("property/test_grids.py",)


def _quick(items: list[pytest.Item]) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """Kept and deselected items of `--quick`."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        folder = _test_folder(item)
        slow = folder in ("kubesim", "localkube") or (
            folder == "e2e" and item.get_closest_marker("smoke") is None) or (
            _test_file(item) in QUICK_LEAVES_OUT)
        (dropped if slow else kept).append(item)
    return kept, dropped


# The fixtures through which an e2e test reaches a cluster. A test that asks for none of them
# (the dry runs, the release and wheel builds against an unreachable kubeconfig) does the
# same on every cluster, so a second phase on another cluster has nothing to add.
CLUSTER_FIXTURES = frozenset({"kubesim", "kubesim_factory", "localkube_session"})


def _talks_to_a_cluster(item: pytest.Item) -> bool:
    return (_test_folder(item) != "e2e"
            or bool(CLUSTER_FIXTURES & set(getattr(item, "fixturenames", ())))
            or item.get_closest_marker("localkube_only") is not None)


_CLUSTER_FREE_LEFT_OUT = pytest.StashKey[int]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--quick"):
        items[:], dropped = _quick(items)
        config.hook.pytest_deselected(items=dropped)
    if config.getoption("--cluster-tests-only"):
        left_out = [item for item in items if not _talks_to_a_cluster(item)]
        items[:] = [item for item in items if _talks_to_a_cluster(item)]
        config.hook.pytest_deselected(items=left_out)
        config.stash[_CLUSTER_FREE_LEFT_OUT] = len(left_out)
    if os.environ.get("PYTEST_XDIST_WORKER"):  # every worker sorts alike: xdist checks
        rank = {name: i for i, name in enumerate(SLOW_FIRST)}
        items.sort(key=lambda item: rank.get(_test_file(item), len(rank)))
    for item in items:
        if _test_file(item) in TIMING_SENSITIVE:
            item.add_marker(pytest.mark.timing_sensitive)
    cluster = selected_cluster(config)
    for item in items:
        folder = _test_folder(item)
        if folder == "localkube" and cluster != "localkube":
            item.add_marker(pytest.mark.skip(reason="localkube's own tests run with "
                                             "--cluster localkube (scripts/test's 2nd phase)"))
        for name, other in (("kubesim_only", "localkube"), ("localkube_only", "kubesim")):
            marker = item.get_closest_marker(name)
            if marker is not None and cluster == other and folder == "e2e":
                reason = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
                item.add_marker(pytest.mark.skip(reason=f"{name.replace('_', ' ')}: {reason}"))


_PROPERTY_CASES = "property_cases"


def _property_cases() -> dict[str, int] | None:
    """The property suites' count of cases by kind, when they ran in this process."""
    harness = sys.modules.get("tests.property.harness")
    return None if harness is None else harness.CASES.counts


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    counts = _property_cases()
    if workeroutput is not None and counts:  # an xdist worker: to the controller
        workeroutput[_PROPERTY_CASES] = dict(counts)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's: a worker has finished
def pytest_testnodedown(node: Any, error: object) -> None:
    counts = getattr(node, "workeroutput", {}).get(_PROPERTY_CASES)
    if counts:
        from tests.property.harness import CASES
        for kind, n in counts.items():
            CASES.counts[kind] = CASES.counts.get(kind, 0) + n


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    left_out = terminalreporter.config.stash.get(_CLUSTER_FREE_LEFT_OUT, 0)
    if left_out:
        terminalreporter.write_line(
            f"--cluster-tests-only: {left_out} e2e tests that talk to no cluster were left out "
            "(they ran in the kubesim phase)")
    counts = _property_cases()
    if counts:
        counted = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        terminalreporter.write_line(
            f"property suites: {sum(counts.values())} cases ran ({counted})")


class Kubesim:
    """One running `scripts/kubesim serve` process and how to talk to it."""

    script = KUBESIM
    name = "kubesim"
    context = "kubesim"
    ready_seconds = READY_SECONDS
    ctl_seconds = 120.0

    def __init__(self, workdir: Path, scenario: dict[str, Any] | None = None):
        self.workdir = workdir
        self.kubeconfig = workdir / "kubeconfig"
        self.cache = workdir / "kube-cache"
        self.out = workdir / f"{self.name}.out"
        self.err = workdir / f"{self.name}.err"
        argv = [str(self.script), "serve", "--kubeconfig", str(self.kubeconfig),
                *self.serve_argv()]
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

    def serve_argv(self) -> list[str]:
        """Arguments of `serve` beyond the kubeconfig and the scenario."""
        return []

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_seconds
        while time.monotonic() < deadline:
            text = self.out.read_text(encoding="utf-8", errors="replace")
            match = re.search(rf"{self.name}: ready on (https://\S+)", text)
            if match and self.kubeconfig.exists():
                self.url = match.group(1)
                config = yaml.safe_load(self.kubeconfig.read_text(encoding="utf-8"))
                self.token = config["users"][0]["user"]["token"]
                return
            if self.process.poll() is not None:
                raise KubesimError(f"{self.name} exited with {self.process.returncode} before "
                                   f"it was ready:\n{self.err.read_text(errors='replace')}")
            time.sleep(0.02)
        raise KubesimError(f"{self.name} was not ready within {self.ready_seconds:g}s:\n"
                           f"{self.err.read_text(errors='replace')}")

    def ctl_run(self, *args: str,
                timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        """`scripts/NAME ctl --kubeconfig K ARGS...` to its end, whatever its exit: for the
        tests of its refusals (within `ctl_seconds` unless `timeout` says otherwise)."""
        return subprocess.run([str(self.script), "ctl", "--kubeconfig", str(self.kubeconfig),
                               *args], env=self.env, capture_output=True,
                              timeout=timeout or self.ctl_seconds, stdin=subprocess.DEVNULL)

    def ctl(self, *args: str) -> str:
        """`scripts/NAME ctl --kubeconfig K ARGS...`; its stdout, or KubesimError."""
        done = self.ctl_run(*args)
        if done.returncode != 0:
            raise KubesimError(f"{self.name} ctl {' '.join(args)} failed ({done.returncode}): "
                               f"{done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode()

    def stats(self) -> dict[str, Any]:
        return json.loads(self.ctl("stats"))  # type: ignore[no-any-return]

    def kubectl(self, *args: str, input: bytes | None = None, check: bool = False,
                timeout: float = KUBECTL_SECONDS,
                binary: str = "kubectl") -> subprocess.CompletedProcess[bytes]:
        """The real kubectl (or `binary`) against this simulator; stdout and stderr as bytes."""
        return subprocess.run([binary, *args], env=self.env, input=input,
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
                raise KubesimError(f"{self.name} did not stop within {STOP_SECONDS:g}s of "
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
            assert not left, f"processes started under {self.name} outlived it: {sorted(left)}"
            assert code == 0, \
                f"{self.name} exited {code}:\n{self.err.read_text(errors='replace')}"

    def _kill_group(self) -> None:
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)


def localkube_default_node() -> str:
    """The node of a localkube started without a scenario: LOCALKUBE_NODE, else localkube's
    own default, the real kubelet."""
    return os.environ.get("LOCALKUBE_NODE") or "kubelet"


class Localkube(Kubesim):
    """One running `scripts/localkube serve`: the real control plane and its node (the real
    kubelet, or the node agent: `node`, or always with a scenario, which is the agent's)."""

    script = LOCALKUBE
    name = "localkube"
    context = "localkube"
    ready_seconds = LOCALKUBE_READY_SECONDS
    # The kubelet node's registry host that refuses a pull without these credentials
    # (tests/localkube/private_registry.py); the node agent pulls nothing.
    private_registry = PrivateRegistry()

    def __init__(self, workdir: Path, scenario: dict[str, Any] | None = None,
                 node: str | None = None, *, nodes: int = 1,
                 node_grace: float | None = None):
        self.node = node or ("agent" if scenario is not None else localkube_default_node())
        # Several kubelet nodes (`serve --nodes N`) and the controller manager's node grace
        # (`--node-grace`): issue 34's tests of a node lost, drained or added.
        self.nodes = nodes
        self.node_grace = node_grace
        if nodes > 1:
            # Each extra node starts its own kubelet and containerd before `ready`.
            self.ready_seconds = LOCALKUBE_READY_SECONDS + 120.0 * (nodes - 1)
        super().__init__(workdir, scenario)

    def serve_argv(self) -> list[str]:
        argv = ["--node", self.node]
        if self.nodes != 1:
            argv += ["--nodes", str(self.nodes)]
        if self.node_grace is not None:
            argv += ["--node-grace", f"{self.node_grace:g}"]
        return argv


def build_localkube() -> None:
    """`scripts/localkube build`: nothing when the binaries are cached, else the Go build
    (the control plane and the default node's)."""
    done = subprocess.run([str(LOCALKUBE), "build"], capture_output=True,
                          timeout=LOCALKUBE_BUILD_SECONDS, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise KubesimError(f"scripts/localkube build failed ({done.returncode}):\n"
                           f"{done.stderr.decode(errors='replace')}")


@pytest.fixture(scope="session")
def localkube_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Localkube]:
    build_localkube()
    cluster = Localkube(tmp_path_factory.mktemp("localkube"))
    try:
        yield cluster
    finally:
        cluster.stop()


def start_kubesim(tmp_path_factory: pytest.TempPathFactory,
           scenario: dict[str, Any] | None) -> Kubesim:
    return Kubesim(tmp_path_factory.mktemp("kubesim"), scenario)


def serving(cluster: Kubesim) -> Iterator[Kubesim]:
    """Yield `cluster` with its KUBECONFIG and KUBECACHEDIR set in os.environ."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KUBECONFIG", str(cluster.kubeconfig))
        patch.setenv("KUBECACHEDIR", str(cluster.cache))
        yield cluster


def clusters(make: Callable[[dict[str, Any] | None], Kubesim],
             ) -> Iterator[Callable[[dict[str, Any] | None], Kubesim]]:
    """A factory of clusters made by `make(scenario)`, each the active one once made, all
    stopped (and checked) at the end."""
    started: list[Kubesim] = []
    with pytest.MonkeyPatch.context() as patch:

        def factory(scenario: dict[str, Any] | None = None) -> Kubesim:
            cluster = make(scenario)
            started.append(cluster)
            patch.setenv("KUBECONFIG", str(cluster.kubeconfig))
            patch.setenv("KUBECACHEDIR", str(cluster.cache))
            return cluster

        try:
            yield factory
        finally:
            problems = []
            for cluster in started:
                try:
                    cluster.stop()
                except (AssertionError, KubesimError) as exc:
                    problems.append(str(exc))
            assert not problems, "\n".join(problems)


def kubesim_alone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubesim]:
    sim = start_kubesim(tmp_path_factory, None)
    try:
        yield from serving(sim)
    finally:
        sim.stop()


@pytest.fixture(scope="module")
def kubesim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubesim]:
    yield from kubesim_alone(tmp_path_factory)


@pytest.fixture
def kubesim_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[dict[str, Any] | None], Kubesim]]:
    yield from clusters(lambda scenario: start_kubesim(tmp_path_factory, scenario))


def _service_account_exists(sim: Kubesim, namespace: str) -> bool:
    return sim.kubectl("get", "serviceaccount", "default", "-n", namespace).returncode == 0


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
    if isinstance(kubesim, Localkube):
        # The service-account controller makes it; right after an API server restart its
        # informers are still in their reconnect backoff (up to 30 s in client-go), so the
        # wait allows for that twice over.
        wait_until(lambda: _service_account_exists(kubesim, name), 90,
                   f"the default service account of namespace {name}")
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
