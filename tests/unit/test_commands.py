"""commands.Commands builds every kubectl command squarepeg prints for a run's cluster: each
carries the run's --kubeconfig, --context and namespace. The source is searched for kubectl
commands written by hand in a message, which would not."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import kubectl_squarepeg
from kubectl_squarepeg.cluster import kubectl
from kubectl_squarepeg.cluster.commands import Commands
from kubectl_squarepeg.cluster.kubectl import Target
from kubectl_squarepeg.errors import ClusterError

TARGET = Target(kubeconfig="/my dir/config", context="prod", namespace="ci")


def test_a_printed_command_carries_the_runs_cluster_and_is_shell_quoted() -> None:
    commands = Commands(TARGET)
    assert commands.events("p") == (
        "kubectl get events --field-selector involvedObject.name=p "
        "'--kubeconfig=/my dir/config' --context=prod --namespace=ci"
    )
    assert commands.logs("Job", "j") == (
        "kubectl logs job/j -c main '--kubeconfig=/my dir/config' --context=prod --namespace=ci"
    )
    assert commands.kubectl("cluster-info", namespaced=False) == (
        "kubectl cluster-info '--kubeconfig=/my dir/config' --context=prod"
    )


def test_an_in_cluster_runs_commands_carry_only_the_namespace() -> None:
    # Its kubeconfig is a temporary file, gone once squarepeg exits (commands.py).
    commands = Commands(Target(kubeconfig="/tmp/squarepeg-sa/kc", namespace="build"),
                        in_cluster=True)
    assert commands.delete("Job", "j") == (
        "kubectl delete job j --cascade=background --namespace=build"
    )


# `kubectl ...` in backticks that are not a command for the run's cluster: squarepeg's own
# commands, client-only ones, and a path.
_NOT_ABOUT_A_CLUSTER = re.compile(
    r"`kubectl(?:[ -]squarepeg\b|_squarepeg/| version --client`| completion )"
)
# Bad-input messages and the docker flag table are written while the flags are parsed, before
# any cluster is chosen: they name kubectl's verbs as advice (with placeholders), not as
# commands for the run's cluster.
_PARSE_TIME_ADVICE = {
    "plan/dockerflags.py": {"`kubectl logs`", "`kubectl attach -i`", "`kubectl attach -it`"},
    "plan/flagtexts.py": {"`kubectl port-forward pod/NAME HOST_PORT:CONTAINER_PORT`"},
    "plan/quantities.py": {"`kubectl describe node`"},
}
_PACKAGE = Path(kubectl_squarepeg.__file__).parent
_MODULES = sorted(_PACKAGE.rglob("*.py"))
assert len(_MODULES) > 30, "the package's modules were not found"
_KNOWN_GAPS: dict[str, str] = {}  # module name: why it still writes one by hand


def _relative(module: Path) -> str:
    return module.relative_to(_PACKAGE).as_posix()


def _message_texts(module: Path) -> list[tuple[int, str]]:
    """The string literals of a module (f-strings' literal parts too), without docstrings."""
    tree = ast.parse(module.read_text())
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def _hand_written_commands(module: Path) -> list[str]:
    allowed = _PARSE_TIME_ADVICE.get(_relative(module), set())
    found = []
    for line, text in _message_texts(module):
        for match in re.finditer(r"`kubectl[^`]*`?", text):
            quoted = match.group(0)
            if not _NOT_ABOUT_A_CLUSTER.match(quoted) and quoted not in allowed:
                found.append(f"{_relative(module)}:{line}: {quoted}")
    return found


@pytest.mark.parametrize(
    "module",
    [
        pytest.param(module, id=_relative(module), marks=pytest.mark.xfail(
            strict=True, reason=_KNOWN_GAPS[_relative(module)])) if _relative(module) in _KNOWN_GAPS
        else pytest.param(module, id=_relative(module))
        for module in _MODULES
    ],
)
def test_no_message_writes_a_kubectl_command_for_the_cluster_by_hand(module: Path) -> None:
    assert _hand_written_commands(module) == []



class _SilentChild:
    """A kubectl child that never answers (collect() needs no more of one)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.argv_tail = ("version",)
        self.terminated = False

    def wait(self, timeout: float | None = None) -> int | None:
        return None

    def terminate(self) -> None:
        self.terminated = True


def test_a_kubectl_call_that_times_out_names_cluster_info_for_the_runs_cluster() -> None:
    child = _SilentChild(Target(context="far-away", kubeconfig="/home/me/kube config",
                                namespace="team"))
    with pytest.raises(ClusterError) as raised:
        kubectl.collect(child, timeout=0.01)  # type: ignore[arg-type]  # a stand-in
    assert child.terminated
    assert raised.value.hint == (
        "check that the cluster is reachable "
        "(`kubectl cluster-info '--kubeconfig=/home/me/kube config' --context=far-away`)"
    )


def test_impersonation_goes_on_every_command_in_cluster_too() -> None:
    target = Target(context="c", namespace="team").impersonating("alice", ("devs", "ops"))
    assert target.global_args() == ["--context=c", "--namespace=team", "--as=alice",
                                    "--as-group=devs", "--as-group=ops"]
    assert Commands(target, in_cluster=True).kubectl("get", "pods") == (
        "kubectl get pods --namespace=team --as=alice --as-group=devs --as-group=ops")
    assert target.as_whom() == ", as alice (groups devs, ops)"
    assert Target().as_whom() == ""


def test_a_denial_names_the_command_that_checks_it() -> None:
    commands = Commands(Target(context="c", namespace="team"))
    said = ('(Forbidden): pods "p" is forbidden: User "bob" cannot get resource "pods/log" '
            'in API group "" in the namespace "team"')
    assert commands.permission_check(said) == (
        "; `kubectl auth can-i get pods/log --context=c --namespace=team` checks that permission")
    assert commands.permission_check("connection refused") == ""
