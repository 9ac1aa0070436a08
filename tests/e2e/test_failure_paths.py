"""The run's failure paths, as a user meets them: nothing lost, nothing misleading.

Each test runs the installed `kubectl-squarepeg` with the real kubectl against kubesim and
checks what the user sees: the exit code, stdout, and that every kubectl command a message
names still works after squarepeg's cleanup, carrying the run's --context and namespace.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Localkube
from tests.e2e.conftest import (
    CLIENT_SIDE_LOG_DROP,
    NODE_AGENT,
    Squarepeg,
    isolated_env,
    names,
    own_runner,
    wait_until,
)

# The shell is PID 1 and has no SIGTERM handler: a deleted sleeper lasts its grace period,
# on the real node and on kubesim alike; a short one keeps the tests short.
STOP_TIMEOUT = ("--stop-timeout", "2")
SLEEPER = (*STOP_TIMEOUT, "alpine", "sh", "-c", "echo ready; sleep 120")


def named_commands(text: str) -> list[list[str]]:
    """Every `kubectl ...` command quoted in backticks in squarepeg's messages, but for a
    template the user fills in (`create secret docker-registry NAME ...`, decision 0424)."""
    found = [shlex.split(quoted) for quoted in re.findall(r"`(kubectl [^`]+)`", text)]
    return [argv for argv in found if "NAME" not in argv]


def assert_commands_work_after_cleanup(kubesim: Any, done: Any, namespace: str) -> None:
    commands = named_commands(done.stderr)
    assert commands, done.stderr
    for argv in commands:
        assert "describe" not in argv, argv  # the pod it would describe is gone
        assert f"--context={kubesim.context}" in argv and f"--namespace={namespace}" in argv, \
            argv
        ran = kubesim.kubectl(*argv[1:])
        assert ran.returncode == 0, (argv, ran.stderr)


def run_sleeper_until(
    squarepeg: Squarepeg, tmp_path: Path, name: str, fault: Callable[[Any], object]
) -> Any:
    """Run a sleeper pod NAME with --context; once it printed, call `fault(process)`; the
    finished run."""
    out = tmp_path / "stdout"
    with out.open("wb") as handle:
        process = squarepeg.start("run", "--context", squarepeg.kubesim.context, "--name", name,
                                  *SLEEPER,
                                  stdout=handle)
    wait_until(lambda: out.read_bytes() == b"ready\n", 60, "the container's first line")
    fault(process)
    return squarepeg.finish(process, timeout=60)


# --- nothing lost ---------------------------------------------------------------------------


@pytest.fixture
def own_cluster(kubesim_factory: Any, tmp_path: Path) -> Iterator[tuple[Any, Squarepeg]]:
    """A simulator of the test's own (its API server goes down), and a runner in `default`."""
    sim = kubesim_factory(None)
    with own_runner(sim, tmp_path) as runner:
        yield sim, runner


def test_an_api_server_down_longer_than_the_reconnects_loses_no_output(
    own_cluster: tuple[Any, Squarepeg], tmp_path: Path
) -> None:
    sim, runner = own_cluster
    out = tmp_path / "stdout"
    script = "for i in $(seq 1 40); do echo line $i; sleep 0.5; done"
    with out.open("wb") as handle:
        process = runner.start("run", "--context", sim.context, "alpine", "sh", "-c", script,
                               stdout=handle)
    wait_until(lambda: b"line 3\n" in out.read_bytes(), 60, "the first lines")
    sim.ctl("restart", "--down", "25")  # the reconnects give up after about 16 s
    done = runner.finish(process, timeout=150)
    assert done.code == 0, done.stderr
    assert out.read_bytes() == b"".join(b"line %d\n" % i for i in range(1, 41))
    assert done.has_line("5 reconnects failed", "fetched once the container has ended")
    assert not done.has_line("lost the log stream"), done.lines


@pytest.mark.kubesim_only("kubesim's own fault: an API server going down at a DELETE")
@pytest.mark.parametrize("mode", ["pod", "job"])
def test_an_api_server_going_down_at_the_delete_still_gets_the_delete(
    own_cluster: tuple[Any, Squarepeg], mode: str
) -> None:
    sim, runner = own_cluster
    name = f"at-delete-{mode}"
    sim.ctl("restart", "--down", "3", "--at-delete-of", name)
    done = runner("run", "--context", sim.context, "--name", name, "--mode", mode,
                  "alpine", "sh", "-c", "echo hi; exit 7")
    assert (done.code, done.stdout) == (7, b"hi\n"), done.stderr
    assert not done.has_line("could not delete"), done.lines
    assert sim.stats()["restartArmedAtDeleteOf"] is None, "the fault did not fire"
    wait_until(lambda: names(sim, "default") == [], 30, "the run's resource to be gone")


NO_RESUME = """#!/bin/sh
# The real kubectl, except that a log stream can never be resumed.
for word in "$@"; do
  case "$word" in *sinceTime=*) echo "error: unexpected EOF" >&2; exit 1;; esac
done
exec "{real}" "$@"
"""


@pytest.mark.kubesim_only(CLIENT_SIDE_LOG_DROP)
def test_output_that_cannot_be_completed_keeps_the_pod_and_says_how_to_read_it(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    real = shutil.which("kubectl")
    assert real is not None
    shim = tmp_path / "no-resume" / "kubectl"
    shim.parent.mkdir()
    shim.write_text(NO_RESUME.format(real=real))
    shim.chmod(0o755)
    env = {"PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}"}
    out = tmp_path / "stdout"
    with out.open("wb") as handle:
        process = squarepeg.start(
            "run", "--context", kubesim.context, "--name", "unread", "alpine", "sh", "-c",
            "echo first; sleep 8; echo second", env=env, stdout=handle,
        )
    try:
        wait_until(lambda: out.read_bytes() == b"first\n", 60, "the first line")
        kubesim.ctl("drop-logs")
        done = squarepeg.finish(process, timeout=120)
        assert done.code == 125, done.stderr  # never the container's code over a gap (0120)
        assert out.read_bytes() == b"first\n"
        assert done.has_line("kept pod/unread", "labelled squarepeg.io/keep",
                             "could not all be read"), done.lines
        labels = kubesim.kubectl("get", "pod", "unread", "-n", namespace, "-o",
                                 "jsonpath={.metadata.labels.squarepeg\\.io/keep}")
        assert labels.stdout == b"true", labels
        logs = [argv for argv in named_commands(done.stderr) if argv[1] == "logs"]
        assert logs and f"--context={kubesim.context}" in logs[0], done.stderr
        assert kubesim.kubectl(*logs[0][1:]).stdout == b"first\nsecond\n"
    finally:
        kubesim.kubectl("delete", "pod", "unread", "-n", namespace, "--wait=false")


def test_a_pipe_closed_by_its_reader_is_not_blamed(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    process = squarepeg.start("run", "--name", "yes", *STOP_TIMEOUT, "alpine", "sh", "-c",
                              "while true; do echo y; done")
    assert process.stdout is not None
    assert process.stdout.readline() == b"y\n"
    process.stdout.close()  # what `| head -1` does once it has its line
    process.stdout = None
    done = squarepeg.finish(process, timeout=60)
    assert done.code == 141, done.stderr  # as any writer whose reader left (SIGPIPE)
    assert not any("warning" in line or "error" in line for line in done.lines), done.lines
    # It does not wait for the pod, whose shell ignores the SIGTERM: it says so.
    assert done.has_line("pod/yes is terminating", "killed if it has not exited within 2s"), \
        done.lines
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")


def test_run_piped_into_head_prints_its_line_without_a_warning(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    """The pipeline itself, as typed in a shell: `kubectl squarepeg run ... | head -1`."""
    argv = squarepeg.argv(("run", *STOP_TIMEOUT, "alpine", "sh", "-c",
                           "while true; do echo y; done"), True)
    done = subprocess.run(
        ["sh", "-c", f"{shlex.join(argv)} | head -1"],
        env=isolated_env(kubesim, squarepeg.home), cwd=squarepeg.cwd,
        stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False,
    )
    assert (done.returncode, done.stdout) == (0, b"y\n"), done.stderr
    said = done.stderr.decode().splitlines()
    assert not any("warning" in line or "error" in line for line in said), said
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")


# --- hints never name what is gone ------------------------------------------------------------


@pytest.mark.parametrize(
    ("kubesim", "name", "fault", "said"),
    [
        # The Evicted event says what the status says: it is quoted once.
        pytest.param(NODE_AGENT, "evicted", "evict",
                     ("pod evicted was evicted", "The node was low on resource"), id="evicted",
                     marks=pytest.mark.needs_the_node_agent(
                         "ctl evict: a node-pressure eviction, which only the node agent "
                         "makes on demand")),
        pytest.param(None, "taken", "delete-pod", ("pod taken was deleted", "events:", "Killing"),
                     id="taken"),
    ],
    indirect=["kubesim"],
)
def test_a_pod_ended_by_others_is_said_so_with_commands_that_still_work(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path,
    name: str, fault: str, said: tuple[str, ...],
) -> None:
    done = run_sleeper_until(squarepeg, tmp_path, name,
                             lambda _: kubesim.ctl(fault, f"{namespace}/{name}"))
    assert done.code == 125, done.stderr
    assert done.has_line(*said), done.lines
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be gone")
    assert_commands_work_after_cleanup(kubesim, done, namespace)


def test_an_image_pull_failure_quotes_the_events_and_names_commands_that_still_work(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    done = squarepeg("run", "--context", squarepeg.kubesim.context, "no-such-image:1.0", "true")
    assert done.code == 125, done.stderr
    assert done.has_line("cannot start: ErrImagePull", "events: Warning Failed"), done.lines
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")
    assert_commands_work_after_cleanup(kubesim, done, namespace)


MISSING_SECRET = """
kubernetes:
  spec:
    containers:
    - name: main
      env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: not-there, key: token}}}]
"""


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        # Its only event (Failed: `Error: secret "not-there" not found`) says what the
        # status says: it is quoted once.
        (("--config", "MISSING_SECRET"),
         ("cannot start: CreateContainerConfigError", 'secret "not-there" not found',
          "Secret and ConfigMap")),
        (("--timeout", "3", "-m", "900g"),
         ("did not start within the startup timeout of 3s",
          "events: Warning FailedScheduling", "Insufficient memory")),
    ],
    ids=["config-error", "startup-timeout"],
)
def test_a_start_that_cannot_succeed_quotes_the_events_and_names_commands_that_still_work(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path,
    flags: tuple[str, ...], said: tuple[str, ...],
) -> None:
    config = tmp_path / "missing-secret.yaml"
    config.write_text(MISSING_SECRET)
    given = [str(config) if flag == "MISSING_SECRET" else flag for flag in flags]
    done = squarepeg("run", "--context", kubesim.context, *given, "alpine", "true")
    assert done.code == 125, done.stderr
    assert done.has_line("error:", *said), done.stderr
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")
    assert_commands_work_after_cleanup(kubesim, done, namespace)


# --- a command that cannot start --------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "code", "reason"),
    [
        ("nosuchcmd", 127, 'exec: "nosuchcmd": executable file not found in $PATH'),
        ("/etc/passwd", 126, 'exec: "/etc/passwd": permission denied'),
    ],
)
def test_a_command_that_cannot_start_exits_as_under_docker(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, command: str, code: int, reason: str
) -> None:
    done = squarepeg("run", "alpine", command)
    assert done.code == code, done.stderr
    assert done.has_line("error:", "could not run its command", reason), done.lines
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")


# --- the words typed --------------------------------------------------------------------------


def test_dollars_reach_the_container_as_typed(squarepeg: Squarepeg) -> None:
    done = squarepeg("run", "-e", "X=expanded", "alpine", "sh", "-c", "echo $$; echo '$(X)'")
    assert done.code == 0, done.stderr
    pid, literal = done.stdout.decode().splitlines()
    assert pid.isdigit(), done.stdout
    assert literal == "$(X)"


def test_dry_run_says_the_dollars_are_escaped(squarepeg: Squarepeg) -> None:
    done = squarepeg("run", "--dry-run", "alpine", "sh", "-c", "echo $$")
    assert done.code == 0, done.stderr
    assert b"echo $$$$" in done.stdout
    assert done.has_line("every `$`", "written `$$`")
    plain = squarepeg("run", "--dry-run", "alpine", "echo", "hi")
    assert not plain.has_line("every `$`")


# --- signals ----------------------------------------------------------------------------------


def test_sighup_cleans_up_and_exits_129(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    done = run_sleeper_until(squarepeg, tmp_path, "hungup",
                             lambda process: process.send_signal(signal.SIGHUP))
    assert done.code == 129, done.stderr
    # What a first Ctrl-C says, once, and nothing more (no error line after it).
    said = [line for line in done.lines if "interrupted" in line or "error:" in line]
    assert said == ["squarepeg: warning: interrupted (SIGHUP): stopping and deleting pod/hungup"], \
        done.lines
    assert done.has_line("pod/hungup is terminating"), done.lines
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")


def test_a_stop_signal_it_was_started_ignoring_does_not_stop_the_run(
    squarepeg: Squarepeg, kubesim: Any, namespace: str, tmp_path: Path
) -> None:
    # `nohup` ignores SIGHUP and a script's `cmd &` ignores SIGINT so that they do not
    # stop the command.
    out = tmp_path / "stdout"
    with out.open("wb") as handle:
        process = squarepeg.start("run", "alpine", "sh", "-c", "echo ready; sleep 3; echo done",
                                  ignoring=(signal.SIGHUP, signal.SIGINT), stdout=handle)
    wait_until(lambda: out.read_bytes().startswith(b"ready\n"), 60, "the container's first line")
    process.send_signal(signal.SIGHUP)
    process.send_signal(signal.SIGINT)
    done = squarepeg.finish(process, timeout=60)
    assert done.code == 0, done.stderr
    assert out.read_bytes() == b"ready\ndone\n"
    assert not done.has_line("interrupted"), done.lines
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")


# --- fail fast --------------------------------------------------------------------------------


def test_pull_never_with_a_missing_image_fails_fast_not_at_the_timeout(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    done = squarepeg("run", "--pull", "never", "--timeout", "600", "not-on-the-node:1", "true",
                     timeout=120)
    assert done.code == 125, done.stderr
    assert done.has_line("cannot start: ErrImageNeverPull", "--pull missing"), done.lines
    assert not done.has_line("startup timeout")
    wait_until(lambda: names(kubesim, namespace) == [], 30, "the pod to be deleted")


# --- the sweep --------------------------------------------------------------------------------

ORPHAN = """
apiVersion: v1
kind: Pod
metadata:
  name: young-orphan
  labels:
    app.kubernetes.io/managed-by: squarepeg
    squarepeg.io/created-by: tester
    squarepeg.io/run-id: 0b6c8f52-5d1c-4b8e-9d8e-1c1f3f7a0a01
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: alpine
    command: ["true"]
"""


def test_the_sweep_says_how_many_young_orphans_it_left_and_why(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    created = kubesim.kubectl("create", "-n", namespace, "-f", "-", input=ORPHAN.encode())
    assert created.returncode == 0, created.stderr
    try:
        wait_until(lambda: kubesim.kubectl(
            "get", "pod", "young-orphan", "-n", namespace, "-o", "jsonpath={.status.phase}"
        ).stdout == b"Succeeded", 30, "the orphan to finish")
        done = squarepeg("sweep")
        assert done.code == 0, done.stderr
        assert done.has_line("no orphaned resources old enough to sweep"), done.lines
        assert done.has_line("left 1 finished or stuck resource younger than "
                             "orphan_sweep_min_age (300s)"), done.lines
        assert names(kubesim, namespace) == ["pod/young-orphan"]
    finally:
        kubesim.kubectl("delete", "pod", "young-orphan", "-n", namespace, "--wait=false")


# --- messages that fit squarepeg --------------------------------------------------------------


def test_a_missing_namespace_is_named_with_the_fix(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    done = squarepeg("run", "-n", f"{namespace}-missing", "alpine", "true", namespaced=False)
    assert done.code == 125, done.stderr
    assert done.has_line(f"namespace {namespace}-missing does not exist",
                         f"`kubectl create namespace {namespace}-missing"), done.lines
    assert not done.has_line("--dry-run"), done.lines


@pytest.mark.parametrize(
    "args",
    [
        # kubectl create says `... turn validation off with --validate=false`.
        ("run", "alpine", "true"),
        # kubectl get prints klog lines (`E1203 ... memcache.go:265] ...`) before its error;
        # a permission hint would not fit.
        ("sweep",),
    ],
    ids=["run", "sweep"],
)
def test_an_unreachable_cluster_is_one_line_without_klog_or_validate_advice(
    squarepeg: Squarepeg, tmp_path: Path, args: tuple[str, ...]
) -> None:
    dead = tmp_path / "dead-kubeconfig"
    dead.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: dead\n"
        "clusters: [{name: dead, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: x}}]\n"
        "contexts: [{name: dead, context: {cluster: dead, user: u, namespace: default}}]\n"
    )
    done = squarepeg(args[0], "--kubeconfig", str(dead), *args[1:], namespaced=False)
    assert done.code == 125, done.stderr
    errors = [line for line in done.lines if line.startswith("squarepeg: error:")]
    assert len(errors) == 1, done.lines
    assert "refused" in errors[0]
    assert ".go:" not in done.stderr and "--validate" not in done.stderr, done.stderr
    assert "permission" not in errors[0], errors[0]
    assert errors[0].endswith(f"`kubectl cluster-info --kubeconfig={dead} --context=dead`"), \
        errors[0]


def test_quiet_keep_still_prints_the_kept_name(
    squarepeg: Squarepeg, kubesim: Any, namespace: str
) -> None:
    try:
        done = squarepeg("run", "-q", "--keep", "--name", "quiet-kept", "alpine", "true")
        assert done.code == 0, done.stderr
        assert done.lines == [f"squarepeg: kept pod/quiet-kept in namespace {namespace}"]
    finally:
        kubesim.kubectl("delete", "pod", "quiet-kept", "-n", namespace, "--wait=false")



# --- memory -----------------------------------------------------------------------------------


def _kubelet_node(cluster: Any) -> bool:
    """A localkube cluster whose node is the real kubelet (its Node's osImage is the host's,
    the agent's says `kubesim`)."""
    if not isinstance(cluster, Localkube):
        return False
    done = cluster.kubectl("get", "nodes", "-o", "jsonpath={.items[*].status.nodeInfo.osImage}")
    return done.stdout.decode().split() != ["kubesim"]


def test_a_child_killed_for_lack_of_memory_keeps_the_exit_code_and_says_so(
    squarepeg: Squarepeg, kubesim: Any
) -> None:
    if not _kubelet_node(kubesim):
        pytest.skip("the kernel's OOM killer takes one process of the cgroup on a real node; "
                    "kubesim's memory monitor kills the whole group (tests/kubesim/README.md)")
    # awk doubles a string until the cgroup's limit: the kernel kills awk, the shell goes on.
    done = squarepeg("run", "--memory", "32m", "alpine", "sh", "-c",
                     "awk 'BEGIN { s = \"x\"; while (1) s = s s }'; echo survived $?")
    # The shell's `Killed` (its stderr) comes through the log too; the node merges stderr
    # and stdout in no fixed order within an instant (test_run's exit code test).
    assert done.code == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [b"Killed", b"survived 137"], done.stdout
    assert done.has_line("warning: a process in container main of pod",
                         "killed for lack of memory (OOMKilled)", "went on and exited 0"), \
        done.lines
