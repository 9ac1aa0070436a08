"""The installed `kubectl-squarepeg` as a process: every `run` flag, every configuration rule
and every bad input, through `--dry-run` (which never contacts a cluster).

Each test runs the executable with a HOME, XDG_CONFIG_HOME and working directory of its own
and a temporary kubeconfig whose server (https://127.0.0.1:1) refuses at once, and asserts
the exact manifest fields, exit codes and message text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

BIN = Path(sys.executable).parent
SQUAREPEG = shutil.which("kubectl-squarepeg", path=f"{BIN}{os.pathsep}{os.environ['PATH']}")
RUN_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
NAME = re.compile(r"squarepeg-alpine-[0-9a-f]{6}")
ERROR = "squarepeg: error: "
# docker's default seccomp profile, on every pod but a --privileged one's (decision 0420).
DEFAULT_POD_SECURITY = {"seccompProfile": {"type": "RuntimeDefault"}}

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: team-a}
- name: other
  context: {cluster: c, user: u, namespace: team-b}
- name: bare
  context: {cluster: c, user: u}
current-context: ctx
"""


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def doc(self) -> Any:
        assert self.code == 0, self.stderr
        return yaml.safe_load(self.stdout)

    @property
    def lines(self) -> list[str]:
        return self.stderr.splitlines()

    @property
    def container(self) -> dict[str, Any]:
        spec = self.doc["spec"]
        if self.doc["kind"] == "Job":
            spec = spec["template"]["spec"]
        main: dict[str, Any] = spec["containers"][0]
        assert main["name"] == "main"
        return main

    def one_error(self) -> str:
        """The single error line of a refused command (exit 125, nothing on stdout)."""
        assert (self.code, self.stdout) == (125, ""), (self.code, self.stdout, self.stderr)
        assert len(self.lines) == 1, self.stderr
        assert self.lines[0].startswith(ERROR), self.stderr
        return self.lines[0].removeprefix(ERROR)


class Sandbox:
    """A user's machine in a temporary folder: home, config home, project, kubeconfig."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.xdg = root / "xdg"
        self.cwd = root / "project" / "sub"
        for path in (self.home, self.xdg, self.cwd):
            path.mkdir(parents=True)
        self.kubeconfig = root / "kubeconfig"
        self.kubeconfig.write_text(KUBECONFIG)
        self.env = {
            key: value
            for key, value in os.environ.items()
            if key not in ("SQUAREPEG_CONFIG", "KUBECONFIG", "SQUAREPEG_SERVICEACCOUNT_DIR")
        }
        self.env |= {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.xdg),
            "XDG_CACHE_HOME": str(root / "cache"),
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(root / "kube-cache"),
            "USER": "tester",
            "LOGNAME": "tester",
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "SQUAREPEG_SERVICEACCOUNT_DIR": str(root / "no-serviceaccount"),
        }

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def write_trusted(self, relative: str, text: str) -> Path:
        """A project file, written and then trusted with `config trust`, as its user would."""
        path = self.write(relative, text)
        trusted = self("config", "trust", str(path))
        assert trusted.code == 0, trusted.stderr
        return path

    def __call__(self, *args: str, env: Mapping[str, str | None] | None = None) -> Result:
        full_env = dict(self.env)
        for key, value in (env or {}).items():
            if value is None:
                full_env.pop(key, None)
            else:
                full_env[key] = value
        assert SQUAREPEG is not None, "kubectl-squarepeg is not installed next to this Python"
        done = subprocess.run(
            [SQUAREPEG, *args],
            cwd=self.cwd,
            env=full_env,
            capture_output=True,
            timeout=60,
            check=False,
        )
        stderr = done.stderr.decode("utf-8", "replace")
        assert "Traceback" not in stderr, stderr
        return Result(done.returncode, done.stdout.decode("utf-8"), stderr)

    def dry(self, *args: str, env: Mapping[str, str | None] | None = None) -> Result:
        """`run --dry-run ARGS...`"""
        return self("run", "--dry-run", *args, env=env)


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


# --- the plain dry run -------------------------------------------------------------------------


def test_a_plain_dry_run_prints_the_pod_and_exits_0(sandbox: Sandbox) -> None:
    result = sandbox.dry("alpine", "echo", "hi")
    assert result.code == 0
    assert result.stderr == ""
    doc = result.doc
    assert NAME.fullmatch(doc["metadata"]["name"])
    assert RUN_ID.fullmatch(doc["metadata"]["labels"]["squarepeg.io/run-id"])
    assert doc == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": doc["metadata"]["name"],
            "namespace": "team-a",
            "labels": {
                "app.kubernetes.io/managed-by": "squarepeg",
                "squarepeg.io/run-id": doc["metadata"]["labels"]["squarepeg.io/run-id"],
                "squarepeg.io/created-by": "tester",
            },
        },
        "spec": {
            "containers": [{"name": "main", "image": "alpine", "args": ["echo", "hi"]}],
            "restartPolicy": "Never",
            "securityContext": DEFAULT_POD_SECURITY,
        },
    }
    # Insertion order, as built: apiVersion, kind, metadata, spec.
    assert [line for line in result.stdout.splitlines() if not line.startswith(" ")][:4] == [
        "apiVersion: v1",
        "kind: Pod",
        "metadata:",
        "spec:",
    ]


def test_each_run_gets_its_own_name_and_run_id(sandbox: Sandbox) -> None:
    first, second = sandbox.dry("alpine").doc, sandbox.dry("alpine").doc
    assert first["metadata"]["name"] != second["metadata"]["name"]
    labels = "squarepeg.io/run-id"
    assert first["metadata"]["labels"][labels] != second["metadata"]["labels"][labels]


def test_the_spec_example(sandbox: Sandbox) -> None:
    resources = sandbox.dry("--cpus", "0.5", "-m", "512m", "alpine", "echo", "hi").container
    assert resources["resources"] == {
        "requests": {"cpu": "500m", "memory": "512Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }


def test_multi_line_strings_are_block_literals(sandbox: Sandbox) -> None:
    result = sandbox.dry("alpine", "sh", "-c", "echo one\necho two\n")
    assert "    - |\n      echo one\n      echo two\n" in result.stdout
    assert result.container["args"] == ["sh", "-c", "echo one\necho two\n"]


# --- every flag of the table -------------------------------------------------------------------

# One argument list with every flag of cli.md's table (fmt: off keeps one flag per line).
# fmt: off
EVERY_FLAG = [
    "--name", "every-flag",
    "-e", "A=1", "--env", "B=two words", "-e", "FROM_SHELL", "-e", "NOT_SET",
    "--env-file", "vars.env",
    "-l", "team=a", "--label", "tier=web",
    "--annotation", "example.com/note=hello",
    "-w", "/work",
    "-u", "1000:1000",
    "--entrypoint", "/bin/sh",
    "--cpus", "1.5",
    "-m", "1g",
    "--gpus", "1",
    "--pull", "always",
    "--platform", "linux/arm64",
    "--privileged",
    "--cap-add", "net_admin", "--cap-add", "SYS_TIME", "--cap-drop", "ALL",
    "--read-only",
    "--tmpfs", "/scratch:size=64m",
    "--shm-size", "256m",
    "-h", "box",
    "--add-host", "db.local:10.0.0.5", "--add-host", "cache:10.0.0.6",
    "--dns", "1.1.1.1", "--dns-search", "example.com",
    "--stop-timeout", "30",
    "--runtime", "gvisor",
    "--rm",
    "-n", "flags-ns",
    "--kubeconfig", "KUBECONFIG",
    "--mode", "pod",
    "--timeout", "5m",
    "-q",
    "--service-account", "builder",
    "--node-selector", "disk=ssd",
    "--toleration", "gpu=true:NoSchedule", "--toleration", "spot:NoExecute",
    "--image-pull-secret", "regcred",
    "--priority-class", "high",
    "alpine:3.19", "-c", "echo $A",
]
# fmt: on


@pytest.fixture(scope="module")
def every_flag(tmp_path_factory: pytest.TempPathFactory) -> Result:
    box = Sandbox(tmp_path_factory.mktemp("every-flag"))
    (box.cwd / "vars.env").write_text("# comment\nFILE_VAR=from file\nA=overridden by -e\n")
    args = [str(box.kubeconfig) if a == "KUBECONFIG" else a for a in EVERY_FLAG]
    return box.dry(*args, env={"FROM_SHELL": "shell value", "NOT_SET": None})


def field(doc: Any, path: str) -> Any:
    for part in path.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part.replace("~", ".")]
    return doc


ROWS = [
    ("--name", "metadata.name", "every-flag"),
    ("-n/--namespace", "metadata.namespace", "flags-ns"),
    ("-l/--label", "metadata.labels.team", "a"),
    ("-l/--label", "metadata.labels.tier", "web"),
    ("--annotation", "metadata.annotations", {"example.com/note": "hello"}),
    (
        "--rm (nothing to keep)",
        "metadata.labels",
        {
            "app.kubernetes.io/managed-by": "squarepeg",
            "squarepeg.io/run-id": "RUN_ID",
            "squarepeg.io/created-by": "tester",
            "team": "a",
            "tier": "web",
        },
    ),
    ("IMAGE", "spec.containers.0.image", "alpine:3.19"),
    # `$` escaped, so that Kubernetes hands the shell `echo $A` as typed.
    ("COMMAND", "spec.containers.0.args", ["-c", "echo $$A"]),
    ("--entrypoint", "spec.containers.0.command", ["/bin/sh"]),
    (
        "-e/--env-file",
        "spec.containers.0.env",
        [
            {"name": "FILE_VAR", "value": "from file"},
            {"name": "A", "value": "1"},
            {"name": "B", "value": "two words"},
            {"name": "FROM_SHELL", "value": "shell value"},
        ],
    ),
    ("-w/--workdir", "spec.containers.0.workingDir", "/work"),
    (
        "--cpus/-m/--gpus",
        "spec.containers.0.resources",
        {
            "requests": {"cpu": "1500m", "memory": "1Gi"},
            "limits": {"cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": 1},
        },
    ),
    ("--pull", "spec.containers.0.imagePullPolicy", "Always"),
    (
        "-u/--privileged/--cap-*/--read-only",
        "spec.containers.0.securityContext",
        {
            "runAsUser": 1000,
            "runAsGroup": 1000,
            "runAsNonRoot": True,
            "privileged": True,
            "readOnlyRootFilesystem": True,
            "capabilities": {"add": ["NET_ADMIN", "SYS_TIME"], "drop": ["ALL"]},
        },
    ),
    (
        "--tmpfs/--shm-size",
        "spec.containers.0.volumeMounts",
        [
            {"name": "tmpfs-1", "mountPath": "/scratch"},
            {"name": "dshm", "mountPath": "/dev/shm"},
        ],
    ),
    (
        "--tmpfs/--shm-size",
        "spec.volumes",
        [
            {"name": "tmpfs-1", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "256Mi"}},
        ],
    ),
    ("--mode pod", "spec.restartPolicy", "Never"),
    ("-h/--hostname", "spec.hostname", "box"),
    ("--stop-timeout", "spec.terminationGracePeriodSeconds", 30),
    ("--runtime", "spec.runtimeClassName", "gvisor"),
    ("--service-account", "spec.serviceAccountName", "builder"),
    ("--priority-class", "spec.priorityClassName", "high"),
    (
        "--add-host",
        "spec.hostAliases",
        [
            {"ip": "10.0.0.5", "hostnames": ["db.local"]},
            {"ip": "10.0.0.6", "hostnames": ["cache"]},
        ],
    ),
    (
        "--dns/--dns-search",
        "spec.dnsConfig",
        {"nameservers": ["1.1.1.1"], "searches": ["example.com"]},
    ),
    (
        "--platform/--node-selector",
        "spec.nodeSelector",
        {
            "disk": "ssd",
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "arm64",
        },
    ),
    (
        "--toleration",
        "spec.tolerations",
        [
            {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
            {"key": "spot", "operator": "Exists", "effect": "NoExecute"},
        ],
    ),
    ("--image-pull-secret", "spec.imagePullSecrets", [{"name": "regcred"}]),
]


@pytest.mark.parametrize(("flag", "path", "expected"), ROWS, ids=[f"{r[0]} {r[1]}" for r in ROWS])
def test_every_flag_lands_in_its_field(
    every_flag: Result, flag: str, path: str, expected: Any
) -> None:
    value = field(every_flag.doc, path)
    if isinstance(expected, dict) and expected.get("squarepeg.io/run-id") == "RUN_ID":
        expected = {**expected, "squarepeg.io/run-id": value["squarepeg.io/run-id"]}
    assert value == expected


def test_every_flag_run_is_quiet_and_complete(every_flag: Result) -> None:
    assert every_flag.stderr == ""  # -q, and nothing to warn about
    assert set(every_flag.doc["spec"]) == {
        "containers",
        "restartPolicy",
        "hostname",
        "terminationGracePeriodSeconds",
        "runtimeClassName",
        "serviceAccountName",
        "priorityClassName",
        "hostAliases",
        "dnsConfig",
        "dnsPolicy",
        "nodeSelector",
        "tolerations",
        "imagePullSecrets",
        "volumes",
    }


def test_keep_labels_the_pod(sandbox: Sandbox) -> None:
    assert sandbox.dry("--keep", "alpine").doc["metadata"]["labels"]["squarepeg.io/keep"] == "true"
    assert "squarepeg.io/keep" not in sandbox.dry("--rm", "alpine").doc["metadata"]["labels"]


def test_interactive_and_tty_land_on_the_main_container(sandbox: Sandbox) -> None:
    main = sandbox.dry("-i", "alpine", "cat").doc["spec"]["containers"][0]
    assert (main["stdin"], main["stdinOnce"], "tty" in main) == (True, True, False)
    main = sandbox.dry("--tty", "alpine").doc["spec"]["containers"][0]
    assert main["tty"] is True and "stdin" not in main
    # -it with a stdin that is not a terminal: one warning, then as -i.
    piped = sandbox.dry("-it", "alpine", "sh")
    main = piped.doc["spec"]["containers"][0]
    assert (main["stdin"], "tty" in main) == (True, False)
    warnings = [line for line in piped.lines if "warning:" in line]
    assert len(warnings) == 1 and "not a terminal" in warnings[0], piped.stderr


def test_job_mode(sandbox: Sandbox) -> None:
    doc = sandbox.dry("--mode", "job", "-l", "team=a", "alpine", "true").doc
    assert doc["apiVersion"] == "batch/v1" and doc["kind"] == "Job"
    labels = doc["metadata"]["labels"]
    assert labels["team"] == "a" and labels["app.kubernetes.io/managed-by"] == "squarepeg"
    spec = doc["spec"]
    assert [spec.pop(k) for k in ("backoffLimit", "completions", "parallelism")] == [0, 1, 1]
    assert spec.pop("ttlSecondsAfterFinished") == 600
    assert spec == {
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "containers": [{"name": "main", "image": "alpine", "args": ["true"]}],
                "restartPolicy": "Never",
                "securityContext": DEFAULT_POD_SECURITY,
            },
        }
    }
    kept = sandbox.dry("--mode", "job", "--keep", "alpine").doc
    assert "ttlSecondsAfterFinished" not in kept["spec"]
    assert kept["spec"]["template"]["metadata"]["labels"]["squarepeg.io/keep"] == "true"


def test_timeout_is_not_in_the_manifest_but_is_checked(sandbox: Sandbox) -> None:
    with_timeout, without = sandbox.dry("--timeout", "90s", "alpine").doc, sandbox.dry("alpine").doc
    del with_timeout["metadata"], without["metadata"]  # names and run ids differ
    assert with_timeout == without
    assert sandbox.dry("--timeout", "-5", "alpine").one_error() == (
        "invalid value '-5' for --timeout; a duration cannot be negative; give seconds like "
        "300, or a duration like 90s, 5m or 1h30m"
    )


def test_env_file_format_and_errors(sandbox: Sandbox) -> None:
    sandbox.write("project/sub/good.env", "\n# c\nX=1\n  Y=a=b\nLOCAL\nGONE\n")
    env = sandbox.dry("--env-file", "good.env", "alpine", env={"LOCAL": "here"}).container["env"]
    assert env == [
        {"name": "X", "value": "1"},
        {"name": "Y", "value": "a=b"},
        {"name": "LOCAL", "value": "here"},
    ]
    sandbox.write("project/sub/bad.env", "X=1\n=2\n")
    assert sandbox.dry("--env-file", "bad.env", "alpine").one_error() == (
        "bad env file 'bad.env' (--env-file); line 2 has no valid variable name before '='; "
        "write KEY=VALUE or KEY, one per line (# starts a comment)"
    )
    assert sandbox.dry("--env-file", "nope.env", "alpine").one_error() == (
        "cannot read the env file 'nope.env' (--env-file): No such file or directory; give the "
        "path of a readable file of KEY=VALUE lines"
    )


# --- the five flags mapped after the first release --------------------------------------------


def test_dns_option_group_add_sysctl_label_file_and_memory_reservation(sandbox: Sandbox) -> None:
    sandbox.write("project/sub/team.labels", "# ours\n\nteam=a\n  tier=file\n")
    # fmt: off
    result = sandbox.dry(
        "--dns-option", "ndots:2", "--dns-option", "rotate",
        "--group-add", "1000", "--group-add", "2000",
        "--sysctl", "net.ipv4.ip_unprivileged_port_start=0",
        "--label-file", "team.labels", "-l", "tier=flag",
        "-m", "1g", "--memory-reservation", "256m",
        "alpine",
    )
    # fmt: on
    assert result.code == 0, result.stderr
    spec = result.doc["spec"]
    assert "dnsPolicy" not in spec  # options alone keep the cluster's policy
    assert spec["dnsConfig"] == {"options": [{"name": "ndots", "value": "2"}, {"name": "rotate"}]}
    assert spec["securityContext"] == {
        **DEFAULT_POD_SECURITY,
        "supplementalGroups": [1000, 2000],
        "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}],
    }
    labels = result.doc["metadata"]["labels"]
    assert (labels["team"], labels["tier"]) == ("a", "flag")
    assert result.container["resources"] == {
        "requests": {"memory": "256Mi"},
        "limits": {"memory": "1Gi"},
    }


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["--group-add", "wheel"],
            "invalid value 'wheel' for --group-add; Kubernetes takes numeric group IDs only and "
            "cannot look a group name up in the image; give the GID, like 1000 (`getent group "
            "NAME` in the image shows it)",
        ),
        (["--sysctl", "Net.IPv4.x=1"], "invalid value 'Net.IPv4.x=1' for --sysctl; a sysctl name"),
        (["--dns-option", ":2"], "invalid value ':2' for --dns-option; give a resolv.conf option"),
        (
            ["-m", "512m", "--memory-reservation", "1g"],
            "--memory-reservation 1Gi is larger than the -m limit 512Mi (Kubernetes refuses a "
            "memory request above the limit); give a --memory-reservation no larger than -m, "
            "or raise -m",
        ),
        (
            ["--label-file", "nope.labels"],
            "cannot read the label file 'nope.labels' (--label-file): No such file or directory",
        ),
        (
            ["--label-file", "reserved.labels"],
            "the label squarepeg.io/keep (--label-file reserved.labels, line 2) is reserved for "
            "squarepeg",
        ),
    ],
)
def test_bad_values_of_the_five_flags_are_one_error_line(
    sandbox: Sandbox, args: list[str], error: str
) -> None:
    sandbox.write("project/sub/reserved.labels", "team=a\nsquarepeg.io/keep=true\n")
    result = sandbox.dry(*args, "alpine")
    assert result.code == 125 and result.stdout == ""
    assert result.one_error().startswith(error)


# --- arguments after IMAGE ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "image", "container_args"),
    [
        (
            ["alpine", "ls", "-l", "--help", "-e", "X=1", "--cpus", "9"],
            "alpine",
            ["ls", "-l", "--help", "-e", "X=1", "--cpus", "9"],
        ),
        (["alpine", "--", "ls"], "alpine", ["--", "ls"]),  # docker hands `--` on, so do we
        (["--", "alpine", "ls"], "alpine", ["ls"]),  # before IMAGE it ends our options
        (["alpine", "--dry-run-server"], "alpine", ["--dry-run-server"]),
    ],
)
def test_everything_after_image_is_the_command(
    sandbox: Sandbox, args: list[str], image: str, container_args: list[str]
) -> None:
    container = sandbox.dry(*args).container
    assert (container["image"], container["args"]) == (image, container_args)
    assert "resources" not in container and "env" not in container


def test_help_and_version_exit_0_on_stdout(sandbox: Sandbox) -> None:
    help_text = sandbox("run", "--help")
    assert help_text.code == 0 and help_text.stdout.startswith(
        "Usage: kubectl squarepeg run [OPTIONS] IMAGE [COMMAND]..."
    )
    for flag in ("--env-file", "--cpus", "--dry-run-server", "--toleration", "-h, --hostname"):
        assert flag in help_text.stdout
    assert "--publish-all" not in help_text.stdout  # refused flags are not advertised
    version = sandbox("--version")
    assert (version.code, version.stdout) == (0, "kubectl squarepeg 0.1.0\n")
    bare = sandbox()
    assert bare.code == 0 and "Commands:" in bare.stdout


# --- namespace resolution ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env", "namespace"),
    [
        ([], {}, "team-a"),  # the current context's
        (["-n", "mine"], {}, "mine"),  # -n beats it
        (["--context", "other"], {}, "team-b"),
        (["--context", "bare"], {}, "default"),  # a context without a namespace
        (["--context", "other", "-n", "mine"], {}, "mine"),
        ([], {"KUBECONFIG": None}, "default"),  # no ~/.kube/config in the sandbox either
    ],
)
def test_namespace_resolution(
    sandbox: Sandbox, args: list[str], env: dict[str, str], namespace: str
) -> None:
    result = sandbox.dry(*args, "alpine", env=env)
    assert result.doc["metadata"]["namespace"] == namespace


@pytest.mark.parametrize("args", [["--dry-run"], ["--dry-run", "-n", "ns"], []])
def test_a_kubeconfig_that_does_not_exist_is_an_error(sandbox: Sandbox, args: list[str]) -> None:
    flag = sandbox("run", *args, "--kubeconfig", "/nonexistent/kc", "alpine").one_error()
    assert flag == (
        "the kubeconfig file /nonexistent/kc does not exist (--kubeconfig); check the path, or "
        "leave --kubeconfig out to use $KUBECONFIG or ~/.kube/config"
    )
    listed = f"/nonexistent/a{os.pathsep}/nonexistent/b"
    env = sandbox("run", *args, "alpine", env={"KUBECONFIG": listed}).one_error()
    assert env == (
        f"KUBECONFIG names no file that exists ({listed}); fix KUBECONFIG, or unset it to use "
        "~/.kube/config"
    )
    # One existing file in the list is enough, as for kubectl.
    both = f"/nonexistent/a{os.pathsep}{sandbox.kubeconfig}"
    assert sandbox.dry("alpine", env={"KUBECONFIG": both}).doc["metadata"]["namespace"] == "team-a"
    # The config key: the error names its file and line; a relative path is the file's.
    keyed = sandbox.write("conf/c.yaml", "cpus: 1\nkubeconfig: missing-kc\n")
    key = sandbox("run", *args, "--config", str(keyed), "alpine").one_error()
    assert key == (
        f"the kubeconfig file {keyed.parent / 'missing-kc'} does not exist (config kubeconfig, "
        f"{keyed}:2); fix the path there (a relative one is relative to that config file), or "
        "remove the key to use $KUBECONFIG or ~/.kube/config"
    )


def test_kubeconfig_flag_picks_the_file(sandbox: Sandbox) -> None:
    other = sandbox.write(
        "other-kubeconfig", KUBECONFIG.replace("current-context: ctx", "current-context: other")
    )
    assert (
        sandbox.dry("--kubeconfig", str(other), "alpine").doc["metadata"]["namespace"] == "team-b"
    )


def test_a_remembered_namespace_follows_kubeconfig_changes(sandbox: Sandbox) -> None:
    def kubeconfig_from_an_hour_ago(namespace: str, seconds: float) -> None:
        sandbox.kubeconfig.write_text(KUBECONFIG.replace("team-a", namespace))
        when = time.time() - 3600 + seconds
        os.utime(sandbox.kubeconfig, (when, when))

    kubeconfig_from_an_hour_ago("first", 0)
    assert sandbox.dry("alpine").doc["metadata"]["namespace"] == "first"
    assert (sandbox.root / "cache" / "squarepeg" / "kubeconfig-views.json").is_file()
    assert sandbox.dry("alpine").doc["metadata"]["namespace"] == "first"  # remembered
    kubeconfig_from_an_hour_ago("second", 1)
    assert sandbox.dry("alpine").doc["metadata"]["namespace"] == "second"


def test_config_namespace_beats_the_context_but_not_n(sandbox: Sandbox) -> None:
    sandbox.write_trusted("project/.squarepeg.yaml", "namespace: from-config\n")
    assert sandbox.dry("alpine").doc["metadata"]["namespace"] == "from-config"
    assert sandbox.dry("-n", "flag", "alpine").doc["metadata"]["namespace"] == "flag"


def test_a_broken_kubeconfig_degrades_to_default_with_a_note(sandbox: Sandbox) -> None:
    sandbox.kubeconfig.write_text("clusters: [oops\n")
    result = sandbox.dry("alpine")
    assert result.doc["metadata"]["namespace"] == "default"
    assert len(result.lines) == 1
    assert result.lines[0].startswith("squarepeg: no usable kubeconfig (")
    assert result.lines[0].endswith("; namespace default")
    assert sandbox.dry("-q", "alpine").stderr == ""


def test_in_cluster_namespace_file_is_the_fallback(sandbox: Sandbox) -> None:
    account = sandbox.root / "serviceaccount"
    account.mkdir()
    (account / "namespace").write_text("pod-ns\n")
    env = {"KUBECONFIG": None, "SQUAREPEG_SERVICEACCOUNT_DIR": str(account)}
    assert sandbox.dry("alpine", env=env).doc["metadata"]["namespace"] == "pod-ns"
    assert sandbox.dry("-n", "mine", "alpine", env=env).doc["metadata"]["namespace"] == "mine"


def test_an_explicit_context_that_does_not_exist_is_an_error(sandbox: Sandbox) -> None:
    assert sandbox.dry("--context", "nope", "alpine").one_error() == (
        "--context nope does not exist in the kubeconfig (contexts: bare, ctx, other); pass one "
        "of the names `kubectl config get-contexts` lists"
    )
    missing = sandbox.dry("--context", "nope", "alpine", env={"KUBECONFIG": None})
    assert missing.one_error().startswith("--context nope does not exist in the kubeconfig")


# --- configuration ----------------------------------------------------------------------------


def test_layers_apply_in_order(sandbox: Sandbox) -> None:
    sandbox.write("xdg/squarepeg/config.yaml", "cpus: 1\nmemory: 1g\ngpus: 1\nhostname: user\n")
    sandbox.write_trusted("project/.squarepeg.yaml", "memory: 2g\ngpus: 2\nhostname: project\n")
    env_files = [
        sandbox.write("e1.yaml", "gpus: 3\nhostname: env1\n"),
        sandbox.write("e2.yaml", "hostname: env2\nstop_timeout: 5\n"),
    ]
    explicit = [
        sandbox.write("x1.yaml", "stop_timeout: 6\nruntime: x1\n"),
        sandbox.write("x2.yaml", "runtime: x2\n"),
    ]
    result = sandbox.dry(
        "--config",
        str(explicit[0]),
        "--config",
        str(explicit[1]),
        "--hostname",
        "flag",
        "alpine",
        env={"SQUAREPEG_CONFIG": os.pathsep.join(map(str, env_files))},
    )
    spec = result.doc["spec"]
    assert result.container["resources"]["limits"] == {
        "cpu": 1,
        "memory": "2Gi",
        "nvidia.com/gpu": 3,
    }
    assert (spec["hostname"], spec["terminationGracePeriodSeconds"], spec["runtimeClassName"]) == (
        "flag",
        6,
        "x2",
    )


def test_user_layer_defaults_to_dot_config(sandbox: Sandbox) -> None:
    sandbox.write("home/.config/squarepeg/config.yaml", "cpus: 2\n")
    result = sandbox.dry("alpine", env={"XDG_CONFIG_HOME": None})
    assert result.container["resources"]["limits"] == {"cpu": 2}


def test_a_project_file_is_used_only_while_trusted(sandbox: Sandbox) -> None:
    path = sandbox.write("project/.squarepeg.yaml", "privileged: true\n")
    hint = f"read it, then run `kubectl squarepeg config trust {path}` to use it"
    assert (
        sandbox.dry("alpine")
        .one_error()
        .startswith(f"the project config file {path} is not trusted; {hint}")
    )
    view = sandbox("config", "view")
    assert view.code == 0 and "privileged" not in yaml.safe_load(view.stdout)
    assert f"#   {path} (project, not trusted: not used)" in view.stdout.splitlines()
    trusted = sandbox("config", "trust")  # the nearest project file, from the working dir
    assert (trusted.code, trusted.lines) == (0, [f"squarepeg: trusted {path} as it is now"])
    assert sandbox.dry("alpine").container["securityContext"] == {"privileged": True}
    assert f"#   {path} (project, trusted)" in sandbox("config", "view").stdout.splitlines()
    path.write_text("privileged: true\nhostname: changed\n")
    assert (
        sandbox.dry("alpine")
        .one_error()
        .startswith(f"the project config file {path} changed since you trusted it; {hint}")
    )
    assert sandbox("config", "trust", str(path)).code == 0
    assert sandbox.dry("alpine").doc["spec"]["hostname"] == "changed"
    untrusted = sandbox("config", "untrust")
    assert untrusted.lines == [f"squarepeg: no longer trusted: {path}"]
    assert "is not trusted" in sandbox.dry("alpine").one_error()


def test_sweep_refuses_an_untrusted_project_file_too(sandbox: Sandbox) -> None:
    path = sandbox.write("project/.squarepeg.yaml", "orphan_sweep_min_age: 0\n")
    for args in (["sweep"], ["sweep", "--dry-run"]):
        error = sandbox(*args).one_error()
        assert error.startswith(f"the project config file {path} is not trusted; read it")


def test_trust_without_a_project_file_says_what_to_give(sandbox: Sandbox) -> None:
    assert sandbox("config", "trust").one_error() == (
        "no .squarepeg.yaml in this directory or above it; give the file to trust: "
        "`kubectl squarepeg config trust FILE`"
    )


def test_the_nearest_project_file_wins(sandbox: Sandbox) -> None:
    sandbox.write_trusted("project/.squarepeg.yaml", "cpus: 1\n")
    sandbox.write_trusted("project/sub/.squarepeg.yaml", "cpus: 3\n")
    assert sandbox.dry("alpine").container["resources"]["limits"] == {"cpu": 3}


def test_interpolation_and_typed_keys(sandbox: Sandbox) -> None:
    sandbox.write_trusted(
        "project/.squarepeg.yaml",
        "timeout: ${STARTUP:-300}\nworkdir: /w/${WHO}\nentrypoint: ${UNSET:-/bin/sh}\n"
        "env:\n  PRICE: $$5\n  USER_HOME: ${HOME}\n  ONCE: ${REF}\n  FALLBACK: ${EMPTY:-fb}\n",
    )
    env = {"WHO": "me", "STARTUP": "5m", "REF": "${HOME}", "EMPTY": ""}
    result = sandbox.dry("alpine", env=env)
    container = result.container
    assert (container["workingDir"], container["command"]) == ("/w/me", ["/bin/sh"])
    assert container["env"] == [
        {"name": "PRICE", "value": "$5"},
        {"name": "USER_HOME", "value": str(sandbox.home)},
        {"name": "ONCE", "value": "${HOME}"},  # a value is not interpolated again
        {"name": "FALLBACK", "value": "fb"},
    ]


def test_dollars_of_entrypoint_are_escaped_but_passthrough_and_patches_stay_as_written(
    sandbox: Sandbox,
) -> None:
    # `$(X)` in a config file is no `${...}` reference: it reaches the manifest as written.
    sandbox.write_trusted(
        "project/.squarepeg.yaml",
        "kubernetes:\n"
        "  spec:\n"
        "    containers:\n"
        "    - {name: side, image: busybox, args: [\"echo $(X)\"]}\n"
        "  patches:\n"
        "  - {op: add, path: /spec/containers/-,\n"
        "     value: {name: patched, image: busybox, command: [\"$(X)\"]}}\n",
    )
    result = sandbox.dry("--entrypoint", "/bin/$(X)", "alpine", "$(X)", "$$")
    containers = {c["name"]: c for c in result.doc["spec"]["containers"]}
    assert (containers["main"]["command"], containers["main"]["args"]) == (
        ["/bin/$$(X)"], ["$$(X)", "$$$$"]
    )
    assert containers["side"]["args"] == ["echo $(X)"]
    assert containers["patched"]["command"] == ["$(X)"]
    assert any("every `$` of the command and --entrypoint" in line for line in result.lines), \
        result.lines


def test_mappings_merge_lists_replace_null_resets(sandbox: Sandbox) -> None:
    sandbox.write(
        "xdg/squarepeg/config.yaml",
        "env: {A: user, B: user}\ncap_add: [CHOWN]\ncpus: 1\nlabels: {team: a}\n",
    )
    sandbox.write_trusted(
        "project/.squarepeg.yaml", "env: {B: project}\ncap_add: [NET_ADMIN]\ncpus: null\n"
    )
    container = sandbox.dry("alpine").container
    assert container["env"] == [{"name": "A", "value": "user"}, {"name": "B", "value": "project"}]
    assert container["securityContext"] == {"capabilities": {"add": ["NET_ADMIN"]}}
    assert "resources" not in container


def test_cleanup_false_keeps_and_rm_overrides_it(sandbox: Sandbox) -> None:
    sandbox.write_trusted("project/.squarepeg.yaml", "cleanup: false\n")
    assert sandbox.dry("alpine").doc["metadata"]["labels"]["squarepeg.io/keep"] == "true"
    assert "squarepeg.io/keep" not in sandbox.dry("--rm", "alpine").doc["metadata"]["labels"]


PASSTHROUGH = """\
kubernetes:
  metadata:
    labels: {owner: conf}
  spec:
    hostname: conf-host
    containers:
    - name: main
      image: conf-image
      env: [{name: A, value: conf}, {name: B, value: conf}]
    - name: side
      image: busybox
    volumes: [{name: data, emptyDir: {}}]
    madeUpField: {not: checked}
"""


def test_passthrough_merges_and_claims_keep_explicit_flags(sandbox: Sandbox) -> None:
    path = sandbox.write_trusted("project/.squarepeg.yaml", PASSTHROUGH)
    result = sandbox.dry("-e", "A=flag", "alpine")
    doc = result.doc
    assert doc["metadata"]["labels"]["owner"] == "conf"
    assert "squarepeg.io/keep" not in doc["metadata"]["labels"]
    assert doc["spec"]["hostname"] == "conf-host"
    assert doc["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]
    assert doc["spec"]["madeUpField"] == {"not": "checked"}  # the apiserver's to judge
    assert doc["spec"]["containers"] == [
        {
            "name": "main",
            "image": "alpine",
            "env": [{"name": "A", "value": "flag"}, {"name": "B", "value": "conf"}],
        },
        {"name": "side", "image": "busybox"},
    ]
    assert result.lines == [
        f"squarepeg: warning: ignored config kubernetes.spec.containers[name=main].image "
        f"({path}:8): it would change /spec/containers/[name=main]/image, which IMAGE set on "
        "the command line",
        f"squarepeg: warning: ignored config kubernetes.spec.containers[name=main].env[name=A]"
        f".value ({path}:9): it would change /spec/containers/[name=main]/env/[name=A]/value, "
        "which --env set on the command line",
    ]
    assert sandbox.dry("-q", "-e", "A=flag", "alpine").lines == result.lines  # warnings stay


CONTRACT = [
    ("kubernetes:\n  spec:\n    restartPolicy: Always\n", 3, "/spec/restartPolicy", ()),
    (
        "kubernetes:\n  metadata:\n    labels: {squarepeg.io/keep: 'true'}\n",
        3,
        "/metadata/labels/squarepeg.io~1keep",
        (),
    ),
    (
        "kubernetes:\n  spec:\n    containers:\n    - {name: main, image: x}\n"
        "  patches:\n  - {op: replace, path: /spec/containers/0/name, value: other}\n",
        6,
        "/spec/containers/[name=main]/name",
        (),
    ),
    (
        "kubernetes:\n  patches:\n  - {op: replace, path: /spec/backoffLimit, value: 3}\n",
        3,
        "/spec/backoffLimit",
        ("--mode", "job"),
    ),
]


@pytest.mark.parametrize(("text", "line", "field", "args"), CONTRACT, ids=lambda v: str(v)[:20])
def test_config_that_breaks_the_runs_contract_is_refused_with_file_and_line(
    sandbox: Sandbox, text: str, line: int, field: str, args: tuple[str, ...]
) -> None:
    path = sandbox.write_trusted("project/.squarepeg.yaml", text)
    error = sandbox.dry(*args, "alpine").one_error()
    assert f"({path}:{line}) would change {field}, which squarepeg's run depends on" in error


def test_passthrough_is_rehomed_in_job_mode(sandbox: Sandbox) -> None:
    sandbox.write_trusted("project/.squarepeg.yaml", PASSTHROUGH)
    doc = sandbox.dry("--mode", "job", "-h", "flag-host", "alpine").doc
    template = doc["spec"]["template"]
    assert template["metadata"]["labels"]["owner"] == "conf"
    assert "owner" not in doc["metadata"]["labels"]
    assert template["spec"]["hostname"] == "flag-host"
    assert [c["name"] for c in template["spec"]["containers"]] == ["main", "side"]


def test_passthrough_named_lists_merge_across_layers(sandbox: Sandbox) -> None:
    sandbox.write(
        "xdg/squarepeg/config.yaml",
        "kubernetes:\n  spec:\n    containers:\n    - {name: side, image: busybox}\n",
    )
    sandbox.write_trusted(
        "project/.squarepeg.yaml",
        "kubernetes:\n  spec:\n    containers:\n    - {name: side, args: [x]}\n",
    )
    containers = sandbox.dry("alpine").doc["spec"]["containers"]
    assert containers[1] == {"name": "side", "image": "busybox", "args": ["x"]}


def test_patches_concatenate_and_apply_to_the_final_resource(sandbox: Sandbox) -> None:
    sandbox.write(
        "xdg/squarepeg/config.yaml",
        "kubernetes:\n  patches:\n  - {op: add, path: /metadata/annotations, value: {a: user}}\n",
    )
    sandbox.write_trusted(
        "project/.squarepeg.yaml",
        "kubernetes:\n  patches:\n"
        "  - {op: add, path: /metadata/annotations/b, value: project}\n"
        "  - {op: add, path: /spec/activeDeadlineSeconds, value: 3}\n",
    )
    job = sandbox.dry("--mode", "job", "alpine").doc
    assert job["metadata"]["annotations"] == {"a": "user", "b": "project"}
    assert job["spec"]["activeDeadlineSeconds"] == 3


def test_config_view_and_show_origin(sandbox: Sandbox) -> None:
    project = sandbox.write_trusted("project/.squarepeg.yaml", "cpus: 0.5\nenv:\n  A: '1'\n")
    explicit = sandbox.write("x.yaml", "mode: job\n")
    view = sandbox("config", "view", "--config", str(explicit))
    assert view.code == 0 and view.stderr == ""
    assert yaml.safe_load(view.stdout) == {
        "mode": "job",
        "timeout": 300,
        "cleanup": True,
        "orphan_sweep": True,
        "orphan_sweep_min_age": 300,
        "orphan_sweep_silence": 120,
        "job_ttl_seconds_after_finished": 600,
        "env": {"A": "1"},
        "cpus": 0.5,
        "kubernetes": {"metadata": {}, "spec": {}, "patches": []},
    }
    shown = sandbox("config", "view", "--show-origin", "--config", str(explicit)).stdout
    assert shown.splitlines()[:3] == [
        "# config files, lowest precedence first:",
        f"#   {project} (project, trusted)",
        f"#   {explicit} (--config)",
    ]
    assert shown.splitlines()[3:6] == [
        f"mode: job  # {explicit}:1",
        "timeout: 300  # default",
        "cleanup: true  # default",
    ]
    assert f"  A: '1'  # {project}:3" in shown.splitlines()
    assert f"cpus: 0.5  # {project}:1" in shown.splitlines()


# --- bad input: one line, exit 125, nothing on stdout -------------------------------------------

BAD_FLAGS = [
    (
        ["--name", "Bad_Name", "alpine"],
        "invalid value 'Bad_Name' for --name; use lowercase letters, digits and '-', starting and "
        "ending with a letter or digit, like my-run-1",
    ),
    (
        ["--memory", "12x", "alpine"],
        "invalid value '12x' for --memory; give a size like 512m, 1g, 1.5g or a number of bytes "
        "(units b, k, m, g, t, p)",
    ),
    (
        ["--cpus", "lots", "alpine"],
        "invalid value 'lots' for --cpus; give a number of CPUs like 0.5, 2 or 1.25 (or "
        "millicores like 500m)",
    ),
    (
        ["-u", "nobody", "alpine"],
        "invalid value 'nobody' for --user; Kubernetes needs numeric IDs: use UID or UID:GID like "
        "1000 or 1000:1000 (`docker run --rm --entrypoint id IMAGE NAME` prints the IDs of a user "
        "name)",
    ),
    (
        ["--timeout", "soon", "alpine"],
        "invalid value 'soon' for --timeout; give seconds like 300, or a duration like 90s, 5m "
        "or 1h30m",
    ),
    (
        ["--gpus", "all", "alpine"],
        "invalid value 'all' for --gpus; Kubernetes schedules GPUs by count and cannot ask for all "
        "of a node's GPUs; give a number like 1 (`kubectl describe node` shows how many a node "
        "has)",
    ),
    (
        ["--pull", "sometimes", "alpine"],
        "invalid value 'sometimes' for --pull; use always, missing or never",
    ),
    (["--mode", "deamon", "alpine"], "invalid value 'deamon' for --mode; use pod or job"),
    (
        ["--platform", "linux/", "alpine"],
        "invalid value 'linux/' for --platform; use OS[/ARCH[/VARIANT]], like linux/amd64 or "
        "linux/arm64/v8",
    ),
    (
        ["--toleration", "gpu", "alpine"],
        "invalid value 'gpu' for --toleration; use KEY[=VALUE]:EFFECT, like gpu=true:NoSchedule "
        "or dedicated:NoExecute; EFFECT is one of NoSchedule, PreferNoSchedule, NoExecute",
    ),
    (["-n", "Team_A", "alpine"], "invalid value 'Team_A' for --namespace; use lowercase letters"),
    (
        ["-l", "squarepeg.io/keep=true", "alpine"],
        "--label squarepeg.io/keep touches a label reserved for squarepeg; "
        "app.kubernetes.io/managed-by and squarepeg.io/* are set by squarepeg itself (use --keep "
        "or `cleanup: false` for squarepeg.io/keep); pick another label key",
    ),
    (
        ["--dry-run-server", "alpine"],
        "--dry-run and --dry-run-server cannot be used together; pass --dry-run to print the "
        "manifest locally, or --dry-run-server to have the apiserver validate it",
    ),
    (
        ["--keep", "--rm", "alpine"],
        "--rm and --keep contradict each other; leave out --rm (deleting is the default), or "
        "leave out --keep",
    ),
    (
        ["--", "-it"],
        "IMAGE '-it' starts with '-'; put squarepeg's flags before IMAGE and the container's "
        "command after it, like `kubectl squarepeg run --cpus 1 alpine ls -l`",
    ),
    (["--cpu", "0.5", "alpine"], "No such option '--cpu'."),
    ([], "Missing argument 'IMAGE'; see `kubectl squarepeg run --help`"),
    (
        ["-p", "8080:80/udp", "alpine"],
        "invalid value '8080:80/udp' for --publish; udp cannot be published: kubectl "
        "port-forward carries TCP only; leave out /udp",
    ),
    (
        ["--network", "host", "alpine"],
        "--network/--net cannot be used: every pod is on the cluster's network "
        "(--network host); leave it out; to change a pod's networking (e.g. hostNetwork), set it "
        "under `kubernetes.spec` in a config file",
    ),
    (
        ["-v", "/data:/data:z", "alpine"],
        "invalid value '/data:/data:z' for --volume; SELinux relabelling ('z') has no meaning "
        "here",
    ),
    (["-P", "alpine"], "-P/--publish-all cannot be used: the image's EXPOSE ports are not known"),
    (
        ["--mount", "type=npipe,src=/a,dst=/b", "alpine"],
        "invalid value 'type=npipe,src=/a,dst=/b' for --mount; type=npipe cannot be used",
    ),
    (
        ["--config", "nope.yaml", "alpine"],
        "config file nope.yaml does not exist (from --config); check the path, or leave out that "
        "--config",
    ),
]


@pytest.mark.parametrize(
    ("args", "message"), BAD_FLAGS, ids=[" ".join(a[:2]) for a, _ in BAD_FLAGS]
)
def test_bad_flags(sandbox: Sandbox, args: list[str], message: str) -> None:
    assert sandbox.dry(*args).one_error().startswith(message)


def test_a_typo_before_image_suggests_the_option(sandbox: Sandbox) -> None:
    error = sandbox.dry("--cpu", "0.5", "alpine").one_error()
    assert "Did you mean" in error and "'--cpus'" in error
    assert error.endswith("; see `kubectl squarepeg run --help`")


BAD_CONFIG = [
    (
        "x: !!python/object/apply:os.system [ls]\n",
        "the YAML tag !!python/object/apply:os.system is not allowed in a config file "
        "({path}:1); remove the tag",
    ),
    (
        "x: !!python/name:os.system ''\n",
        "the YAML tag !!python/name:os.system is not allowed in a config file ({path}:1)",
    ),
    ("cpu: 1\n", "unknown config key 'cpu' ({path}:1); did you mean 'cpus'?"),
    (
        "mode: job\nlabel:\n  team: a\n",
        "unknown config key 'label' ({path}:2); did you mean 'labels'?",
    ),
    (
        "cpus: 1\n  memory: 1g\n",
        "invalid YAML: mapping values are not allowed in this context ({path}:2); fix the syntax "
        "there (indentation, a missing ':' or an unclosed quote are the usual causes)",
    ),
    (
        "timeout: ${STARTUP_SECONDS}\n",
        "${{STARTUP_SECONDS}} is not set ({path}:1); set STARTUP_SECONDS, or give a default: "
        "${{STARTUP_SECONDS:-value}}",
    ),
    (
        "timeout: -5\n",
        "invalid value '-5' for timeout ({path}:1); a duration cannot be negative; give seconds "
        "like 300, or a duration like 90s, 5m or 1h30m",
    ),
    ("mode: deamon\n", "invalid value 'deamon' for mode ({path}:1); use pod or job"),
    ("memory: 12x\n", "invalid value '12x' for memory ({path}:1); give a size like 512m"),
    ("user: app\n", "invalid value 'app' for user ({path}:1); Kubernetes needs numeric IDs"),
    (
        "labels:\n  squarepeg.io/created-by: someone\n",
        "the label 'squarepeg.io/created-by' is reserved for squarepeg ({path}:2); "
        "app.kubernetes.io/managed-by and squarepeg.io/* are set by squarepeg itself",
    ),
    (
        "kubernetes:\n  spec: [a]\n",
        "kubernetes.spec must be a mapping ({path}:2); write it as the Pod's spec, like "
        "`spec: {{...}}`",
    ),
    (
        "kubernetes:\n  patches:\n  - {{op: add, path: /spec/nothing/here, value: 1}}\n",
        "kubernetes.patches[0] ({path}:3) cannot be applied: ",
    ),
    (
        "kubernetes:\n  patches:\n  - {{op: test, path: /kind, value: Job}}\n",
        "kubernetes.patches[0] ({path}:3) cannot be applied: ",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), BAD_CONFIG, ids=[t.split(":")[0] for t, _ in BAD_CONFIG]
)
def test_bad_config_files(sandbox: Sandbox, text: str, message: str) -> None:
    path = sandbox.write_trusted(
        "project/.squarepeg.yaml", text.replace("{{", "{").replace("}}", "}")
    )
    assert sandbox.dry("alpine").one_error().startswith(message.format(path=path))
    # The same file fails `config view` the same way (patches apply only to a manifest).
    if "patches" not in text:
        assert sandbox("config", "view").one_error().startswith(message.format(path=path))


def test_bad_squarepeg_config_path(sandbox: Sandbox) -> None:
    error = sandbox.dry("alpine", env={"SQUAREPEG_CONFIG": "/nonexistent/c.yaml"}).one_error()
    assert error == (
        "config file /nonexistent/c.yaml does not exist (from $SQUAREPEG_CONFIG); fix or unset "
        "SQUAREPEG_CONFIG"
    )


# --- what the commands import ----------------------------------------------------------------


def imported_modules(sandbox: Sandbox, *args: str) -> set[str]:
    assert SQUAREPEG is not None
    done = subprocess.run(
        [sys.executable, "-X", "importtime", SQUAREPEG, *args],
        cwd=sandbox.cwd,
        env=sandbox.env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.decode().splitlines()
    return {m[1] for line in lines if (m := re.match(r"import time:.*\|\s*(\S+)$", line))}


def test_help_and_version_load_only_click(sandbox: Sandbox) -> None:
    for args in (["--help"], ["--version"], ["run", "--help"]):
        ours = {m for m in imported_modules(sandbox, *args) if m.startswith("kubectl_squarepeg.")}
        assert ours <= {
            # the rooms' own __init__ modules hold only their docstrings
            "kubectl_squarepeg.cli",
            "kubectl_squarepeg.plan",
            "kubectl_squarepeg.terminal",
            "kubectl_squarepeg.cli.app",
            "kubectl_squarepeg.cli.runflags",  # the options' declarations, out of app.py
            "kubectl_squarepeg.terminal.console",
            "kubectl_squarepeg.plan.dockerflags",
            "kubectl_squarepeg.plan.flagrow",
            "kubectl_squarepeg.plan.flagtexts",
            "kubectl_squarepeg.errors",
        }
        assert not {"yaml", "sh", "jsonpatch"} & imported_modules(sandbox, *args)


def test_a_dry_run_that_asks_no_kubectl_never_imports_sh(sandbox: Sandbox) -> None:
    # With -n, a dry run needs no `kubectl config view`: no process, so no sh (a cached
    # view is tests/e2e/test_lazy_sh.py's).
    modules = imported_modules(sandbox, "run", "--dry-run", "-n", "team", "alpine")
    assert "sh" not in modules and "asyncio" not in modules
    assert "yaml" not in modules  # no config file: PyYAML is not needed either
    sandbox.write_trusted("project/.squarepeg.yaml", "cpus: 1\n")
    assert "sh" not in imported_modules(sandbox, "run", "--dry-run", "-n", "team", "alpine")


# --- docker's meanings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "image",
    [
        "localhost:5000/team/sub/app:v1",
        "ghcr.io/org/app@sha256:" + "a" * 64,
        "registry.example.com:5000/foo/bar:tag@sha256:" + "b" * 64,
    ],
)
def test_docker_image_references_pass(sandbox: Sandbox, image: str) -> None:
    assert sandbox.dry(image).container["image"] == image


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("Alpine", "invalid IMAGE 'Alpine'; docker calls this an invalid reference format: the "
         "repository name (Alpine) must be lowercase; use alpine"),
        ("alpine:", "invalid IMAGE 'alpine:'; docker calls this an invalid reference format; "
         "docker's form is [REGISTRY[:PORT]/]REPOSITORY[:TAG][@DIGEST]"),
        ("alpine@sha256:abc", "invalid IMAGE 'alpine@sha256:abc'; docker calls this an invalid "
         "reference format: a digest is ALGORITHM:HEX"),
    ],
)  # fmt: skip
def test_docker_invalid_image_references_exit_125(
    sandbox: Sandbox, image: str, message: str
) -> None:
    assert sandbox.dry(image).one_error().startswith(message)


def test_zero_sizes_round_to_nothing_and_zero_limits_clear_config(sandbox: Sandbox) -> None:
    assert (
        sandbox.dry("--shm-size", "0.1b", "alpine")
        .one_error()
        .startswith("invalid value '0.1b' for --shm-size; 0.1b is less than one byte")
    )
    sandbox.write("xdg/squarepeg/config.yaml", "memory: 1g\ncpus: 2\n")
    assert sandbox.dry("alpine").container["resources"]["limits"] == {"cpu": 2, "memory": "1Gi"}
    assert "resources" not in sandbox.dry("-m", "0", "--cpus", "0", "alpine").container
    assert sandbox.dry("-m", "0", "alpine").container["resources"]["limits"] == {"cpu": 2}


def test_dockers_documented_tmpfs_example_works_with_one_warning(sandbox: Sandbox) -> None:
    result = sandbox.dry("--tmpfs", "/run:rw,noexec,nosuid,size=65536k", "alpine")
    assert result.container["volumeMounts"] == [{"name": "tmpfs-1", "mountPath": "/run"}]
    assert result.doc["spec"]["volumes"][0]["emptyDir"] == {
        "medium": "Memory",
        "sizeLimit": "65536Ki",
    }
    assert result.lines == [
        "squarepeg: warning: --tmpfs /run: noexec, nosuid cannot be set on a Kubernetes "
        "emptyDir and are ignored (it is mounted with the container runtime's defaults)"
    ]


# docker's reference (container_run.md) examples that use only flags squarepeg supports.
DOCKERS_EXAMPLES = [
    "-w /path/to/dir/ ubuntu pwd",
    "--pull=never hello-world",
    "-l my-label --label com.example.foo=bar ubuntu bash",
    "--env VAR1=value1 --env VAR2=value2 ubuntu env",
    "--add-host=my-hostname=8.8.8.8 --rm alpine",
    "--add-host my-hostname=[2001:db8::33] --rm alpine",
    "--add-host=my-hostname:8.8.8.8 --rm alpine",
    "--sysctl net.ipv4.ip_forward=1 someimage",
    "-t -i --privileged ubuntu bash",
]


@pytest.mark.parametrize("example", DOCKERS_EXAMPLES)
def test_dockers_documented_examples_work(sandbox: Sandbox, example: str) -> None:
    result = sandbox.dry(*example.split())
    assert result.code == 0 and result.doc["kind"] == "Pod", result.stderr
    assert not [line for line in result.lines if not line.startswith("squarepeg: warning: -t ")]


@pytest.mark.parametrize("platform", ["linux/arm64/v8", "linux/aarch64", "arm64"])
def test_platform_takes_dockers_variant_form(sandbox: Sandbox, platform: str) -> None:
    assert sandbox.dry("--platform", platform, "alpine").doc["spec"]["nodeSelector"] == {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64",
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--platform", "linux/arm64", "--node-selector", "kubernetes.io/arch=amd64"],
         "--platform and --node-selector kubernetes.io/arch=... both set the node selector "
         "kubernetes.io/arch; give one of them"),
        (["--shm-size", "1g", "--tmpfs", "/dev/shm/"],
         "--shm-size and a tmpfs at /dev/shm both mount /dev/shm"),
        (["--tmpfs", "/run", "--tmpfs", "//run:size=1m"], "--tmpfs /run is given twice"),
        (["-u", "2147483648"], "invalid value '2147483648' for --user; Kubernetes stores user and "
         "group IDs up to 2147483647"),
        (["--stop-timeout", "9223372036854775808"],
         "invalid value '9223372036854775808' for --stop-timeout; Kubernetes stores at most"),
    ],
)  # fmt: skip
def test_two_flags_for_one_field_and_unstorable_values_are_refused(
    sandbox: Sandbox, args: list[str], message: str
) -> None:
    assert sandbox.dry(*args, "alpine").one_error().startswith(message)


def test_entrypoint_empty_resets_and_dns_replaces_the_clusters(sandbox: Sandbox) -> None:
    result = sandbox.dry("--entrypoint", "", "--dns", "1.1.1.1", "alpine", "sh", "-c", "true")
    assert result.container["command"] == ["sh", "-c", "true"]
    assert "args" not in result.container
    assert result.doc["spec"]["dnsPolicy"] == "None"
