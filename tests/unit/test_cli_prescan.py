"""The argv scan that starts the kubeconfig probe before click is imported (cli.prescan_run):
what it finds, and that its list of value-less options matches the real `run` options."""

from __future__ import annotations

from typing import Any

import click
import pytest

from kubectl_squarepeg import cli


def test_switches_are_exactly_the_flags_of_run() -> None:
    flags = {
        opt
        for param in cli.run.params
        if isinstance(param, click.Option) and param.is_flag
        for opt in param.opts
    }
    assert flags | {"--help"} == cli.RUN_SWITCHES


NOTHING = {
    "dry_run": False,
    "dry_run_server": False,
    "namespace": None,
    "context": None,
    "kubeconfig": None,
}


@pytest.mark.parametrize(
    ("args", "found"),
    [
        (["run", "alpine"], NOTHING),
        (
            ["run", "--dry-run", "-n", "team", "alpine"],
            {**NOTHING, "dry_run": True, "namespace": "team"},
        ),
        (["run", "--dry-run-server", "alpine"], {**NOTHING, "dry_run_server": True}),
        (
            ["run", "-nteam", "--context=c", "alpine"],
            {**NOTHING, "namespace": "team", "context": "c"},
        ),
        (
            ["run", "--kubeconfig", "k", "--cpus", "1", "-q", "alpine"],
            {**NOTHING, "kubeconfig": "k"},
        ),
        # Options stop at IMAGE; what follows is the container's.
        (["run", "alpine", "--context", "x", "-n", "y"], NOTHING),
        (["run", "--", "alpine", "--dry-run"], NOTHING),
        # A value that looks like an option is still the option's value.
        (["run", "--name", "--context", "alpine"], NOTHING),
    ],
)
def test_prescan_finds_the_probe_options_before_image(
    args: list[str], found: dict[str, Any]
) -> None:
    assert cli.prescan_run(args) == found


@pytest.mark.parametrize(
    "args", [[], ["config", "view"], ["--help"], ["sweep"], ["run", "-n", "x", "--help"]]
)
def test_prescan_ignores_everything_but_run(args: list[str]) -> None:
    assert cli.prescan_run(args) is None


def test_no_probe_unless_this_process_is_the_executable() -> None:
    # pytest's own argv: importing cli in a test must not start kubectl.
    assert cli._speculative_start(["/usr/bin/pytest", "run", "alpine"]) == (None, None)
    assert cli._speculative_start([]) == (None, None)
