"""No traceback, ever: generated argv lists, config files, env files and kubeconfigs thrown
at `kubectl-squarepeg run --dry-run` and `config view`.

Every case must end with exit 0 (and a manifest) or exit 125 and exactly one
`squarepeg: error:` line, with every stderr line squarepeg's own, and no kubectl call but
`config view` (harness.check_outcome, Sandbox.cluster_calls). Most cases call the
executable's `main` in this process, a sample runs the installed executable as a process:
harness.py says why that is faithful and what the sample adds. Seeds are fixed in CI
(conftest.py, profile `ci`); the number of cases that ran is printed at the end of the
session. The hostile files built to exhaust time or memory are in test_hostile_files.py.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.property import strategies as gen
from tests.property.conftest import SCALE
from tests.property.harness import Outcome, Sandbox, check_outcome


def _expects_manifest(argv: list[str]) -> bool:
    return argv[:1] == ["run"] and "--help" not in argv


@settings(max_examples=400 * SCALE)
@given(argv=gen.run_argv())
def test_generated_run_command_lines(sandbox: Sandbox, argv: list[str]) -> None:
    sandbox.clean()
    check_outcome(sandbox.in_process(argv), expect_manifest=_expects_manifest(argv))


@settings(max_examples=200 * SCALE)
@given(argv=gen.any_argv())
def test_generated_command_lines_of_any_shape(sandbox: Sandbox, argv: list[str]) -> None:
    sandbox.clean()
    check_outcome(sandbox.in_process(argv), expect_manifest=False)


def _config_case(draw: st.DrawFn, sandbox: Sandbox) -> tuple[list[str], dict[str, str]]:
    """Writes a generated config file where one of the layers looks for it; the argv and
    environment of a run (or `config view`) that reads it."""
    data = draw(gen.config_text())
    env = draw(gen.INTERPOLATION_ENV)
    where = draw(st.sampled_from(["--config", "project", "environment"]))
    argv_tail: list[str] = []
    if where == "--config":
        sandbox.write({"c.yaml": data})
        argv_tail = ["--config", "c.yaml"]
    elif where == "project":
        sandbox.write({".squarepeg.yaml": data})
    else:
        sandbox.write({"c.yaml": data})
        env["SQUAREPEG_CONFIG"] = "c.yaml"
    if draw(st.integers(0, 3)) == 0:
        return ["config", "view", "--show-origin", *argv_tail], env
    return ["run", "--dry-run", "-n", "prop", *argv_tail, "alpine", "true"], env


@settings(max_examples=400 * SCALE)
@given(data=st.data())
def test_generated_config_files(sandbox: Sandbox, data: st.DataObject) -> None:
    sandbox.clean()
    argv, env = _config_case(data.draw, sandbox)
    check_outcome(sandbox.in_process(argv, env), expect_manifest=argv[0] == "run")


@settings(max_examples=200 * SCALE)
@given(data=st.data())
def test_generated_env_files(sandbox: Sandbox, data: st.DataObject) -> None:
    sandbox.clean()
    sandbox.write({"vars.env": data.draw(gen.env_file())})
    if data.draw(st.booleans()):
        sandbox.write({"c.yaml": "env_file: vars.env\n"})
        argv = ["run", "--dry-run", "-n", "prop", "--config", "c.yaml", "alpine"]
    else:
        argv = ["run", "--dry-run", "-n", "prop", "--env-file", "vars.env", "alpine"]
    env = data.draw(gen.INTERPOLATION_ENV)
    check_outcome(sandbox.in_process(argv, env))


@settings(max_examples=40 * SCALE)
@given(data=st.data())
def test_generated_kubeconfigs(sandbox: Sandbox, data: st.DataObject) -> None:
    """Without -n a dry run asks kubectl for the kubeconfig's namespace: each case starts
    the real `kubectl config view`, so there are fewer of them."""
    sandbox.clean()
    sandbox.write({"k.yaml": data.draw(gen.kubeconfig_text())})
    where: list[str] = data.draw(st.sampled_from([["--kubeconfig", "k.yaml"], []]))
    env = {} if where else {"KUBECONFIG": "k.yaml"}
    context = data.draw(st.sampled_from([[], [], ["--context", "prop"], ["--context", "dev"]]))
    argv = ["run", "--dry-run", *where, *context, "alpine"]
    check_outcome(sandbox.in_process(argv, env))


@st.composite
def _process_case(draw: st.DrawFn) -> tuple[list[str], dict[str, bytes], dict[str, str]]:
    kind = draw(st.integers(0, 2))
    if kind == 0:
        return draw(gen.run_argv()), {}, {}
    if kind == 1:
        files = {"c.yaml": draw(gen.config_text()), "vars.env": draw(gen.env_file())}
        return (["run", "--dry-run", "-n", "prop", "--config", "c.yaml", "--env-file",
                 "vars.env", "alpine"], files, draw(gen.INTERPOLATION_ENV))
    return draw(gen.any_argv()), {}, {}


@settings(max_examples=40 * SCALE)
@given(case=_process_case())
def test_a_sample_through_the_installed_executable(
        sandbox: Sandbox, case: tuple[list[str], dict[str, Any], dict[str, str]]) -> None:
    """The same generators, run as a user runs them: a process, real file descriptors, the
    interpreter's own argv decoding and exit."""
    argv, files, env = case
    sandbox.clean()
    sandbox.write(files)
    outcome: Outcome = sandbox.process(argv, env)
    check_outcome(outcome, expect_manifest=_expects_manifest(argv))
